package notify

import (
	"reflect"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/status"
)

func TestEvents(t *testing.T) {
	t.Parallel()
	stalledC := []status.Condition{{Type: status.Stalled, Status: status.True}}
	ready := Snapshot{Phase: status.PhaseReady}
	failed := Snapshot{Phase: status.PhaseFailed}
	failingC := []status.Condition{{Type: status.Ready, Status: status.False, Reason: status.ReasonActionFailed}}
	stalledS := Snapshot{Phase: status.PhaseFailed, Conditions: stalledC}
	tests := []struct {
		name          string
		before, after Snapshot
		want          []string
	}{
		{"ready to failed", ready, failed, []string{Failed}},
		{"reconciling to failed", Snapshot{Phase: status.PhaseReconciling}, failed, []string{Failed}},
		{"pending to failed (first attempt)", Snapshot{Phase: status.PhasePending}, failed, []string{Failed}},
		{"failed retry fails again: told once", failed, failed, nil},
		{"failed to ready", failed, ready, []string{Recovered}},
		{"failed to stalled", failed, stalledS, []string{Stalled}},
		{"ready to stalled", ready, stalledS, []string{Stalled}},
		{"stalled stays stalled", stalledS, stalledS, nil},
		{"stalled to ready", stalledS, ready, []string{Recovered}},
		{"reconciling to ready", Snapshot{Phase: status.PhaseReconciling}, ready, nil},
		{"ready resync", ready, ready, nil},
		{"failed to reconciling (in progress)", failed, Snapshot{Phase: status.PhaseReconciling}, nil},
		{"delete finished", Snapshot{Phase: status.PhaseDeleting}, Snapshot{Removed: true}, []string{Deleted}},
		{"failed then removed", failed, Snapshot{Removed: true}, []string{Deleted}},
		{"deleting, abandoned", Snapshot{Phase: status.PhaseDeleting}, Snapshot{Removed: true, Abandoned: true}, []string{Abandoned}},
		{"drift corrected", ready, Snapshot{Phase: status.PhaseReady, Drift: true}, []string{Drifted}},
		{"drift corrected after failure", failed, Snapshot{Phase: status.PhaseReady, Drift: true}, []string{Recovered, Drifted}},
		{"failing, new generation, fails again: told once", Snapshot{Phase: status.PhaseReconciling, Conditions: failingC}, failed, nil},
		{"failing, new generation, succeeds", Snapshot{Phase: status.PhaseReconciling, Conditions: failingC}, ready, []string{Recovered}},
		{"stalled, new generation, succeeds", Snapshot{Phase: status.PhaseReconciling, Conditions: []status.Condition{{Type: status.Ready, Status: status.False, Reason: status.ReasonStalled}}}, ready, []string{Recovered}},
		{"Ready False for another reason is not a failure", Snapshot{Phase: status.PhaseReconciling, Conditions: []status.Condition{{Type: status.Ready, Status: status.False, Reason: "WaitingForDependency"}}}, ready, nil},
		{"stalled condition False", ready, Snapshot{Phase: status.PhaseReady, Conditions: []status.Condition{{Type: status.Stalled, Status: status.False}}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Events(tc.before, tc.after); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Events = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestApprovalEvents: the gate of policies is told by the condition Approved's transitions.
func TestApprovalEvents(t *testing.T) {
	t.Parallel()
	approved := func(st, reason, msg string) status.Condition {
		return status.Condition{Type: status.Approved, Status: st, Reason: reason, Message: msg}
	}
	stall := func(reason string) []status.Condition {
		return []status.Condition{{Type: status.Stalled, Status: status.True, Reason: reason},
			{Type: status.Ready, Status: status.False, Reason: status.ReasonStalled}}
	}
	snap := func(phase string, conds ...status.Condition) Snapshot {
		return Snapshot{Phase: phase, Conditions: conds}
	}
	waitA := approved(status.False, status.ReasonApprovalRequired, "needs a DBA — plan aaaaaaaaaaaa: 1 to destroy")
	waitB := approved(status.False, status.ReasonApprovalRequired, "needs a DBA — plan bbbbbbbbbbbb: 1 to replace")
	ok := approved(status.True, status.ReasonApproved, "approved by token:dba (policy p, plan aaaaaaaaaaaa)")
	allowed := approved(status.True, status.ReasonPolicyAllowed, "")
	rejected := approved(status.False, status.ReasonRejected, "rejected by token:dba: not today")
	denied := approved(status.False, status.ReasonPolicyDenied, "production databases are not deleted")
	stalledDenied := Snapshot{Phase: status.PhaseFailed, Conditions: append(stall(status.ReasonPolicyDenied), denied)}
	// applied is a resource Ready at generation 1; newGen its state once generation gen of
	// s is waiting to be reconciled.
	at := time.Unix(0, 0)
	applied, _ := status.Result(status.Created(at), status.Outcome{Generation: 1, CurrentGeneration: 1, Done: true}, at)
	newGen := func(s status.State, gen int64) Snapshot {
		n := status.NewGeneration(s, gen, at)
		return Snapshot{Phase: n.Phase, Conditions: n.Conditions}
	}
	for _, tc := range []struct {
		name          string
		before, after Snapshot
		want          []string
	}{
		{"a wait begins", snap(status.PhaseReady), snap(status.PhasePending, waitA), []string{ApprovalRequired}},
		{"a wait begins after an allowed change", snap(status.PhaseReady, allowed), snap(status.PhasePending, waitA), []string{ApprovalRequired}},
		{"the same wait is told once", snap(status.PhasePending, waitA), snap(status.PhasePending, waitA), nil},
		{"a new plan to approve", snap(status.PhasePending, waitA), snap(status.PhasePending, waitB), []string{ApprovalRequired}},
		{"approved and applied", snap(status.PhasePending, waitA), snap(status.PhaseReady, ok), []string{Approved}},
		{"approved is told once", snap(status.PhaseReady, ok), snap(status.PhaseReady, ok), nil},
		{"approved after a failure", Snapshot{Phase: status.PhasePending, Conditions: []status.Condition{
			{Type: status.Ready, Status: status.False, Reason: status.ReasonActionFailed}, waitA}}, snap(status.PhaseReady, ok),
			[]string{Recovered, Approved}},
		{"allowed by the policies is not told", snap(status.PhaseReconciling), snap(status.PhaseReady, allowed), nil},
		{"rejected replaces stalled", snap(status.PhasePending, waitA),
			Snapshot{Phase: status.PhaseFailed, Conditions: append(stall(status.ReasonRejected), rejected)}, []string{Rejected}},
		{"denied replaces stalled", snap(status.PhaseReconciling), stalledDenied, []string{PolicyDenied}},
		{"denied stays denied", stalledDenied, stalledDenied, nil},
		{"a new generation denied again", snap(status.PhaseReconciling, denied), stalledDenied, []string{PolicyDenied}},
		{"denied, then allowed and applied", stalledDenied, snap(status.PhaseReady, allowed), []string{Recovered}},
		{"denied, a new generation applied", newGen(status.Refused(applied, 2, false, status.ReasonPolicyDenied, "no", at), 3),
			snap(status.PhaseReady, allowed), []string{Recovered}},
		{"rejected, a new generation applied", newGen(status.Refused(applied, 2, false, status.ReasonRejected, "rejected by token:dba: no", at), 3),
			snap(status.PhaseReady, allowed), []string{Recovered}},
		{"denied, a new generation fails", newGen(status.Refused(applied, 2, false, status.ReasonPolicyDenied, "no", at), 3),
			Snapshot{Phase: status.PhaseFailed, Conditions: []status.Condition{{Type: status.Ready, Status: status.False, Reason: status.ReasonActionFailed}, allowed}},
			[]string{Failed}},
		{"a stall of the action's own is still Stalled", snap(status.PhaseReady, allowed),
			Snapshot{Phase: status.PhaseFailed, Conditions: append(stall(status.ReasonActionRejected), allowed)}, []string{Stalled}},
		{"an approved delete finished", snap(status.PhaseDeleting, waitA), Snapshot{Removed: true, Conditions: []status.Condition{ok}},
			[]string{Approved, Deleted}},
		{"drift corrected after approval", snap(status.PhasePending, waitA), Snapshot{Phase: status.PhaseReady, Conditions: []status.Condition{ok}, Drift: true},
			[]string{Approved, Drifted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Events(tc.before, tc.after); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Events = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSyncFailureEvent(t *testing.T) {
	t.Parallel()
	for reason, want := range map[string]string{"ValidationFailed": SourceRejected, "Conflict": SourceRejected, "FetchFailed": "", "": ""} {
		if got := SyncFailureEvent(reason); got != want {
			t.Errorf("SyncFailureEvent(%q) = %q, want %q", reason, got, want)
		}
	}
}

// TestSourceEvents: a refusal of the prune guard is told once per revision, reason and
// message; a sync failure refused for its content once per failure.
func TestSourceEvents(t *testing.T) {
	t.Parallel()
	refusal := func(reason, msg string) status.Condition {
		return status.Condition{Type: status.PruneSkipped, Status: status.True, Reason: reason, Message: msg}
	}
	ready := status.Condition{Type: status.Ready, Status: status.True, Reason: "Succeeded"}
	rejected := status.Condition{Type: status.Ready, Status: status.False, Reason: "ValidationFailed", Message: "bad"}
	fetch := status.Condition{Type: status.Ready, Status: status.False, Reason: "FetchFailed", Message: "no route"}
	src := func(rev, attempted string, conds ...status.Condition) Source {
		return Source{Revision: rev, Attempted: attempted, Conditions: conds}
	}
	for _, tc := range []struct {
		name          string
		before, after Source
		want          []string
	}{
		{"applied, nothing refused", src("r1", "r1", ready), src("r2", "r2", ready), nil},
		{"a first refusal", src("r1", "r1", ready), src("r2", "r2", ready, refusal("EmptyRender", "m")), []string{PruneSkipped}},
		{"the same refusal of the same revision", src("r2", "r2", ready, refusal("EmptyRender", "m")), src("r2", "r2", ready, refusal("EmptyRender", "m")), nil},
		{"the same refusal of another revision", src("r1", "r1", ready, refusal("EmptyRender", "m")), src("r2", "r2", ready, refusal("EmptyRender", "m")), []string{PruneSkipped}},
		{"another guard", src("r2", "r2", ready, refusal("EmptyRender", "m")), src("r2", "r2", ready, refusal("TooManyDeletions", "m")), []string{PruneSkipped}},
		{"other numbers", src("r2", "r2", ready, refusal("EmptyRender", "m")), src("r2", "r2", ready, refusal("EmptyRender", "m2")), []string{PruneSkipped}},
		{"a refusal shown False is no refusal", src("r1", "r1", ready), src("r2", "r2", ready,
			status.Condition{Type: status.PruneSkipped, Status: status.False}), nil},
		{"a revision rejected", src("r1", "r1", ready), src("r1", "r2", rejected), []string{SourceRejected}},
		{"rejected again at the next poll", src("r1", "r2", rejected), src("r1", "r2", rejected), nil},
		{"another revision rejected", src("r1", "r2", rejected), src("r1", "r3", rejected), []string{SourceRejected}},
		{"a fetch failure is retried quietly", src("r1", "r1", ready), src("r1", "r1", fetch), nil},
		{"a failure leaves a standing refusal alone", src("r1", "r1", ready, refusal("EmptyRender", "m")), src("r1", "r2", rejected, refusal("EmptyRender", "m")), []string{SourceRejected}},
	} {
		if got := SourceEvents(tc.before, tc.after); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
