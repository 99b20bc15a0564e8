package status

import "testing"

// A change window's hold: each state keeps the invariants of Check with work pending, shows
// the window on Reconciling and leaves Ready as it was; WindowPassed ends it.
func TestWindowHeld(t *testing.T) {
	t.Parallel()
	const msg = "change window freeze (deny) holds changes until 2026-11-30T00:00:00+01:00"
	created := Created(at(0))
	ready, _ := Result(created, Outcome{Generation: 1, CurrentGeneration: 1, Done: true}, at(2))
	failed, _ := Result(ready, Outcome{Generation: 1, CurrentGeneration: 1, Err: "boom"}, at(3))
	stalled, _ := Result(ready, Outcome{Generation: 1, CurrentGeneration: 1, Err: "bad spec", Terminal: true}, at(3))
	for _, tc := range []struct {
		name     string
		s        State
		gen      int64
		phase    string
		observed int64
		ready    cond
	}{
		{"a create", WindowHeld(created, false, msg, stepAt), 1, PhasePending, 0, c(Unknown, ReasonPending)},
		{"a drift correction of a Ready resource", WindowHeld(ready, false, msg, stepAt), 1, PhaseReady, 1, c(True, ReasonReconciled)},
		{"a new generation", WindowHeld(NewGeneration(ready, 2, at(3)), false, msg, stepAt), 2, PhaseReconciling, 1, c(Unknown, ReasonNewGeneration)},
		{"a retry", WindowHeld(failed, false, msg, stepAt), 1, PhaseFailed, 1, c(False, ReasonActionFailed)},
		{"a new generation of a stalled resource", WindowHeld(NewGeneration(stalled, 2, at(4)), false, msg, stepAt), 2, PhaseReconciling, 1,
			c(False, ReasonStalled)},
		{"a delete", WindowHeld(DeletionRequested(ready, at(3)), true, msg, stepAt), 1, PhaseDeleting, 1, c(Unknown, ReasonDeleting)},
	} {
		if err := Check(tc.s, tc.gen, true); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if tc.s.Phase != tc.phase || tc.s.ObservedGeneration != tc.observed {
			t.Errorf("%s: phase %s observed %d; want %s %d", tc.name, tc.s.Phase, tc.s.ObservedGeneration, tc.phase, tc.observed)
		}
		rec, _ := Get(tc.s.Conditions, Reconciling)
		got, _ := Get(tc.s.Conditions, Ready)
		if rec.Status != True || rec.Reason != ReasonWindowClosed || rec.Message != msg || got.Status != tc.ready.status || got.Reason != tc.ready.reason {
			t.Errorf("%s: Reconciling %+v Ready %+v", tc.name, rec, got)
		}
		if _, ok := Get(tc.s.Conditions, Stalled); ok {
			t.Errorf("%s: Stalled while held", tc.name)
		}
	}

	// Held again with another message moves no transition time; a passed window leaves the
	// Ready resource as it was before the hold.
	first := WindowHeld(ready, false, msg, at(5))
	again := WindowHeld(first, false, "another", stepAt)
	a, _ := Get(first.Conditions, Reconciling)
	b, _ := Get(again.Conditions, Reconciling)
	if !a.LastTransitionTime.Equal(b.LastTransitionTime) {
		t.Errorf("Reconciling moved from %v to %v held again", a.LastTransitionTime, b.LastTransitionTime)
	}
	if passed := WindowPassed(again); !equal(passed, ready) {
		t.Errorf("passed %+v; want %+v", passed, ready)
	}
	// Once the window lets it proceed, the call's start says so.
	if s, _ := Start(WindowHeld(NewGeneration(ready, 2, at(3)), false, msg, at(4)), 2, false, stepAt); s.Phase != PhaseReconciling {
		t.Errorf("started after a hold: phase %s", s.Phase)
	} else if rec, _ := Get(s.Conditions, Reconciling); rec.Reason != ReasonProgressing {
		t.Errorf("started after a hold: Reconciling %+v", rec)
	}
	if gen2 := NewGeneration(ready, 2, at(3)); !equal(WindowPassed(gen2), gen2) {
		t.Error("WindowPassed removed a Reconciling no window set")
	}
}

// The call of a change a window held starts: whatever the branch of Start (a new generation,
// a retry, a manual request or drift correction at the observed generation, a delete), the
// hold no longer shows on Reconciling.
func TestStartReplacesWindowHold(t *testing.T) {
	t.Parallel()
	const msg = "change window freeze (deny) holds changes until 2026-11-30T00:00:00+01:00"
	created := Created(at(0))
	ready, _ := Result(created, Outcome{Generation: 1, CurrentGeneration: 1, Done: true}, at(2))
	failed, _ := Result(ready, Outcome{Generation: 1, CurrentGeneration: 1, Err: "boom"}, at(3))
	for _, tc := range []struct {
		name     string
		held     State
		gen      int64
		deleting bool
		reason   string
	}{
		{"a create", WindowHeld(created, false, msg, stepAt), 1, false, ReasonProgressing},
		{"a new generation", WindowHeld(NewGeneration(ready, 2, at(3)), false, msg, stepAt), 2, false, ReasonProgressing},
		{"a retry", WindowHeld(failed, false, msg, stepAt), 1, false, ReasonProgressing},
		// A Ready resource's call shows as any such call does: no Reconciling (its resync
		// may find nothing to do, and InSync then leaves nothing behind).
		{"a manual request or drift correction", WindowHeld(ready, false, msg, stepAt), 1, false, ""},
		{"a delete", WindowHeld(DeletionRequested(ready, at(3)), true, msg, stepAt), 1, true, ReasonDeleting},
	} {
		s, _ := Start(tc.held, tc.gen, tc.deleting, at(9))
		rec, ok := Get(s.Conditions, Reconciling)
		if tc.reason == "" {
			if ok {
				t.Errorf("%s: Reconciling %+v; want none", tc.name, rec)
			}
			if in := InSync(WindowPassed(s), tc.gen, tc.gen, false, at(10)); in.Phase != PhaseReady || len(in.Conditions) != len(ready.Conditions) {
				t.Errorf("%s, then in sync: %+v; want %+v", tc.name, in, ready)
			}
			continue
		}
		if !ok || rec.Status != True || rec.Reason != tc.reason {
			t.Errorf("%s: Reconciling %+v; want True %s", tc.name, rec, tc.reason)
		}
	}
}

// A hold leaves nothing behind on the paths that end it without a call's result: drift left
// in place (a type switched to detect) and a wait for dependencies at the observed generation.
func TestWindowHoldEndsWithoutResult(t *testing.T) {
	t.Parallel()
	const msg = "change window freeze (deny) holds changes until 2026-11-30T00:00:00+01:00"
	ready, _ := Result(Created(at(0)), Outcome{Generation: 1, CurrentGeneration: 1, Done: true}, at(2))
	held := WindowHeld(ready, false, msg, stepAt)
	left, _ := DriftLeft(held, 1, 1, false, "drift detected", at(5))
	if rec, ok := Get(left.Conditions, Reconciling); ok {
		t.Errorf("drift left after a hold: Reconciling %+v", rec)
	}
	waits := Dependencies(held, 1, false, "Network/prod/vpc (Pending)", at(5))
	if rec, _ := Get(waits.Conditions, Reconciling); rec.Reason != ReasonWaitingForDependency {
		t.Errorf("a held change waiting for dependencies: Reconciling %+v", rec)
	}
}
