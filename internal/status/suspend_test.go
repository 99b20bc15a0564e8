package status

import (
	"testing"
	"time"
)

func TestSuspendResume(t *testing.T) {
	t.Parallel()
	t1 := t0.Add(time.Minute)
	ready := State{Phase: PhaseReady, ObservedGeneration: 2, Conditions: []Condition{
		{Type: Ready, Status: True, Reason: ReasonReconciled, LastTransitionTime: t0, ObservedGeneration: 2},
		{Type: Synced, Status: True, Reason: ReasonActionOK, LastTransitionTime: t0, ObservedGeneration: 2},
	}}
	pending := NewGeneration(ready, 3, t0)
	stalled, _ := Result(State{Phase: PhaseReconciling, ObservedGeneration: 1, Conditions: Created(t0).Conditions},
		Outcome{Generation: 2, CurrentGeneration: 2, Err: "bad spec", Terminal: true}, t0)
	suspendedBy := func(s State, actor, reason string) State { return Suspend(s, actor, reason, t0) }

	tests := []struct {
		name     string
		prev     State
		step     func(State) State
		gen      int64
		pending  bool
		wantMsg  string // "" wants no Suspended condition
		wantTime time.Time
		only     bool // the step is Suspend or Resume: phase and the standard conditions stay
	}{
		{"suspend a Ready resource", ready, func(s State) State { return Suspend(s, "token:ci-bot", "fixing by hand", t1) }, 2, false,
			"suspended by token:ci-bot: fixing by hand", t1, true},
		{"suspend without a reason", ready, func(s State) State { return Suspend(s, "user:ann", "", t1) }, 2, false, "suspended by user:ann", t1, true},
		{"suspend with work pending keeps Reconciling=True", pending, func(s State) State { return Suspend(s, "user:ann", "", t1) }, 3, true,
			"suspended by user:ann", t1, true},
		{"suspend a Stalled resource keeps Stalled", stalled, func(s State) State { return Suspend(s, "user:ann", "", t1) }, 2, false,
			"suspended by user:ann", t1, true},
		{"suspend again: new actor, same transition time", suspendedBy(ready, "user:ann", "a"),
			func(s State) State { return Suspend(s, "user:bob", "b", t1) }, 2, false, "suspended by user:bob: b", t0, true},
		{"resume removes the condition", suspendedBy(ready, "user:ann", ""), Resume, 2, false, "", time.Time{}, true},
		{"resume with work pending", suspendedBy(pending, "user:ann", ""), Resume, 3, true, "", time.Time{}, true},
		{"resume of a resource not suspended changes nothing", ready, Resume, 2, false, "", time.Time{}, true},
		{"a new generation while suspended keeps Suspended", suspendedBy(ready, "user:ann", ""),
			func(s State) State { return NewGeneration(s, 3, t1) }, 3, true, "suspended by user:ann", t0, false},
		{"a claim after resume of pending work", Resume(suspendedBy(pending, "user:ann", "")),
			func(s State) State { st, _ := Start(s, 3, false, t1); return st }, 3, true, "", time.Time{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.step(tc.prev)
			c, ok := Get(got.Conditions, Suspended)
			switch {
			case tc.wantMsg == "" && ok:
				t.Errorf("Suspended = %+v, want absent", c)
			case tc.wantMsg != "" && (!ok || c.Status != True || c.Reason != ReasonSuspended || c.Message != tc.wantMsg || !c.LastTransitionTime.Equal(tc.wantTime)):
				t.Errorf("Suspended = %+v (present %v), want True %s %q at %s", c, ok, ReasonSuspended, tc.wantMsg, tc.wantTime)
			}
			if IsSuspended(got.Conditions) != (tc.wantMsg != "") {
				t.Errorf("IsSuspended = %v", !(tc.wantMsg != ""))
			}
			// Everything else is the previous state's (or the step's own rule's).
			for _, typ := range []string{Ready, Reconciling, Stalled, Synced} {
				p, pok := Get(tc.prev.Conditions, typ)
				g, gok := Get(got.Conditions, typ)
				if tc.only && (pok != gok || p.Status != g.Status || p.Reason != g.Reason) {
					t.Errorf("%s changed: %+v → %+v", typ, p, g)
				}
			}
			if tc.only && got.Phase != tc.prev.Phase {
				t.Errorf("phase %s → %s", tc.prev.Phase, got.Phase)
			}
			if err := Check(got, tc.gen, tc.pending); err != nil {
				t.Errorf("invariant: %v", err)
			}
		})
	}
}

func TestSuspendedWork(t *testing.T) {
	t.Parallel()
	retrying := []Condition{{Type: Reconciling, Status: True, Reason: ReasonRetrying}, {Type: Ready, Status: False, Reason: ReasonActionFailed}}
	stalled := []Condition{{Type: Stalled, Status: True, Reason: ReasonActionRejected}, {Type: Ready, Status: False, Reason: ReasonStalled}}
	for _, tc := range []struct {
		phase string
		conds []Condition
		want  string
	}{
		{PhasePending, nil, "generation 3 pending"},
		{PhaseReconciling, nil, "generation 3 pending"},
		{PhaseDeleting, nil, "deletion pending"},
		{PhaseReady, nil, ""},
		{PhaseFailed, retrying, "retry pending"},
		{PhaseFailed, retrying[1:], "retry pending"}, // only Ready known (the dashboard's list)
		{PhaseFailed, stalled, ""},
	} {
		if got := SuspendedWork(tc.phase, 3, tc.conds); got != tc.want {
			t.Errorf("SuspendedWork(%s, 3, %v) = %q, want %q", tc.phase, tc.conds, got, tc.want)
		}
	}
}
