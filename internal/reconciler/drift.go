package reconciler

import (
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/drift"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
)

// msgDriftIgnored starts the history message of a resync whose drift is only in fields the
// type's drift.ignore leaves out.
const msgDriftIgnored = "drift only in ignored fields: "

// maxDriftMessage bounds what drifted as Drifted's message, history and events tell it.
const maxDriftMessage = 4 << 10

// observedDrift decides what drift Observe reported (o, not in sync) comes to under the type's
// drift policy, for the call of spec: every path ignored is in sync (a.inSync, a.ignored);
// detect and notify leave it in place (a.leave: nothing is applied, it returns true);
// remediate (the default) corrects it as before. a.drift says what drifted: the paths not
// ignored, or what the action said. scrub removes the secrets the stored message must not
// hold (the call's, those it took from other namespaces, the controller's) from the values
// before drift.Judge cuts them: a secret is matched only whole.
func observedDrift(o actions.Observation, spec []byte, scrub func(string) string, a *attempt) (leave bool) {
	p := a.driftPolicy
	var ignore []string
	if p != nil {
		ignore = p.Ignore
	}
	j := drift.Judge(o, spec, ignore, scrub)
	switch {
	case j.Ignored:
		a.inSync, a.ignored, a.drift = true, true, j.Message
		return false
	case p != nil && (p.Mode == manifest.DriftDetect || p.Mode == manifest.DriftNotify):
		a.leave, a.drift = true, j.Message
		return true
	}
	// Remediate: the action's message says what it corrects, else the paths.
	a.drift = o.Message
	if a.drift == "" {
		a.drift = j.Message
	}
	return false
}

// driftLeft is the write of a resync whose drift the type's drift mode leaves in place: a
// history row Drifted, Drifted=True, an Event DriftDetected when it appears or changes (and,
// under notify, the Drifted notification), phase and Ready as they were, the next resync
// scheduled.
func (r *Reconciler) driftLeft(c store.Claimed, a attempt, cur store.Current, u store.Update, prev status.State,
	ev func(typ, reason, m string) store.Event, now time.Time) store.Update {
	mode := a.driftPolicy.Mode
	// Scrubbed whole, then cut: the action's own message is not bounded as the paths are.
	msg := "drift detected, not corrected (drift mode " + mode + "): " + clip.Storable(r.scrub(a.drift), maxDriftMessage)
	u.History.Result, u.History.Message = resultDrifted, msg
	st, changed := status.DriftLeft(prev, c.Generation, cur.Generation, cur.Deleting, msg, now)
	u.Phase, u.Conditions, u.ObservedGeneration = st.Phase, st.Conditions, st.ObservedGeneration
	u.Message = msg
	u.KeepActionState = true
	u.RunAt = r.resyncAt(c, now)
	if changed {
		u.Events = append(u.Events, ev(store.EventWarning, status.ReasonDriftDetected, msg))
		u.Drifted = mode == manifest.DriftNotify
	}
	if cur.Generation != c.Generation || cur.Deleting {
		// A change or a deletion arrived meanwhile: it runs at once.
		u.RunAt = ptr(now)
	}
	return u
}

// quiet reports whether the write of a leaves the changes feed alone: a resync that found
// nothing to do and changed nothing that shows.
func (a *attempt) quiet(c store.Claimed) bool {
	return a.inSync && !a.waited() && !a.ignored && !status.IsDrifted(c.Conditions) && !a.window.wasHeld
}
