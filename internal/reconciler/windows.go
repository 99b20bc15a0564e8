package reconciler

import (
	"fmt"
	"time"

	"github.com/trueup-dev/trueup/internal/changewindow"
	"github.com/trueup-dev/trueup/internal/policy"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
)

// The change windows (internal/changewindow): a change of a resource a window holds — the
// triggers the gate of policies decides (gatedTrigger) — is not called, before the gate and
// the plugin; it waits, due when the windows let it proceed. A resync observes as always and
// is checked once Observe finds drift to correct. A requeue of work in flight is never held:
// what a window finds started, finishes. A resource no window selects pays Set.Check's walk
// over the windows' matches, nothing else.

// resultWindowClosed is the history result of a change a window held.
const resultWindowClosed = "WindowClosed"

// windowCheck is what the change windows made of one call.
type windowCheck struct {
	// held is the verdict of the windows holding the change (nil: not held): the plugin was
	// not called (a resync's Observe was).
	held *changewindow.Verdict
	// overridden starts the history message of a call an operator's override let through
	// although a window held it ("": none).
	overridden string
	// recheck is the claim of a resync that a window selects: checked once Observe finds
	// drift (nil: nothing to check).
	recheck *store.Claimed
	// wasHeld says the claim showed a window's hold (Reconciling reason WindowClosed).
	wasHeld bool
}

// checkWindows checks c's call against the windows in force before anything is called.
func (r *Reconciler) checkWindows(c *store.Claimed, a *attempt) {
	rec, _ := status.Get(c.Conditions, status.Reconciling)
	a.window.wasHeld = rec.Reason == status.ReasonWindowClosed
	if r.opts.Windows == nil || !gatedTrigger(a.trigger, c) {
		return
	}
	if a.trigger == "resync" {
		res := windowResource(c)
		if r.opts.Windows().Selects(&res) {
			a.window.recheck = c
		}
		return
	}
	r.windowHolds(c, a)
}

// windowHolds reports whether a window holds c's change now (a.window.held then says which
// and until when). An operator's override lets the change through when every window holding
// it allows operators: a.window.overridden then names it for history.
func (r *Reconciler) windowHolds(c *store.Claimed, a *attempt) bool {
	res := windowResource(c)
	v := r.opts.Windows().Check(&res, windowNow(c))
	if !v.Closed {
		return false
	}
	if o := c.WindowOverride; o != nil && v.AllowOperators {
		a.window.overridden = fmt.Sprintf("change window %s overridden by %s: %s; ", v.Window, o.Actor, o.Reason)
		return false
	}
	held := v // on the heap only when held
	a.window.held = &held
	r.opts.Metrics.WindowHeld(v.Window)
	return true
}

// windowNow is when c's change is checked against the windows: now, or the database's clock
// at the claim when the controller's is behind it. The claim found the work due by the
// database's clock: read at an earlier time, a window that closes at the work's due time
// would still be open, and would hold it again and again until the controller's clock
// caught up.
func windowNow(c *store.Claimed) time.Time {
	now := time.Now()
	if c.DBNow.After(now) {
		return c.DBNow
	}
	return now
}

func windowResource(c *store.Claimed) policy.Resource {
	return policy.Resource{Source: c.Source, APIVersion: c.APIVersion, Kind: c.Kind, Namespace: c.Namespace, Name: c.Name,
		Labels: c.Labels, Annotations: c.Annotations}
}

// windowClosed writes the outcome of a change a window held: no call was made (a resync's
// Observe was), the attempt count stays, and the work is due when the windows let it proceed
// (never on its own when no opening is known: a reload or an override wakes it). A newer
// generation, or a deletion, that arrived meanwhile is due at once.
func (r *Reconciler) windowClosed(c store.Claimed, a attempt, cur store.Current, u store.Update, prev status.State, ev func(typ, reason, m string) store.Event, now time.Time) store.Update {
	v := a.window.held
	msg := v.Message()
	u.Message, u.History.Message, u.History.Result = msg, msg, resultWindowClosed
	if o := c.WindowOverride; o != nil {
		// The override is used up (update clears it): it was refused.
		u.History.Message = fmt.Sprintf("override by %s refused: window %s does not allow operators; %s", o.Actor, v.Refusing, msg)
	}
	u.KeepActionState, u.Attempt, u.RunAt = true, c.Attempt, nil
	// An operator's request, or a dependency's, stays what it is: when due, it runs as asked.
	u.ManualBy, u.DependencyBy = c.ManualBy, c.DependencyBy
	if !v.Forever {
		u.RunAt = ptr(v.Until)
	}
	if rec, _ := status.Get(prev.Conditions, status.Reconciling); rec.Reason != status.ReasonWindowClosed || rec.Message != msg {
		u.Events = append(u.Events, ev(store.EventNormal, status.ReasonWindowClosed, msg))
	} else if claimed, _ := status.Get(c.Conditions, status.Reconciling); claimed.Reason == status.ReasonWindowClosed && claimed.Message == msg &&
		c.WindowOverride == nil {
		// Held again as it was held: history already says so (an override refused is news).
		u.History = nil
	}
	st := status.WindowHeld(prev, c.Deleting, msg, now)
	if cur.Generation != c.Generation || cur.Deleting != c.Deleting {
		if cur.Deleting {
			st = status.DeletionRequested(st, now)
		} else {
			st = status.NewGeneration(st, cur.Generation, now)
		}
		u.Attempt, u.RunAt = 0, ptr(now)
	}
	u.Phase, u.Conditions, u.ObservedGeneration = st.Phase, st.Conditions, st.ObservedGeneration
	return u
}
