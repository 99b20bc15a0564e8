package server

import (
	"context"
	"net/http"
	"time"
)

// ReloadResult is what a config reload of this replica did, as the runtime reports it
// (Options.Reload and Options.LastReload).
type ReloadResult struct {
	At time.Time
	// OK: the new config was applied; otherwise it was refused (Errors) and the config
	// running before keeps running.
	OK bool
	// Hash identifies the config file read (sha256 of its bytes, shortened).
	Hash                                         string
	SourcesAdded, SourcesRemoved, SourcesChanged []string
	ActionsAdded, ActionsRemoved, ActionsChanged []string
	// Notifications: the notification rules and providers were replaced.
	Notifications bool
	// RestartRequired are the config blocks that changed but take effect at the next restart.
	RestartRequired []string
	// Errors are why the config was refused, or what failed while applying it (a source
	// that could not start), scrubbed of secrets.
	Errors []string
}

type nameChanges struct {
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	Changed []string `json:"changed"`
}

// reloadView is the answer of POST /api/v1/admin/reload.
type reloadView struct {
	OK              bool        `json:"ok"`
	At              time.Time   `json:"at"`
	Hash            string      `json:"hash,omitempty"`
	Sources         nameChanges `json:"sources"`
	Actions         nameChanges `json:"actions"`
	Notifications   bool        `json:"notifications"`
	RestartRequired []string    `json:"restartRequired"`
	Errors          []string    `json:"errors"`
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func makeReloadView(r ReloadResult) reloadView {
	return reloadView{OK: r.OK, At: r.At, Hash: r.Hash,
		Sources:       nameChanges{Added: orEmpty(r.SourcesAdded), Removed: orEmpty(r.SourcesRemoved), Changed: orEmpty(r.SourcesChanged)},
		Actions:       nameChanges{Added: orEmpty(r.ActionsAdded), Removed: orEmpty(r.ActionsRemoved), Changed: orEmpty(r.ActionsChanged)},
		Notifications: r.Notifications, RestartRequired: orEmpty(r.RestartRequired), Errors: orEmpty(r.Errors)}
}

// reload answers POST /api/v1/admin/reload: this replica reads its config file again (as
// SIGHUP does). 200 applied, 422 refused (the running config kept), 404 when this server
// runs without a reloadable config.
func (s *Server) reload(w http.ResponseWriter, r *http.Request) {
	if s.opts.Reload == nil {
		writeError(w, http.StatusNotFound, "this server has no config to reload")
		return
	}
	// The reload outlives a client that hangs up: it is applied whole or not at all.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 2*time.Minute)
	defer cancel()
	res := s.opts.Reload(ctx)
	code := http.StatusOK
	if !res.OK {
		code = http.StatusUnprocessableEntity
	}
	writeJSON(w, code, makeReloadView(res))
}

// configRefused is the overview's banner: the last reload of this replica's config was
// refused (nil: it was not, or there was none).
func (s *Server) configRefused() *ReloadResult {
	if s.opts.LastReload == nil {
		return nil
	}
	res, ok := s.opts.LastReload()
	if !ok || res.OK {
		return nil
	}
	return &res
}
