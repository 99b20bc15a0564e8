package status

import (
	"fmt"
	"time"
)

// Suspended is the condition type of a resource or source an operator suspended: present
// (True) while suspended, removed on resume.
const Suspended = "Suspended"

// ReasonSuspended is the reason of Suspended=True.
const ReasonSuspended = "SuspendedByOperator"

// Suspend is the state after an operator suspended the object: Suspended=True saying who and
// why. Nothing else changes: a suspended resource is not reconciled, so its phase, Ready,
// Reconciling (still True when work is pending: it waits for the resume) and Stalled say what
// they said. Suspending again updates who and why, not the transition time.
func Suspend(prev State, actor, reason string, now time.Time) State {
	msg := "suspended by " + actor
	if reason != "" {
		msg += ": " + reason
	}
	s := State{Phase: prev.Phase, Conditions: clone(prev.Conditions), ObservedGeneration: prev.ObservedGeneration}
	s.Conditions = Set(s.Conditions, Condition{Type: Suspended, Status: True, Reason: ReasonSuspended, Message: msg,
		ObservedGeneration: prev.ObservedGeneration}, now)
	return s
}

// Resume is the state after an operator resumed the object: the Suspended condition goes;
// work that became due meanwhile runs next and sets its own conditions when claimed.
func Resume(prev State) State {
	return State{Phase: prev.Phase, Conditions: Remove(clone(prev.Conditions), Suspended), ObservedGeneration: prev.ObservedGeneration}
}

// IsSuspended reports whether conds say the object is suspended.
func IsSuspended(conds []Condition) bool {
	c, ok := Get(conds, Suspended)
	return ok && c.Status == True
}

// SuspendedWork names the work a suspended resource holds back, for display: "generation 3
// pending" while its phase is Pending or Reconciling, "deletion pending" while Deleting, "retry
// pending" while Failed with a retry to come (Reconciling=RetryingAfterFailure, or Ready's
// reason ActionFailed where only Ready is known), and "" when nothing waits (Ready, Failed for
// good). A suspended resource is not reconciling, deleting or retrying, so the CLI and the
// dashboard show this in place of those phases. conds may hold only some of the conditions.
func SuspendedWork(phase string, generation int64, conds []Condition) string {
	switch phase {
	case PhasePending, PhaseReconciling:
		return fmt.Sprintf("generation %d pending", generation)
	case PhaseDeleting:
		return "deletion pending"
	case PhaseFailed:
		rc, _ := Get(conds, Reconciling)
		ready, _ := Get(conds, Ready)
		if (rc.Status == True && rc.Reason == ReasonRetrying) || (ready.Status == False && ready.Reason == ReasonActionFailed) {
			return "retry pending"
		}
	}
	return ""
}
