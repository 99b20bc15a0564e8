package status

import (
	"testing"
	"time"
)

// checkInvariants asserts DESIGN §8 on one outcome.
func checkInvariants(t *testing.T, name string, conds []Condition, observed, generation int64) {
	t.Helper()
	ready, ok := Get(conds, Ready)
	if !ok {
		t.Errorf("%s: Ready missing", name)
	}
	st, stalled := Get(conds, Stalled)
	if stalled && st.Status == True && ready.Status != False {
		t.Errorf("%s: Stalled=True but Ready=%s", name, ready.Status)
	}
	if _, rec := Get(conds, Reconciling); rec && stalled {
		t.Errorf("%s: Reconciling and Stalled together", name)
	}
	if observed > generation {
		t.Errorf("%s: observed %d > generation %d", name, observed, generation)
	}
	if observed < generation && ready.Status == True {
		t.Errorf("%s: observed %d < generation %d with Ready=True", name, observed, generation)
	}
}

func TestApplyKeepsInvariants(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name      string
		o         Outcome
		wantPhase string
		wantReady string
	}{
		{"done", Outcome{Generation: 1, CurrentGeneration: 1, Done: true}, PhaseReady, True},
		{"in progress", Outcome{Generation: 1, CurrentGeneration: 1, InProgress: true}, PhaseReconciling, Unknown},
		{"failed", Outcome{Generation: 1, CurrentGeneration: 1, Err: "boom"}, PhaseFailed, False},
		{"stalled", Outcome{Generation: 1, CurrentGeneration: 1, Err: "bad spec", Terminal: true}, PhaseFailed, False},
		{"done but newer generation waiting", Outcome{Generation: 1, CurrentGeneration: 2, Done: true}, PhaseReconciling, Unknown},
		{"failed with newer generation waiting", Outcome{Generation: 1, CurrentGeneration: 2, Err: "x"}, PhaseReconciling, False},
	}
	for _, tc := range cases {
		// From every earlier state, including Stalled and Ready.
		for _, prev := range []Outcome{{}, {Generation: 1, CurrentGeneration: 1, Done: true}, {Generation: 1, CurrentGeneration: 1, Err: "e", Terminal: true}} {
			var conds []Condition
			var observed int64
			if prev.Generation > 0 {
				_, conds, observed = Apply(Initial(t0), 0, prev, t0)
			} else {
				conds = Initial(t0)
			}
			phase, got, obs := Apply(conds, observed, tc.o, t0.Add(time.Minute))
			if phase != tc.wantPhase {
				t.Errorf("%s: phase %s, want %s", tc.name, phase, tc.wantPhase)
			}
			if r, _ := Get(got, Ready); r.Status != tc.wantReady {
				t.Errorf("%s: Ready=%s, want %s", tc.name, r.Status, tc.wantReady)
			}
			checkInvariants(t, tc.name, got, obs, tc.o.CurrentGeneration)
		}
	}
}

func TestTransitionTimeMovesOnlyOnFlip(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := Set(nil, Condition{Type: Ready, Status: False, Reason: "A"}, t0)
	c = Set(c, Condition{Type: Ready, Status: False, Reason: "B", Message: "changed"}, t0.Add(time.Hour))
	if r, _ := Get(c, Ready); !r.LastTransitionTime.Equal(t0) || r.Reason != "B" {
		t.Errorf("same status: %+v", r)
	}
	c = Set(c, Condition{Type: Ready, Status: True}, t0.Add(2*time.Hour))
	if r, _ := Get(c, Ready); !r.LastTransitionTime.Equal(t0.Add(2 * time.Hour)) {
		t.Errorf("flip: %+v", r)
	}
	c = Set(c, Condition{Type: "Custom", Status: True}, t0)
	c = Set(c, Condition{Type: Synced, Status: True}, t0)
	if c[0].Type != Ready || c[1].Type != Synced || c[2].Type != "Custom" {
		t.Errorf("order %v", c)
	}
}
