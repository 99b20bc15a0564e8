package server

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/why"
	"github.com/trueup-dev/trueup/internal/wire"
)

// maxTimeline bounds the entries of a timeline.
const maxTimeline = 1000

// resourceTimeline answers trueup why: the blocking reasons, decided live from the row and
// the windows in force, and the timeline.
func (s *Server) resourceTimeline(w http.ResponseWriter, r *http.Request) {
	limit, ok := limitParam(w, r, maxTimeline)
	if !ok {
		return
	}
	ns, kind, name := r.PathValue("namespace"), r.PathValue("kind"), r.PathValue("name")
	tl, err := s.store.Timeline(r.Context(), scope(r), ns, kind, name, limit)
	if s.fail(w, err) {
		return
	}
	writeJSON(w, http.StatusOK, timelineWire(tl, s.blocking(tl, time.Now())))
}

// limitParam reads the optional query parameter limit, a number from 1 to most (0 when it is
// absent); another value is answered with 400 and ok false.
func limitParam(w http.ResponseWriter, r *http.Request, most int) (limit int, ok bool) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 0, true
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 1 && n <= most {
		return n, true
	}
	writeError(w, http.StatusBadRequest, fmt.Sprintf("limit must be a number from 1 to %d", most))
	return 0, false
}

// blocking decides what holds the resource of tl back at now.
func (s *Server) blocking(tl *store.Timeline, now time.Time) []why.Blocker {
	set := s.windows()
	res := tl.Resource
	in := why.Input{Now: now, Suspended: tl.Suspended, Conditions: res.Status.Conditions, RunAt: tl.RunAt, Attempt: tl.Attempt,
		Window: set.Check(windowResource(res), now), Source: res.Source.Name, SourceSuspended: tl.SourceSuspended}
	for _, d := range tl.Dependencies {
		dep := why.Dep{Name: d.Resource.Namespace + "/" + d.Resource.Kind + "/" + d.Resource.Name, Hidden: d.Hidden}
		if !d.Hidden { // the windows are not asked about what the reader may not see
			dep.Exists, dep.Phase, dep.Window = d.Exists, d.Phase, set.Check(&d.Resource, now)
		}
		in.Dependencies = append(in.Dependencies, dep)
	}
	if p := tl.Pin; p != nil {
		in.Pin = &why.Pin{Revision: p.Revision, Actor: p.Actor, Reason: p.Reason, At: p.At}
	}
	return why.Blocking(in)
}

func timelineWire(tl *store.Timeline, blocking []why.Blocker) wire.Timeline {
	res := tl.Resource
	out := wire.Timeline{Resource: wire.ResourceRef{Namespace: res.Metadata.Namespace, Kind: res.Kind, Name: res.Metadata.Name},
		Phase: res.Status.Phase, Blocking: []wire.Blocker{}, Entries: make([]wire.TimelineEntry, len(tl.Entries))}
	opt := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	for _, b := range blocking {
		out.Blocking = append(out.Blocking, wire.Blocker{Reason: b.Reason, Message: b.Message, Since: opt(b.Since), Until: opt(b.Until)})
	}
	for i, e := range tl.Entries {
		out.Entries[i] = wire.TimelineEntry(e)
	}
	return out
}
