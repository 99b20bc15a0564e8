// Package notify owns what trueup tells people about: which status transitions are worth a
// notification (Events), which rules and providers a notification goes to (Match), and how
// each provider's message is shaped. It decides only; internal/store records the events in
// its outbox and internal/notifier delivers them.
package notify

import "github.com/trueup-dev/trueup/internal/status"

// Event names, as rules select them.
const (
	Failed         = "Failed"
	Stalled        = "Stalled"
	Recovered      = "Recovered"
	Deleted        = "Deleted"
	Drifted        = "Drifted"
	SourceRejected = "SourceRejected"
	PruneSkipped   = "PruneSkipped"
	// Abandoned: an operator made trueup forget a removed resource without calling its
	// action (trueup delete --abandon); what the action created is left as it is.
	Abandoned = "Abandoned"
	// ApprovalRequired: a policy holds a resource's change until approvers approve its plan
	// (status.Approved=False, reason ApprovalRequired, for a new generation or plan).
	ApprovalRequired = "ApprovalRequired"
	// Approved: the approvals a change waited for were given, and it is applied.
	Approved = "Approved"
	// Rejected: an approver rejected a change's plan.
	Rejected = "Rejected"
	// PolicyDenied: a deny policy holds for a resource's change (it is Stalled).
	PolicyDenied = "PolicyDenied"
)

// All lists every event, in the order rules document them.
var All = []string{Failed, Stalled, Recovered, Deleted, Abandoned, Drifted, SourceRejected, PruneSkipped,
	ApprovalRequired, Approved, Rejected, PolicyDenied}

// Known reports whether name is an event.
func Known(name string) bool {
	for _, e := range All {
		if e == name {
			return true
		}
	}
	return false
}

// Snapshot is a resource's status on one side of a write.
type Snapshot struct {
	Phase      string
	Conditions []status.Condition
	// Removed: the row went (a delete finished).
	Removed bool
	// Abandoned: the row went without its action's delete (an operator abandoned it).
	Abandoned bool
	// Drift: this write records a drift that the call found and corrected, or that it found
	// anew and left in place under the type's drift mode notify.
	Drift bool
}

// Events returns the notifications that the change from before to after is worth, in a fixed
// order. A failure is told once when it starts, not at each retry nor when a new generation
// fails again before anything succeeded (failing carries across generations); Recovered is
// Ready again after a failure, a stall or a refusal of the gate (also at a later generation). The gate of policies is told by its condition (approval): a
// stall for a rejection or a deny is told as Rejected or PolicyDenied instead of Stalled.
func Events(before, after Snapshot) []string {
	switch {
	case after.Abandoned:
		return []string{Abandoned}
	case after.Removed:
		if approval(before, after, false) == Approved {
			return []string{Approved, Deleted} // an approved delete that finished at once
		}
		return []string{Deleted}
	}
	var out []string
	wasStalled, isStalled := stalled(before), stalled(after)
	gate := approval(before, after, isStalled && !wasStalled)
	switch {
	case isStalled && !wasStalled:
		if gate != Rejected && gate != PolicyDenied {
			out = append(out, Stalled)
		}
	case after.Phase == status.PhaseFailed && !failing(before) && !isStalled:
		out = append(out, Failed)
	case after.Phase == status.PhaseReady && (failing(before) || wasStalled || refused(before)):
		out = append(out, Recovered)
	}
	if gate != "" {
		out = append(out, gate)
	}
	if after.Drift {
		out = append(out, Drifted)
	}
	return out
}

// approval is the notification that the condition Approved's change is worth ("" for none):
// ApprovalRequired when the wait begins or its message changes (a new plan to approve),
// Approved when an approval appears or names another one, Rejected and PolicyDenied when the
// condition turns to them or the resource stalls on them anew (newStall: a new generation
// that a policy denies again).
func approval(before, after Snapshot, newStall bool) string {
	c, ok := status.Get(after.Conditions, status.Approved)
	if !ok {
		return ""
	}
	was, had := status.Get(before.Conditions, status.Approved)
	changed := !had || was.Status != c.Status || was.Reason != c.Reason || was.Message != c.Message
	switch {
	case c.Status == status.False && c.Reason == status.ReasonApprovalRequired && changed:
		return ApprovalRequired
	case c.Status == status.True && c.Reason == status.ReasonApproved && changed:
		return Approved
	case c.Status == status.False && c.Reason == status.ReasonRejected && (changed || newStall):
		return Rejected
	case c.Status == status.False && c.Reason == status.ReasonPolicyDenied && (changed || newStall):
		return PolicyDenied
	}
	return ""
}

func stalled(s Snapshot) bool {
	c, ok := status.Get(s.Conditions, status.Stalled)
	return ok && c.Status == status.True
}

// failing: the last attempt failed, whatever happened since (a new generation makes the phase
// Reconciling but leaves Ready=False with the failure's reason until an attempt succeeds).
func failing(s Snapshot) bool {
	if s.Phase == status.PhaseFailed {
		return true
	}
	c, ok := status.Get(s.Conditions, status.Ready)
	return ok && c.Status == status.False && (c.Reason == status.ReasonActionFailed || c.Reason == status.ReasonStalled)
}

// refused: the last decision of the gate refused the change (a deny policy or an approver's
// rejection), whatever happened since: a new generation ends the stall but leaves Ready=False
// with that reason until an apply succeeds, which is then Recovered. It is not a failure of
// the action: a new generation whose apply fails is Failed.
func refused(s Snapshot) bool {
	c, ok := status.Get(s.Conditions, status.Ready)
	return ok && c.Status == status.False && (c.Reason == status.ReasonPolicyDenied || c.Reason == status.ReasonRejected)
}

// Source is a source's status on one side of a write.
type Source struct {
	Revision  string // applied
	Attempted string // last attempted
	// Conditions are the source's conditions (status.SourceApplied, status.SourceFailed).
	Conditions []status.Condition
}

// SourceEvents returns the notifications that a source's change from before to after is
// worth, in a fixed order: a refusal of the prune guard (PruneSkipped=True) unless the source
// already showed the same one (reason and message) of the same revision, so that applying it
// again (another syncer's start, a takeover) tells nobody twice; a failed sync of a revision
// refused for its content (SyncFailureEvent) when it is a new failure
// (status.NewSourceFailure).
func SourceEvents(before, after Source) []string {
	var out []string
	if c, ok := status.Get(after.Conditions, status.PruneSkipped); ok && c.Status == status.True {
		was, ok := status.Get(before.Conditions, status.PruneSkipped)
		if !ok || was.Status != status.True || was.Reason != c.Reason || was.Message != c.Message || before.Revision != after.Revision {
			out = append(out, PruneSkipped)
		}
	}
	if c, ok := status.Get(after.Conditions, status.Ready); ok && c.Status == status.False && SyncFailureEvent(c.Reason) != "" &&
		status.NewSourceFailure(before.Conditions, before.Attempted, c.Message, after.Attempted) {
		out = append(out, SyncFailureEvent(c.Reason))
	}
	return out
}

// SyncFailureEvent is the notification a source's failed sync is worth ("" for none): a
// revision refused for its content (ValidationFailed, conflicts) is SourceRejected; a fetch
// that failed is retried quietly (its Warning event and the source's condition show it).
func SyncFailureEvent(reason string) string {
	switch reason {
	case "", "FetchFailed":
		return ""
	}
	return SourceRejected
}
