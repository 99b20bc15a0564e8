package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/internal/auth"
	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/policy"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// Operator commands (issue 11 §3): reconcile now, sync now, suspend and resume. They are the
// only writes of the API and need auth.Operate in the namespaces they touch. A caller who
// cannot see a namespace gets the same 404 as for a name that does not exist; one who sees it
// but may not operate there gets 403.

func (s *Server) operatorRoutes(m *http.ServeMux) {
	m.HandleFunc("POST /api/v1/resources/{namespace}/{kind}/{name}/reconcile", s.reconcileResource)
	m.HandleFunc("POST /api/v1/resources/{namespace}/{kind}/{name}/suspend", s.suspendResource(true))
	m.HandleFunc("POST /api/v1/resources/{namespace}/{kind}/{name}/resume", s.suspendResource(false))
	m.HandleFunc("POST /api/v1/resources/{namespace}/{kind}/{name}/abandon", s.abandonResource)
	m.HandleFunc("POST /api/v1/resources/suspend", s.suspendSelected(true))
	m.HandleFunc("POST /api/v1/resources/resume", s.suspendSelected(false))
	m.HandleFunc("POST /api/v1/sources/{name}/sync", s.syncSource)
	m.HandleFunc("POST /api/v1/sources/{name}/suspend", s.suspendSource(true))
	m.HandleFunc("POST /api/v1/sources/{name}/resume", s.suspendSource(false))
	s.pinRoutes(m)
}

func refs(rs []store.ResourceRef) []wire.ResourceRef {
	out := make([]wire.ResourceRef, len(rs))
	for i, r := range rs {
		out[i] = wire.ResourceRef{Namespace: r.Namespace, Kind: r.Kind, Name: r.Name}
	}
	return out
}

// maxReason bounds the reason of a command, stored in a condition and an event.
const maxReason = 1024

// reasonBody is the optional JSON body of a command.
type reasonBody struct {
	Reason string `json:"reason"`
}

// pinBody is the JSON body of a pin.
type pinBody struct {
	Revision string `json:"revision"`
	reasonBody
}

// commandBody reads the optional JSON body of a command: {"reason": "..."}, and
// {"revision": "...", "reason": "..."} when revision is true. The revision is trimmed; the
// reason is trimmed, scrubbed of the config's secrets whole, then cut to a storable length (an
// operator may paste an error that quotes a secret, and the reason is kept in events).
func (s *Server) commandBody(r *http.Request, revision bool) (pinBody, error) {
	var body pinBody
	var into any = &body.reasonBody
	usage := `{"reason": "..."}`
	if revision {
		into, usage = &body, `{"revision": "...", "reason": "..."}`
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		return pinBody{}, err
	}
	if len(strings.TrimSpace(string(b))) > 0 {
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(into); err != nil {
			return pinBody{}, errors.New("the body must be JSON " + usage + ": " + err.Error())
		}
	}
	body.Revision = strings.TrimSpace(body.Revision)
	body.Reason = s.boundReason(body.Reason)
	return body, nil
}

// boundReason is an operator's reason as it is stored: trimmed, scrubbed whole, then cut.
func (s *Server) boundReason(reason string) string {
	return clip.Storable(s.opts.Redact.Scrub(strings.TrimSpace(reason)), maxReason)
}

// Access decisions of operator commands.
type access int

const (
	accessAllowed   access = iota
	accessHidden           // the caller may not see it: answer as if it did not exist (404)
	accessForbidden        // the caller sees it but may not act on it (403)
)

// namespaceAccess decides a command on something in namespace ns.
func namespaceAccess(id auth.Identity, ns string) access {
	switch {
	case !id.Sees(ns):
		return accessHidden
	case !id.Can(auth.Operate, ns):
		return accessForbidden
	}
	return accessAllowed
}

// sourceAccess decides a command on a source whose resources are in namespaces nss. A source
// is visible to whoever sees one of those namespaces (a source without resources only to
// callers who see every namespace); acting on it needs operator rights in every one of them
// (over every namespace for a source without resources), since a sync or a suspension
// touches them all.
func sourceAccess(id auth.Identity, nss []string) access {
	if !id.AllVisible() && !slices.ContainsFunc(nss, id.Sees) {
		return accessHidden
	}
	if len(nss) == 0 {
		if id.AllVisible() && id.Can(auth.Operate, auth.AllNamespaces) {
			return accessAllowed
		}
		return accessForbidden
	}
	for _, ns := range nss {
		if !id.Can(auth.Operate, ns) {
			return accessForbidden
		}
	}
	return accessAllowed
}

// mayOperate answers 404 or 403 and returns false unless the caller may operate in ns.
func mayOperate(w http.ResponseWriter, r *http.Request, ns, what string) bool {
	switch namespaceAccess(identity(r), ns) {
	case accessHidden:
		writeError(w, http.StatusNotFound, what+": "+store.ErrNotFound.Error())
		return false
	case accessForbidden:
		writeError(w, http.StatusForbidden, "the operator role is needed in namespace "+ns)
		return false
	}
	return true
}

// resourceCommand reads the resource of a command on /resources/{namespace}/{kind}/{name} and
// its optional reason; it answers 404, 403 or 400 and returns ok false unless the caller may
// operate in the namespace and the body decodes.
func (s *Server) resourceCommand(w http.ResponseWriter, r *http.Request) (ns, kind, name, reason string, ok bool) {
	ns, kind, name = r.PathValue("namespace"), r.PathValue("kind"), r.PathValue("name")
	if !mayOperate(w, r, ns, "resource "+ns+"/"+kind+"/"+name) {
		return "", "", "", "", false
	}
	body, err := s.commandBody(r, false)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return "", "", "", "", false
	}
	return ns, kind, name, body.Reason, true
}

func (s *Server) reconcileResource(w http.ResponseWriter, r *http.Request) {
	ns, kind, name := r.PathValue("namespace"), r.PathValue("kind"), r.PathValue("name")
	if !mayOperate(w, r, ns, "resource "+ns+"/"+kind+"/"+name) {
		return
	}
	body, err := s.reconcileBody(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	actor := identity(r).Actor()
	at := time.Now().UTC()
	var ref store.ResourceRef
	if body.OverrideWindow {
		msg, werr := s.windowRefusesOperators(r, ns, kind, name, at)
		if s.fail(w, werr) {
			return
		}
		if msg != "" {
			writeError(w, http.StatusConflict, msg)
			return
		}
		ref, err = s.store.RequestReconcileOverride(r.Context(), ns, kind, name, actor, body.Reason)
	} else {
		ref, err = s.store.RequestReconcile(r.Context(), ns, kind, name, actor)
	}
	if errors.Is(err, store.ErrSuspended) {
		writeError(w, http.StatusConflict, err.Error())
		return
	}
	if s.fail(w, err) {
		return
	}
	s.log.Info("reconcile requested", "resource", ns+"/"+ref.Kind+"/"+name, "actor", actor, "overrideWindow", body.OverrideWindow)
	writeJSON(w, http.StatusAccepted, wire.Command{Action: "reconcile", Actor: actor, RequestedAt: at,
		Resources: refs([]store.ResourceRef{ref}), OverrideWindow: body.OverrideWindow, Reason: body.Reason})
}

// reconcileRequest is the optional body of a reconcile command.
type reconcileRequest struct {
	OverrideWindow bool   `json:"overrideWindow"`
	Reason         string `json:"reason"`
}

// reconcileBody reads the optional body {"overrideWindow": true, "reason": "..."} of a
// reconcile; a reason is required with overrideWindow. The reason is as stored (boundReason).
func (s *Server) reconcileBody(r *http.Request) (reconcileRequest, error) {
	var body reconcileRequest
	b, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil || len(strings.TrimSpace(string(b))) == 0 {
		return body, err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return body, errors.New("the body must be JSON {\"overrideWindow\": true, \"reason\": \"...\"}: " + err.Error())
	}
	body.Reason = s.boundReason(body.Reason)
	if body.OverrideWindow && body.Reason == "" {
		return body, errors.New("reason is required with overrideWindow")
	}
	return body, nil
}

// windowRefusesOperators checks the change windows in force for the resource at now: msg
// names a window holding it that does not allow operators to override it ("": none does).
func (s *Server) windowRefusesOperators(r *http.Request, ns, kind, name string, now time.Time) (msg string, err error) {
	set := s.windows()
	if set.Len() == 0 {
		return "", nil
	}
	// From the primary, as the command's write: the standby may not show a label change yet.
	res, err := s.store.Primary().GetResource(r.Context(), ns, kind, name)
	if err != nil {
		return "", err
	}
	if v := set.Check(windowResource(res), now); v.Closed && !v.AllowOperators {
		return "change window " + v.Window + " does not allow operators to override it", nil
	}
	return "", nil
}

// windowResource is what the change windows select a resource by.
func windowResource(res store.Resource) *policy.Resource {
	return &policy.Resource{Source: res.Source.Name, APIVersion: res.APIVersion, Kind: res.Kind, Namespace: res.Metadata.Namespace,
		Name: res.Metadata.Name, Labels: res.Metadata.Labels, Annotations: res.Metadata.Annotations}
}

// abandonResource forgets a resource whose manifest was removed without calling its action
// (store.Abandon). A reason is required: it is the audit trail of a resource that left
// trueup without its action's say.
func (s *Server) abandonResource(w http.ResponseWriter, r *http.Request) {
	ns, kind, name, reason, ok := s.resourceCommand(w, r)
	if !ok {
		return
	}
	if reason == "" {
		writeError(w, http.StatusBadRequest, "a reason is required: {\"reason\": \"...\"}")
		return
	}
	actor := identity(r).Actor()
	at := time.Now().UTC()
	ref, err := s.store.Abandon(r.Context(), store.AbandonParams{Namespace: ns, Kind: kind, Name: name, Actor: actor, Reason: reason})
	if errors.Is(err, store.ErrNotRemoved) {
		writeError(w, http.StatusConflict, err.Error())
		return
	}
	if s.fail(w, err) {
		return
	}
	s.log.Warn("resource abandoned", "resource", ns+"/"+ref.Kind+"/"+name, "actor", actor)
	writeJSON(w, http.StatusOK, wire.Command{Action: "abandon", Actor: actor, RequestedAt: at, Source: ref.Source,
		Resources: refs([]store.ResourceRef{ref})})
}

func action(suspend bool) string {
	if suspend {
		return "suspend"
	}
	return "resume"
}

func done(suspend bool) string {
	if suspend {
		return "suspended"
	}
	return "resumed"
}

func (s *Server) suspendResource(suspend bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ns, kind, name, reason, ok := s.resourceCommand(w, r)
		if !ok {
			return
		}
		actor := identity(r).Actor()
		at := time.Now().UTC()
		rs, err := s.store.SetSuspended(r.Context(), store.SuspendParams{Namespace: ns, Kind: kind, Name: name, Suspend: suspend,
			Actor: actor, Reason: reason})
		if s.fail(w, err) {
			return
		}
		s.log.Info("resource "+done(suspend), "resource", ns+"/"+kind+"/"+name, "actor", actor)
		writeJSON(w, http.StatusOK, wire.Command{Action: action(suspend), Actor: actor, RequestedAt: at, Resources: refs(rs)})
	}
}

// suspendSelected suspends or resumes the resources matching ?selector=, in ?namespace= or
// else in every namespace the caller may operate in.
func (s *Server) suspendSelected(suspend bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		sel := strings.TrimSpace(q.Get("selector"))
		if sel == "" {
			writeError(w, http.StatusBadRequest, "a label selector is required: ?selector=app=web")
			return
		}
		id := identity(r)
		var namespaces []string
		switch ns := q.Get("namespace"); {
		case ns != "":
			if !mayOperate(w, r, ns, "namespace "+ns) {
				return
			}
			namespaces = []string{ns}
		case !id.Can(auth.Operate, ""):
			writeError(w, http.StatusForbidden, "the operator role is needed")
			return
		case !id.AllVisible():
			namespaces = slices.Clone(id.Namespaces)
		}
		body, err := s.commandBody(r, false)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		reason := body.Reason
		actor := id.Actor()
		at := time.Now().UTC()
		rs, err := s.store.SetSuspended(r.Context(), store.SuspendParams{Selector: sel, Namespaces: namespaces, Suspend: suspend,
			Actor: actor, Reason: reason})
		if s.fail(w, err) {
			return
		}
		s.log.Info("resources "+done(suspend), "selector", sel, "count", len(rs), "actor", actor)
		writeJSON(w, http.StatusOK, wire.Command{Action: action(suspend), Actor: actor, RequestedAt: at, Resources: refs(rs)})
	}
}

// maySourceOperate answers 404 or 403 (sourceAccess) and returns false unless the caller
// may act on source name.
func (s *Server) maySourceOperate(w http.ResponseWriter, r *http.Request, name string) bool {
	nss, err := s.store.SourceNamespaces(r.Context(), name)
	if s.fail(w, err) {
		return false
	}
	switch sourceAccess(identity(r), nss) {
	case accessHidden:
		writeError(w, http.StatusNotFound, "source "+name+": "+store.ErrNotFound.Error())
		return false
	case accessForbidden:
		writeError(w, http.StatusForbidden, "the operator role is needed in every namespace of source "+name)
		return false
	}
	return true
}

func (s *Server) syncSource(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if !s.maySourceOperate(w, r, name) {
		return
	}
	actor := identity(r).Actor()
	at := time.Now().UTC()
	// The holder of the source's lease syncs, whichever replica this is: the request goes
	// through NOTIFY as a webhook received by a non-holder does.
	if s.fail(w, s.store.RequestSync(r.Context(), name, actor)) {
		return
	}
	s.log.Info("sync requested", "source", name, "actor", actor)
	writeJSON(w, http.StatusAccepted, wire.Command{Action: "sync", Actor: actor, RequestedAt: at, Source: name, Resources: []wire.ResourceRef{}})
}

func (s *Server) suspendSource(suspend bool) http.HandlerFunc {
	return s.sourceCommand(action(suspend), done(suspend), func(ctx context.Context, name, actor, reason string) error {
		return s.store.SetSourceSuspended(ctx, name, suspend, actor, reason)
	})
}

// sourceCommand answers a command on source {name} with an optional reason (the caller needs
// operator rights in every namespace of the source): run does it, as actor.
func (s *Server) sourceCommand(act, did string, run func(ctx context.Context, name, actor, reason string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if !s.maySourceOperate(w, r, name) {
			return
		}
		body, err := s.commandBody(r, false)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		reason := body.Reason
		actor := identity(r).Actor()
		at := time.Now().UTC()
		err = run(r.Context(), name, actor, reason)
		if errors.Is(err, store.ErrNotPinned) {
			writeError(w, http.StatusConflict, err.Error())
			return
		}
		if s.fail(w, err) {
			return
		}
		s.log.Info("source "+did, "source", name, "actor", actor)
		writeJSON(w, http.StatusOK, wire.Command{Action: act, Actor: actor, RequestedAt: at, Source: name, Resources: []wire.ResourceRef{}})
	}
}
