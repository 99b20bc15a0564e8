package status

import "time"

// The gate of policies (internal/policy) on a resource's change.
const (
	// Approved is set on a resource that policies select when its change is decided: True
	// when it may be applied (allowed, or approved), False while it waits for approvals, was
	// rejected, or is denied.
	Approved = "Approved"

	// ReasonApprovalRequired: Approved=False, waiting for approvals; the message names the
	// policy and who may approve. The resource is Pending with Reconciling=True for the
	// same reason until the approvals arrive.
	ReasonApprovalRequired = "ApprovalRequired"
	// ReasonApproved: Approved=True, the approvals the policies ask for were given for this
	// generation and plan.
	ReasonApproved = "Approved"
	// ReasonPolicyAllowed: Approved=True, no policy asked for approvals or denied.
	ReasonPolicyAllowed = "PolicyAllowed"
	// ReasonRejected: Approved=False, an approver the policies permit rejected this
	// generation's plan; the resource is Stalled until a new generation, a new plan or the
	// rejection's expiry (a manual reconcile or a reload decides again).
	ReasonRejected = "Rejected"
	// ReasonPolicyDenied: Approved=False, a deny policy holds; the resource is Stalled with
	// the policy's message until a new generation (or a reload that changes the policies).
	ReasonPolicyDenied = "PolicyDenied"
)

// AwaitingApproval is the state of a resource whose change (at generation gen) waits for
// approvals: phase Pending (Deleting for a delete), Reconciling=True and Approved=False,
// both reason ApprovalRequired with msg (naming the policy, the plan and who may approve),
// Ready no longer True, no Stalled. The work is pending: a vote makes it due.
func AwaitingApproval(prev State, gen int64, deleting bool, msg string, now time.Time) State {
	s := unchanged(prev)
	s.Phase = PhasePending
	if deleting {
		s.Phase = PhaseDeleting
	}
	s.Conditions = Remove(s.Conditions, Stalled)
	s.Conditions = Set(s.Conditions, Condition{Type: Reconciling, Status: True, Reason: ReasonApprovalRequired, Message: msg,
		ObservedGeneration: prev.ObservedGeneration}, now)
	s.Conditions = notReady(s.Conditions, ReasonApprovalRequired, msg, prev.ObservedGeneration, now)
	if _, ok := Get(s.Conditions, Ready); !ok {
		s.Conditions = Set(s.Conditions, Condition{Type: Ready, Status: Unknown, Reason: ReasonApprovalRequired, Message: msg,
			ObservedGeneration: prev.ObservedGeneration}, now)
	}
	s.Conditions = Set(s.Conditions, Condition{Type: Approved, Status: False, Reason: ReasonApprovalRequired, Message: msg, ObservedGeneration: gen}, now)
	s.Conditions = keepTimes(prev.Conditions, s.Conditions)
	return s
}

// Refused is the state of a change (at generation gen) that a deny policy (reason
// ReasonPolicyDenied) or an approver (ReasonRejected) refused: Stalled=True, Ready=False and
// Approved=False with reason and msg, no Reconciling; phase Failed (Deleting for a delete).
// Nothing is pending: a new generation, a new plan or a reload of the policies decides again.
func Refused(prev State, gen int64, deleting bool, reason, msg string, now time.Time) State {
	s := unchanged(prev)
	s.Phase = PhaseFailed
	if deleting {
		s.Phase = PhaseDeleting
	}
	s.Conditions = Remove(s.Conditions, Reconciling)
	s.Conditions = Set(s.Conditions, Condition{Type: Stalled, Status: True, Reason: reason, Message: msg, ObservedGeneration: gen}, now)
	s.Conditions = Set(s.Conditions, Condition{Type: Ready, Status: False, Reason: reason, Message: msg, ObservedGeneration: gen}, now)
	s.Conditions = Set(s.Conditions, Condition{Type: Approved, Status: False, Reason: reason, Message: msg, ObservedGeneration: gen}, now)
	s.Conditions = keepTimes(prev.Conditions, s.Conditions)
	return s
}

// Allowed returns conds with Approved=True (reason ReasonPolicyAllowed or ReasonApproved,
// message msg) for generation gen: set before the call's result is derived from them.
func Allowed(conds []Condition, gen int64, reason, msg string, now time.Time) []Condition {
	return Set(conds, Condition{Type: Approved, Status: True, Reason: reason, Message: msg, ObservedGeneration: gen}, now)
}

// DriftGone is the state when a resync of a resource whose drift the gate held (waiting for
// approvals, or refused) finds it in sync: the drift went away and nothing was applied. The
// hold ends: phase Ready at generation gen, Ready=True (reason ReasonReconciled, msg), no
// Reconciling, Stalled or Approved condition.
func DriftGone(prev State, gen int64, msg string, now time.Time) State {
	s := unchanged(prev)
	s.Phase, s.ObservedGeneration = PhaseReady, max(prev.ObservedGeneration, gen)
	s.Conditions = Remove(s.Conditions, Stalled)
	s.Conditions = Remove(s.Conditions, Reconciling)
	s.Conditions = Remove(s.Conditions, Approved)
	s.Conditions = Set(s.Conditions, Condition{Type: Ready, Status: True, Reason: ReasonReconciled, Message: msg, ObservedGeneration: s.ObservedGeneration}, now)
	s.Conditions = keepTimes(prev.Conditions, s.Conditions)
	return s
}

// Redecide is the state of a change the gate held (s, from AwaitingApproval or Refused) that
// is decided again at once: the policies changed while it was decided. A refusal's Stalled
// goes, and Reconciling=True (reason ReasonPending, msg) says a decision is pending; Approved
// stays as decided. A wait, Reconciling=True already, is left as it is.
func Redecide(s State, msg string, now time.Time) State {
	if c, _ := Get(s.Conditions, Reconciling); c.Status == True {
		return s
	}
	out := unchanged(s)
	out.Conditions = Remove(out.Conditions, Stalled)
	out.Conditions = Set(out.Conditions, Condition{Type: Reconciling, Status: True, Reason: ReasonPending, Message: msg,
		ObservedGeneration: s.ObservedGeneration}, now)
	return out
}
