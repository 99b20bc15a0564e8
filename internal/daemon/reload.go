package daemon

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/notifier"
	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/internal/server"
)

// loaded is a config read and checked, with every part built but nothing started.
type loaded struct {
	cfg     *config.Config // with the running values of the restart-only blocks
	pending []string       // the restart-only blocks whose values in the file are not in effect
	hash    string
	acts    map[string]actions.Action
	keys    map[string]*sealed.Keys
	sources *pendingSources
	sender  *notifier.Sender // nil: notifications unchanged
}

// close drops what was built and not taken.
func (l *loaded) close() {
	CloseActions(l.acts)
	l.sources.Close()
}

// load builds every part of cfg (read by Deps.Load or given to Reload; readErr: why it could
// not be read) as `trueup config check` does (every action instance), plus the decryption keys and the sources
// (built, not started): any error refuses the whole config. secrets are the new config's
// (as far as it was read), which reload scrubs every error line of, with every earlier one's.
func (rt *Daemon) load(cfg *config.Config, readErr error) (_ *loaded, secrets []string, _ error) {
	if cfg != nil {
		secrets = cfg.Secrets()
	}
	if readErr != nil {
		return nil, secrets, readErr
	}
	running := rt.cfg.Load()
	pending := config.RestartOnlyChanged(running, cfg)
	if err := refuseRestartOnly(pending); err != nil {
		return nil, secrets, err
	}
	// Before anything is built: nothing a reload builds may use a value not in effect. The
	// caller's config stays as given (KeepRestartOnly sets top-level fields only, so a shallow
	// copy takes them).
	c := *cfg
	cfg = &c
	config.KeepRestartOnly(cfg, running)
	cfg.ReadFiles(rt.reg.Files)
	var err error
	l := &loaded{cfg: cfg, pending: pending, hash: configHash(rt.deps.Path)}
	if l.acts, err = NewActions(cfg, rt.reg, rt.log, rt.dbURL, rt.srcs.ReadTree); err != nil {
		return nil, secrets, err // factories quote the config values they refuse: scrubbed by reload
	}
	secrets = secretsOf(cfg, l.acts)
	rt.warnContainment(l.acts)
	if l.keys, err = SourceKeys(cfg); err != nil {
		l.close()
		return nil, secrets, err
	}
	if l.sources, err = rt.srcs.Build(cfg, l.keys, l.acts); err != nil {
		l.close()
		return nil, secrets, err
	}
	return l, secrets, nil
}

// loop serves reload requests (Deps.Reloads, the API, Reload) until ctx ends. A request
// picked once ctx ended (select chooses at random among ready cases) is not served: the
// daemon is stopping.
func (rt *Daemon) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-rt.deps.Reloads:
			if ctx.Err() != nil {
				return
			}
			rt.log.Info("SIGHUP: reloading the config", "file", rt.deps.Path)
			rt.reload(rt.readFile())
		case req := <-rt.requests:
			if ctx.Err() != nil {
				req.reply <- shuttingDown()
				return
			}
			if req.cfg == nil {
				rt.log.Info("reload requested through the API: reloading the config", "file", rt.deps.Path)
				req.reply <- rt.reload(rt.readFile())
			} else {
				rt.log.Info("reloading the config")
				req.reply <- rt.reload(req.cfg, nil)
			}
		}
	}
}

// readFile is Deps.Load.
func (rt *Daemon) readFile() (*config.Config, error) {
	if rt.deps.Load == nil {
		return nil, errors.New("this daemon has no config file to read again")
	}
	return rt.deps.Load()
}

func shuttingDown() server.ReloadResult {
	return server.ReloadResult{At: time.Now(), Errors: []string{"shutting down: the config was not reloaded"}}
}

// request is server.Options.Reload: it reloads the file.
func (rt *Daemon) request(ctx context.Context) server.ReloadResult { return rt.ask(ctx, nil) }

// ask asks loop to reload cfg (nil: the file) and waits for the result, or until ctx ends
// (the reload then goes on: its result is logged and shown on the replicas row).
func (rt *Daemon) ask(ctx context.Context, cfg *config.Config) server.ReloadResult {
	started := rt.started.Load()
	if started == nil {
		return server.ReloadResult{At: time.Now(), Errors: []string{"the daemon has not started: the config was not reloaded"}}
	}
	dctx := *started
	reply := make(chan server.ReloadResult, 1) // loop never blocks on a requester gone
	select {
	case rt.requests <- reloadRequest{cfg: cfg, reply: reply}:
	case <-ctx.Done():
		return server.ReloadResult{At: time.Now(), Errors: []string{"the reload did not start: " + ctx.Err().Error()}}
	case <-dctx.Done():
		return shuttingDown()
	}
	select {
	case res := <-reply:
		return res
	case <-ctx.Done():
		return server.ReloadResult{At: time.Now(), Errors: []string{"no result yet (" + ctx.Err().Error() +
			"): the reload goes on; its result is logged and shown on this replica's row of GET /api/v1/replicas"}}
	}
}

// lastReload is server.Options.LastReload.
func (rt *Daemon) lastReload() (server.ReloadResult, bool) {
	if p := rt.last.Load(); p != nil {
		return *p, true
	}
	return server.ReloadResult{}, false
}

// reload applies what changed in cfg (readErr: why it could not be read), or refuses it whole.
func (rt *Daemon) reload(cfg *config.Config, readErr error) (res server.ReloadResult) {
	res = server.ReloadResult{At: time.Now()}
	defer func() {
		if started := rt.started.Load(); started != nil && (*started).Err() != nil && len(res.Errors) > 0 {
			// Stop began during the reload: what failed to start was stopped by it.
			res.Errors = append(res.Errors, "shutting down: the reload was interrupted")
		}
		rt.last.Store(&res)
		rt.met.ConfigLoaded(true, res.OK, res.At)
		rt.record(res)
	}()
	next, secrets, err := rt.load(cfg, readErr)
	// Every line that leaves (API, banner, log, the replicas row) is scrubbed of the secrets
	// of every config loaded so far and of this one's, refused or not.
	scrub := rt.redact.With(secrets)
	refuse := func(err error) server.ReloadResult {
		res.Errors = scrubLines(scrub, errorLines(err))
		rt.log.Error("config reload refused: the running config is kept", "file", rt.deps.Path, "errors", res.Errors)
		return res
	}
	if err != nil {
		return refuse(err)
	}
	old := rt.cfg.Load()
	ch := config.Diff(old, next.cfg)
	if ch.Notifications {
		if next.sender, err = newSender(rt.store, next.cfg, rt.replica, rt.liveHeld, rt.met, rt.log); err != nil {
			next.close()
			return refuse(err)
		}
	}
	res.OK, res.Hash = true, next.hash
	res.SourcesAdded, res.SourcesRemoved, res.SourcesChanged = ch.SourcesAdded, ch.SourcesRemoved, ch.SourcesChanged
	res.ActionsAdded, res.ActionsRemoved, res.ActionsChanged = ch.ActionsAdded, ch.ActionsRemoved, ch.ActionsChanged
	res.Notifications, res.RestartRequired = ch.Notifications, next.pending
	res.Warnings = scrubLines(scrub, moduleWarnings(next.cfg, next.acts))
	for _, w := range res.Warnings {
		rt.log.Warn("reload: " + w)
	}
	res.Errors = scrubLines(scrub, rt.apply(old, next, ch))
	if ch.References {
		rt.regrant()
	}
	if ch.Policies {
		// The changes the policies held (waiting, denied, rejected) are decided again.
		rt.requeue("policies changed", "the changes they held are decided again when they next run", func(ctx context.Context) (int64, error) {
			n, err := rt.store.RequeueGated(ctx)
			return int64(n), err
		})
	}
	if ch.Windows {
		// The changes the windows held are checked again against the windows in force.
		rt.requeue("change windows changed", "the changes they held run when the old windows let them (a hold with no known end waits for an override)", func(ctx context.Context) (int64, error) {
			n, err := rt.store.RequeueWindowed(ctx)
			return int64(n), err
		})
	}
	if len(res.Errors) > 0 {
		// Applied, except what Errors names: not a success, not a refusal either.
		res.OK, res.Partial = false, true
		rt.log.Error("config reload applied in part", "file", rt.deps.Path, "errors", res.Errors)
	}
	rt.hash = next.hash
	for _, b := range next.pending {
		rt.log.Warn(b+" changed: takes effect at the next restart (the running values stay in use)", "block", b)
	}
	rt.log.Info("config reloaded", "hash", next.hash, "sources_added", ch.SourcesAdded, "sources_removed", ch.SourcesRemoved,
		"sources_changed", ch.SourcesChanged, "actions_added", ch.ActionsAdded, "actions_removed", ch.ActionsRemoved,
		"actions_changed", ch.ActionsChanged, "notifications", ch.Notifications, "restart_required", next.pending)
	return res
}

// regrant applies changed reference grants to what was judged by the old ones: each running
// source tries its rejected head again, and every resource with a dependency in another
// namespace runs again (a removed grant stalls it, an added one frees it).
func (rt *Daemon) regrant() {
	for _, rs := range rt.sources() {
		rs.syncer.Reconsider()
	}
	rt.requeue("reference grants changed", "resources with cross-namespace dependencies run at their next resync", rt.store.RequeueCrossNamespace)
}

// requeue makes the resources that what changed decides over due now (fn); when it fails,
// the log says when they run instead (fallback).
func (rt *Daemon) requeue(what, fallback string, fn func(context.Context) (int64, error)) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(rt.ctx), 15*time.Second)
	defer cancel()
	n, err := fn(ctx)
	if err != nil {
		rt.log.Warn("reload: "+what+"; "+fallback, "err", err)
		return
	}
	rt.log.Info("reload: "+what, "resources_requeued", n)
}

// apply makes next the running config in place of old; ch is what changed. It returns what
// failed to start: a changed source whose new copy failed runs its previous copy again, an
// added one is left out until the next reload or restart.
func (rt *Daemon) apply(old *config.Config, next *loaded, ch config.Changes) []string {
	// The secrets first: the new instances and sources may log theirs from now on; the old
	// ones stay (a call started before the reload may still quote its instance's).
	rt.redact.Add(secretsOf(next.cfg, next.acts)...)
	failed := rt.srcs.Swap(old, next.sources, ch, func() {
		keep := map[string]bool{}
		for _, a := range next.cfg.Actions {
			keep[a.Name] = !slices.Contains(ch.ActionsAdded, a.Name) && !slices.Contains(ch.ActionsChanged, a.Name)
		}
		rt.acts.Replace(next.acts, keep)
		next.acts = nil
		rt.cfg.Store(next.cfg)
	})
	next.sources = nil
	if next.sender != nil {
		rt.sender.Stop()
		if err := next.sender.Start(rt.ctx); err != nil {
			failed = append(failed, "notifications: "+err.Error())
		}
		rt.sender = next.sender
	}
	return failed
}
