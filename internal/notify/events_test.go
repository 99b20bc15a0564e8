package notify

import (
	"reflect"
	"testing"

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

func TestSyncFailureEvent(t *testing.T) {
	t.Parallel()
	for reason, want := range map[string]string{"ValidationFailed": SourceRejected, "Conflict": SourceRejected, "FetchFailed": "", "": ""} {
		if got := SyncFailureEvent(reason); got != want {
			t.Errorf("SyncFailureEvent(%q) = %q, want %q", reason, got, want)
		}
	}
}
