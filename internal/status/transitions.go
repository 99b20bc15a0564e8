package status

import (
	"errors"
	"fmt"
	"time"
)

// State is the status part of a resource that the rules below derive: its phase, its
// conditions and the generation the last finished attempt worked on.
type State struct {
	Phase              string
	Conditions         []Condition
	ObservedGeneration int64
}

// Condition reasons set by the rules (plugins' own conditions keep theirs).
const (
	ReasonPending       = "Pending"
	ReasonProgressing   = "Progressing"
	ReasonNewGeneration = "NewGeneration"
	ReasonDeleting      = "Deleting"
	// ReasonDeletionRequested: the manifest is gone and the action's delete has not started
	// (it may be held by dependents); Deleting once it runs.
	ReasonDeletionRequested = "DeletionRequested"
	ReasonRetrying          = "RetryingAfterFailure"
	ReasonInterrupted       = "Interrupted"
	ReasonReconciled        = "Reconciled"
	ReasonDriftCorrected    = "DriftCorrected"
	ReasonActionOK          = "ActionSucceeded"
	ReasonActionFailed      = "ActionFailed"
	ReasonActionRejected    = "ActionRejected"
	ReasonStalled           = "Stalled"
	ReasonDeleteFailed      = "DeleteFailed"
)

const msgNewGeneration = "a newer generation is waiting to be reconciled"

// Created is the state of a resource the syncer has just inserted: nothing reconciled yet, the
// first reconcile pending (so Reconciling=True from the start, and Ready Unknown, never True).
func Created(now time.Time) State {
	return State{Phase: PhasePending, Conditions: []Condition{
		{Type: Ready, Status: Unknown, Reason: ReasonPending, Message: "waiting for the first reconcile", LastTransitionTime: now},
		{Type: Reconciling, Status: True, Reason: ReasonPending, Message: "waiting for the first reconcile", LastTransitionTime: now},
	}}
}

// Initial returns the conditions of an object that has not been reconciled yet (sources, and
// rows written before Created existed).
func Initial(now time.Time) []Condition {
	return []Condition{{Type: Ready, Status: Unknown, Reason: ReasonPending, Message: "waiting for the first reconcile", LastTransitionTime: now}}
}

// NewGeneration is the state after the syncer stored a changed spec (generation gen): work is
// pending again, Ready can no longer be True, a Stalled verdict on the old spec no longer holds.
func NewGeneration(prev State, gen int64, now time.Time) State {
	s := State{Phase: PhaseReconciling, Conditions: clone(prev.Conditions), ObservedGeneration: prev.ObservedGeneration}
	if prev.ObservedGeneration == 0 {
		s.Phase = PhasePending
	}
	s.Conditions = Remove(s.Conditions, Stalled)
	s.Conditions = Set(s.Conditions, Condition{Type: Reconciling, Status: True, Reason: ReasonNewGeneration,
		Message: fmt.Sprintf("generation %d is waiting to be reconciled", gen), ObservedGeneration: prev.ObservedGeneration}, now)
	if c, ok := Get(s.Conditions, Ready); !ok || c.Status == True {
		s.Conditions = Set(s.Conditions, Condition{Type: Ready, Status: Unknown, Reason: ReasonNewGeneration, Message: msgNewGeneration,
			ObservedGeneration: prev.ObservedGeneration}, now)
	}
	return s
}

const msgDeletionRequested = "waiting to run the action's delete"

// DeletionRequested is the state after the syncer marked the resource for deletion (its
// manifest is gone): phase Deleting, the delete pending but not running (Reconciling True
// DeletionRequested, until the call starts: Start says Deleting), Ready no longer True. A
// delete already retrying after a failure keeps saying so.
func DeletionRequested(prev State, now time.Time) State {
	s := State{Phase: PhaseDeleting, Conditions: clone(prev.Conditions), ObservedGeneration: prev.ObservedGeneration}
	s.Conditions = Remove(s.Conditions, Stalled)
	if c, ok := Get(s.Conditions, Reconciling); prev.Phase != PhaseDeleting || !ok || c.Status != True || c.Reason != ReasonRetrying {
		s.Conditions = Set(s.Conditions, Condition{Type: Reconciling, Status: True, Reason: ReasonDeletionRequested,
			Message: msgDeletionRequested, ObservedGeneration: prev.ObservedGeneration}, now)
	}
	s.Conditions = notReady(s.Conditions, ReasonDeleting, "the object is being deleted", prev.ObservedGeneration, now)
	s.Conditions = keepTimes(prev.Conditions, s.Conditions)
	return s
}

// Start is the state when a worker starts the action call of a claimed resource — not when
// it is claimed: a claim may wait in its replica's memory behind other calls, and until its
// call starts the resource shows what it showed before (Pending, or the reason its work is
// waiting). Whenever the call is real work (a first reconcile, a new generation, a retry, a
// delete) the phase says Reconciling (Deleting) and Reconciling=True says Progressing
// (Deleting) while it runs. A resync of a resource that is Ready at its generation changes
// nothing (it may find nothing to do). changed reports whether anything differs from prev.
func Start(prev State, gen int64, deleting bool, now time.Time) (s State, changed bool) {
	s = unchanged(prev)
	switch {
	case deleting:
		s.Phase = PhaseDeleting
		s.Conditions = Remove(s.Conditions, Stalled)
		// A delete retrying after a failed delete keeps saying so; anything else says Deleting.
		if c, ok := Get(s.Conditions, Reconciling); prev.Phase != PhaseDeleting || !ok || c.Status != True || c.Reason != ReasonRetrying {
			s.Conditions = Set(s.Conditions, Condition{Type: Reconciling, Status: True, Reason: ReasonDeleting,
				Message: "running the action's delete", ObservedGeneration: prev.ObservedGeneration}, now)
		}
		s.Conditions = notReady(s.Conditions, ReasonDeleting, "the object is being deleted", prev.ObservedGeneration, now)
	case prev.ObservedGeneration < gen:
		if prev.Phase != PhaseFailed {
			// A failed resource keeps its phase while it retries: it has not recovered yet.
			s.Phase = PhaseReconciling
		}
		s.Conditions = Remove(s.Conditions, Stalled)
		s.Conditions = notReady(s.Conditions, ReasonNewGeneration, msgNewGeneration, prev.ObservedGeneration, now)
		if c, ok := Get(s.Conditions, Reconciling); !ok || c.Status != True || c.Reason == ReasonPending || c.Reason == ReasonNewGeneration || c.Reason == ReasonWaitingForDependency ||
			c.Reason == ReasonWindowClosed {
			s.Conditions = Set(s.Conditions, Condition{Type: Reconciling, Status: True, Reason: ReasonProgressing,
				Message: fmt.Sprintf("reconciling generation %d", gen), ObservedGeneration: prev.ObservedGeneration}, now)
		}
		if _, ok := Get(s.Conditions, Ready); !ok {
			s.Conditions = Set(s.Conditions, Condition{Type: Ready, Status: Unknown, Reason: ReasonProgressing,
				Message: fmt.Sprintf("reconciling generation %d", gen), ObservedGeneration: prev.ObservedGeneration}, now)
		}
	default:
		// A call a window held at the generation already observed runs now: the hold no
		// longer describes it. A Ready resource's call (a manual request, a drift
		// correction: its resync may find nothing to do) shows as any such call does, with
		// no Reconciling; a retry shows Progressing.
		if c, ok := Get(s.Conditions, Reconciling); ok && c.Reason == ReasonWindowClosed {
			if prev.Phase == PhaseReady {
				s.Conditions = Remove(s.Conditions, Reconciling)
			} else {
				s.Conditions = Set(s.Conditions, Condition{Type: Reconciling, Status: True, Reason: ReasonProgressing,
					Message: fmt.Sprintf("reconciling generation %d", gen), ObservedGeneration: prev.ObservedGeneration}, now)
			}
		}
	}
	s.Conditions = keepTimes(prev.Conditions, s.Conditions)
	return s, !equal(prev, s)
}

// CallStarted is the state when the call of a claim starts, given what was claimed (the
// generation, and whether it is a delete) and the row as it is now: Start, unless the row
// moved on since the claim (the syncer stored a newer generation or asked for deletion) —
// then its status already says that newer work waits, and the call's result will tell what
// the older one came to.
func CallStarted(prev State, claimedGen int64, claimedDeleting bool, gen int64, deleting bool, now time.Time) (State, bool) {
	if gen != claimedGen || deleting != claimedDeleting {
		return unchanged(prev), false
	}
	return Start(prev, gen, deleting, now)
}

// Outcome is what one action call came to, from which phase and conditions follow.
type Outcome struct {
	// Generation the attempt worked on, and the resource's current generation.
	Generation, CurrentGeneration int64
	Delete                        bool   // the call was the action's Delete
	Deleting                      bool   // the resource is (now) marked for deletion
	Done                          bool   // the action reports the spec reached (or the object deleted)
	InProgress                    bool   // the action started work and asked to be called again
	Err                           string // a failed attempt (retried)
	Terminal                      bool   // Err cannot succeed until the spec changes
	Drift                         bool   // a resync found drift, which this call corrected
	Message                       string
	Reason                        string // optional reason override for the Ready condition
}

// Result derives the state after an action call. Removed reports that the row goes (a
// delete that succeeded while the manifest is still gone).
func Result(prev State, o Outcome, now time.Time) (s State, removed bool) {
	if o.Delete {
		return deleteResult(prev, o, now)
	}
	conds := clone(prev.Conditions)
	observed := prev.ObservedGeneration
	gen := o.Generation
	var phase string
	switch {
	case o.Err != "" && o.Terminal:
		phase = PhaseFailed
		observed = gen
		conds = Set(conds, Condition{Type: Stalled, Status: True, Reason: ReasonActionRejected, Message: o.Err, ObservedGeneration: gen}, now)
		conds = Remove(conds, Reconciling)
		conds = Set(conds, Condition{Type: Ready, Status: False, Reason: ReasonStalled, Message: o.Err, ObservedGeneration: gen}, now)
		conds = Set(conds, Condition{Type: Synced, Status: False, Reason: ReasonActionFailed, Message: o.Err, ObservedGeneration: gen}, now)
	case o.Err != "":
		phase = PhaseFailed
		conds = Remove(conds, Stalled)
		conds = Set(conds, Condition{Type: Reconciling, Status: True, Reason: ReasonRetrying, Message: o.Err, ObservedGeneration: gen}, now)
		conds = Set(conds, Condition{Type: Ready, Status: False, Reason: ReasonActionFailed, Message: o.Err, ObservedGeneration: gen}, now)
		conds = Set(conds, Condition{Type: Synced, Status: False, Reason: ReasonActionFailed, Message: o.Err, ObservedGeneration: gen}, now)
	case o.InProgress:
		phase = PhaseReconciling
		msg := nonEmpty(o.Message, "action in progress")
		conds = Remove(conds, Stalled)
		conds = Set(conds, Condition{Type: Reconciling, Status: True, Reason: ReasonProgressing, Message: msg, ObservedGeneration: gen}, now)
		if c, ok := Get(conds, Ready); !ok || c.Status != False || prev.Phase != PhaseFailed {
			conds = Set(conds, Condition{Type: Ready, Status: Unknown, Reason: ReasonProgressing, Message: msg, ObservedGeneration: gen}, now)
		}
		conds = Set(conds, Condition{Type: Synced, Status: True, Reason: ReasonActionOK, ObservedGeneration: gen}, now)
	default: // done
		phase = PhaseReady
		observed = gen
		reason := o.Reason
		if reason == "" {
			reason = ReasonReconciled
			if o.Drift {
				reason = ReasonDriftCorrected
			}
		}
		conds = Remove(conds, Stalled)
		conds = Remove(conds, Reconciling)
		conds = Remove(conds, Drifted) // what drifted is corrected
		conds = Set(conds, Condition{Type: Ready, Status: True, Reason: reason, Message: o.Message, ObservedGeneration: gen}, now)
		conds = Set(conds, Condition{Type: Synced, Status: True, Reason: ReasonActionOK, ObservedGeneration: gen}, now)
	}
	if o.CurrentGeneration > gen {
		// A newer generation arrived while this attempt ran: whatever it achieved, the
		// resource is not Ready for its current spec.
		phase = PhaseReconciling
		conds = Remove(conds, Stalled)
		conds = Set(conds, Condition{Type: Reconciling, Status: True, Reason: ReasonNewGeneration, Message: msgNewGeneration, ObservedGeneration: observed}, now)
		if c, _ := Get(conds, Ready); c.Status == True {
			conds = Set(conds, Condition{Type: Ready, Status: Unknown, Reason: ReasonNewGeneration, Message: msgNewGeneration, ObservedGeneration: observed}, now)
		}
	}
	if o.Deleting {
		// The manifest went away during the call: its delete runs next.
		phase = PhaseDeleting
		conds = Remove(conds, Stalled)
		conds = Set(conds, Condition{Type: Reconciling, Status: True, Reason: ReasonDeletionRequested, Message: msgDeletionRequested, ObservedGeneration: observed}, now)
		conds = notReady(conds, ReasonDeleting, "the object is being deleted", observed, now)
	}
	return State{Phase: phase, Conditions: keepTimes(prev.Conditions, conds), ObservedGeneration: observed}, false
}

// notReady turns a Ready=True into Unknown (a condition that no longer holds once work is
// pending again); False and Unknown stay as they are.
func notReady(conds []Condition, reason, msg string, observed int64, now time.Time) []Condition {
	if c, ok := Get(conds, Ready); ok && c.Status == True {
		return Set(conds, Condition{Type: Ready, Status: Unknown, Reason: reason, Message: msg, ObservedGeneration: observed}, now)
	}
	return conds
}

// keepTimes gives every condition of out whose status is the same as in prev prev's
// lastTransitionTime: a transition that removes and sets a condition again, or flips it
// there and back, is no flip.
func keepTimes(prev, out []Condition) []Condition {
	for i, c := range out {
		if p, ok := Get(prev, c.Type); ok && p.Status == c.Status && !p.LastTransitionTime.IsZero() {
			out[i].LastTransitionTime = p.LastTransitionTime
		}
	}
	return out
}

// deleteResult derives the state after a call of the action's Delete.
func deleteResult(prev State, o Outcome, now time.Time) (State, bool) {
	s := State{Phase: PhaseDeleting, Conditions: clone(prev.Conditions), ObservedGeneration: prev.ObservedGeneration}
	obs := prev.ObservedGeneration
	switch {
	case o.Err != "":
		s.Conditions = Set(s.Conditions, Condition{Type: Reconciling, Status: True, Reason: ReasonRetrying, Message: o.Err, ObservedGeneration: obs}, now)
		s.Conditions = Set(s.Conditions, Condition{Type: Ready, Status: False, Reason: ReasonDeleteFailed, Message: o.Err, ObservedGeneration: obs}, now)
		s.Conditions = Set(s.Conditions, Condition{Type: Synced, Status: False, Reason: ReasonActionFailed, Message: o.Err, ObservedGeneration: obs}, now)
	case !o.Done:
		msg := nonEmpty(o.Message, "deletion in progress")
		s.Conditions = Set(s.Conditions, Condition{Type: Reconciling, Status: True, Reason: ReasonDeleting, Message: msg, ObservedGeneration: obs}, now)
		s.Conditions = Set(s.Conditions, Condition{Type: Synced, Status: True, Reason: ReasonActionOK, ObservedGeneration: obs}, now)
	default:
		if o.Deleting {
			return s, true
		}
		s.Conditions = Set(s.Conditions, Condition{Type: Synced, Status: True, Reason: ReasonActionOK, ObservedGeneration: obs}, now)
	}
	if !o.Deleting {
		// The manifest came back while we deleted: reconcile it again from scratch.
		s.Phase = PhaseReconciling
		s.Conditions = Set(s.Conditions, Condition{Type: Reconciling, Status: True, Reason: ReasonNewGeneration,
			Message: "the manifest came back during its deletion", ObservedGeneration: obs}, now)
		if c, _ := Get(s.Conditions, Ready); c.Status == True {
			s.Conditions = Set(s.Conditions, Condition{Type: Ready, Status: Unknown, Reason: ReasonNewGeneration, Message: msgNewGeneration, ObservedGeneration: obs}, now)
		}
	} else {
		s.Conditions = notReady(s.Conditions, ReasonDeleting, "the object is being deleted", obs, now)
	}
	s.Conditions = keepTimes(prev.Conditions, s.Conditions)
	return s, false
}

// InSync is the state after a resync found nothing to do: unchanged but for a Drifted
// condition, which goes, unless the resource was changed or marked for deletion meanwhile
// (then that work is pending).
func InSync(prev State, gen, currentGen int64, deleting bool, now time.Time) State {
	prev.Conditions = Remove(prev.Conditions, Drifted)
	switch {
	case deleting:
		return DeletionRequested(prev, now)
	case currentGen > gen:
		return NewGeneration(prev, currentGen, now)
	}
	return unchanged(prev)
}

// Released is the state when a lease ends without a result (its replica died, stopped
// renewing, or shut down). started says whether the claim's call had started (Start was
// stored): only then was an attempt cut short (Interrupted, and interrupted is true); a claim
// still waiting for a worker goes back to the queue showing what it showed.
func Released(prev State, gen int64, deleting, started bool, replica string, now time.Time) (s State, interrupted bool) {
	if !started {
		return unchanged(prev), false
	}
	return Interrupted(prev, gen, deleting, replica, now), true
}

// Interrupted is the state when an attempt ended without a result because its replica died or
// lost its lease: the work is pending again. A resync of a Ready resource that was cut short
// changes nothing (it was Ready before and nothing says otherwise).
func Interrupted(prev State, gen int64, deleting bool, replica string, now time.Time) State {
	s := unchanged(prev)
	if !deleting && prev.ObservedGeneration >= gen && prev.Phase == PhaseReady {
		return s
	}
	if deleting {
		s.Phase = PhaseDeleting
	} else if s.Phase == PhasePending || s.Phase == PhaseReady {
		s.Phase = PhaseReconciling
	}
	s.Conditions = Remove(s.Conditions, Stalled)
	s.Conditions = Set(s.Conditions, Condition{Type: Reconciling, Status: True, Reason: ReasonInterrupted,
		Message: fmt.Sprintf("the attempt on replica %s was interrupted; it runs again", replica), ObservedGeneration: prev.ObservedGeneration}, now)
	if c, _ := Get(s.Conditions, Ready); c.Status == True {
		s.Conditions = Set(s.Conditions, Condition{Type: Ready, Status: Unknown, Reason: ReasonInterrupted, Message: "an attempt was interrupted",
			ObservedGeneration: prev.ObservedGeneration}, now)
	}
	return s
}

// Apply derives phase and conditions from an outcome of a reconcile call (Result without a
// delete), keeping transition times from prev.
func Apply(prev []Condition, prevObserved int64, o Outcome, now time.Time) (phase string, conds []Condition, observed int64) {
	s, _ := Result(State{Conditions: prev, ObservedGeneration: prevObserved}, o, now)
	return s.Phase, s.Conditions, s.ObservedGeneration
}

// Check reports the first broken invariant of s for a resource at generation gen (DESIGN §8):
// Ready present once; conditions unique per type; Ready never True while observedGeneration <
// generation or before a first success; Stalled=True ⇒ Ready=False; never Reconciling=True and
// Stalled=True together; Reconciling=True while work is pending or running.
func Check(s State, gen int64, pending bool) error {
	seen := map[string]bool{}
	for _, c := range s.Conditions {
		if seen[c.Type] {
			return fmt.Errorf("condition %s appears twice", c.Type)
		}
		seen[c.Type] = true
	}
	ready, ok := Get(s.Conditions, Ready)
	if !ok {
		return errors.New("no Ready condition")
	}
	if ready.Status == True && (s.ObservedGeneration < gen || s.ObservedGeneration == 0) {
		return fmt.Errorf("condition Ready=True with observedGeneration %d < generation %d", s.ObservedGeneration, gen)
	}
	if ready.Status == True && s.Phase != PhaseReady {
		return fmt.Errorf("condition Ready=True in phase %s", s.Phase)
	}
	stalled, _ := Get(s.Conditions, Stalled)
	rec, _ := Get(s.Conditions, Reconciling)
	if stalled.Status == True && ready.Status != False {
		return fmt.Errorf("condition Stalled=True with Ready=%s", ready.Status)
	}
	if stalled.Status == True && rec.Status == True {
		return errors.New("conditions Reconciling and Stalled both True")
	}
	if pending && rec.Status != True {
		return fmt.Errorf("work pending in phase %s without Reconciling=True", s.Phase)
	}
	return nil
}

func clone(cs []Condition) []Condition { return append([]Condition(nil), cs...) }

// unchanged is prev as it is, its conditions copied.
func unchanged(prev State) State {
	return State{Phase: prev.Phase, Conditions: clone(prev.Conditions), ObservedGeneration: prev.ObservedGeneration}
}

func equal(a, b State) bool {
	if a.Phase != b.Phase || a.ObservedGeneration != b.ObservedGeneration || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		if a.Conditions[i] != b.Conditions[i] {
			return false
		}
	}
	return true
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
