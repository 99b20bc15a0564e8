package status

import (
	"fmt"
	"testing"
	"time"
)

// t0 is the time of the first fixture step; fixtures advance by whole minutes and every table
// step runs at stepAt, so a lastTransitionTime tells which step set it.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }

var stepAt = at(10)

// any in a wanted phase or reason accepts whatever the rules chose (only used where the test
// asserts an invariant, not a particular wording).
const anyValue = "*"

// cond is a wanted condition; the zero value means the condition must be absent.
type cond struct{ status, reason string }

var absent = cond{}

func c(status, reason string) cond { return cond{status, reason} }

// want is the expected result of one transition.
type want struct {
	phase                               string
	observed                            int64
	ready, reconciling, stalled, synced cond
	removed, changed                    bool
}

// out is what one step returned. reported is set when the function itself returns changed
// (Start); otherwise changed is derived by comparing with the previous state.
type out struct {
	s                State
	removed, changed bool
	reported         bool
}

type stepFn func(prev State, now time.Time) out

func createStep() stepFn {
	return func(_ State, now time.Time) out { return out{s: Created(now)} }
}

func startStep(gen int64, deleting bool) stepFn {
	return func(p State, now time.Time) out {
		s, ch := Start(p, gen, deleting, now)
		return out{s: s, changed: ch, reported: true}
	}
}

func resultStep(o Outcome) stepFn {
	return func(p State, now time.Time) out {
		s, rm := Result(p, o, now)
		return out{s: s, removed: rm}
	}
}

func newGenStep(gen int64) stepFn {
	return func(p State, now time.Time) out { return out{s: NewGeneration(p, gen, now)} }
}

func inSyncStep(gen, cur int64, deleting bool) stepFn {
	return func(p State, now time.Time) out { return out{s: InSync(p, gen, cur, deleting, now)} }
}

func callStartedStep(claimedGen int64, claimedDeleting bool, gen int64, deleting bool) stepFn {
	return func(p State, now time.Time) out {
		s, ch := CallStarted(p, claimedGen, claimedDeleting, gen, deleting, now)
		return out{s: s, changed: ch, reported: true}
	}
}

func releasedStep(gen int64, deleting, started bool) stepFn {
	return func(p State, now time.Time) out {
		s, interrupted := Released(p, gen, deleting, started, "replica-a", now)
		return out{s: s, changed: interrupted, reported: interrupted}
	}
}

func interruptedStep(gen int64, deleting bool) stepFn {
	return func(p State, now time.Time) out { return out{s: Interrupted(p, gen, deleting, "replica-a", now)} }
}

// Outcomes at generation 1 with the resource still at generation 1.
var (
	oDone       = Outcome{Generation: 1, CurrentGeneration: 1, Done: true}
	oDrift      = Outcome{Generation: 1, CurrentGeneration: 1, Done: true, Drift: true}
	oInProgress = Outcome{Generation: 1, CurrentGeneration: 1, InProgress: true}
	oFail       = Outcome{Generation: 1, CurrentGeneration: 1, Err: "boom"}
	oTerminal   = Outcome{Generation: 1, CurrentGeneration: 1, Err: "invalid spec", Terminal: true}
	oDelFail    = Outcome{Generation: 1, CurrentGeneration: 1, Delete: true, Deleting: true, Err: "delete refused"}
	oDelWait    = Outcome{Generation: 1, CurrentGeneration: 1, Delete: true, Deleting: true, InProgress: true}
	oDelOK      = Outcome{Generation: 1, CurrentGeneration: 1, Delete: true, Deleting: true, Done: true}
)

// Fixtures: realistic earlier states, each built by the transitions themselves.

func fxCreated() State { return Created(at(0)) }

func fxClaimed() State { s, _ := Start(fxCreated(), 1, false, at(1)); return s }

func fxReady() State { s, _ := Result(fxClaimed(), oDone, at(2)); return s }

func fxFailed() State { s, _ := Result(fxClaimed(), oFail, at(2)); return s }

func fxStalled() State { s, _ := Result(fxClaimed(), oTerminal, at(2)); return s }

// fxReadyGen2 is a Ready resource after the syncer stored generation 2.
func fxReadyGen2() State { return NewGeneration(fxReady(), 2, at(3)) }

// fxReadyGen2Claimed is a worker running generation 2 of a resource Ready at generation 1.
func fxReadyGen2Claimed() State { s, _ := Start(fxReadyGen2(), 2, false, at(4)); return s }

// fxDeleteClaimedStalled is a Stalled resource whose manifest went away, its delete running.
func fxDeleteClaimedStalled() State { s, _ := Start(fxStalled(), 1, true, at(3)); return s }

// fxReadyDeleteClaimed is a Ready resource whose manifest went away, its delete running.
func fxReadyDeleteClaimed() State { s, _ := Start(fxReady(), 1, true, at(3)); return s }

// fxDeleteFailed is a delete whose attempt failed (retried).
func fxDeleteFailed() State { s, _ := Result(fxDeleteClaimedStalled(), oDelFail, at(4)); return s }

// pendingAfter is whether work is still to do after s: everything but a Ready resource at its
// current generation, a Stalled one, or a removed row.
func pendingAfter(s State, gen int64, removed bool) bool {
	if removed {
		return false
	}
	if st, _ := Get(s.Conditions, Stalled); st.Status == True {
		return false
	}
	if r, _ := Get(s.Conditions, Ready); r.Status == True && s.ObservedGeneration >= gen {
		return false
	}
	return true
}

// assertTransition checks one step's result against w and the invariants: Check, conditions
// unique per type, and lastTransitionTime moving exactly when a condition's status flips.
func assertTransition(t *testing.T, prev State, gen int64, got out, w want, now time.Time) {
	t.Helper()
	s := got.s
	changed := !equal(prev, s)
	if got.reported && got.changed != changed {
		t.Errorf("reported changed=%v but the state %s", got.changed, map[bool]string{true: "differs", false: "is identical"}[changed])
	}
	if changed != w.changed {
		t.Errorf("changed=%v, want %v", changed, w.changed)
	}
	if got.removed != w.removed {
		t.Errorf("removed=%v, want %v", got.removed, w.removed)
	}
	if w.phase != anyValue && s.Phase != w.phase {
		t.Errorf("phase %q, want %q", s.Phase, w.phase)
	}
	if s.ObservedGeneration != w.observed {
		t.Errorf("observedGeneration %d, want %d", s.ObservedGeneration, w.observed)
	}
	for _, wc := range []struct {
		typ  string
		want cond
	}{{Ready, w.ready}, {Reconciling, w.reconciling}, {Stalled, w.stalled}, {Synced, w.synced}} {
		gc, ok := Get(s.Conditions, wc.typ)
		switch {
		case wc.want == absent && ok:
			t.Errorf("%s=%s (%s) present, want absent", wc.typ, gc.Status, gc.Reason)
		case wc.want != absent && !ok:
			t.Errorf("%s absent, want %s (%s)", wc.typ, wc.want.status, wc.want.reason)
		case ok && (gc.Status != wc.want.status || (wc.want.reason != anyValue && gc.Reason != wc.want.reason)):
			t.Errorf("%s=%s (%s), want %s (%s)", wc.typ, gc.Status, gc.Reason, wc.want.status, wc.want.reason)
		}
	}
	assertUnique(t, s.Conditions)
	assertTransitionTimes(t, prev.Conditions, s.Conditions, now)
	if err := Check(s, gen, pendingAfter(s, gen, got.removed)); err != nil {
		t.Errorf("Check(gen %d, pending %v): %v\nstate: %s", gen, pendingAfter(s, gen, got.removed), err, dump(s))
	}
}

func assertUnique(t *testing.T, conds []Condition) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range conds {
		if seen[c.Type] {
			t.Errorf("condition %s appears twice: %v", c.Type, conds)
		}
		seen[c.Type] = true
	}
}

// assertTransitionTimes: a condition whose status did not flip keeps its lastTransitionTime; a
// condition that flipped or appeared carries now (DESIGN §8).
func assertTransitionTimes(t *testing.T, prev, next []Condition, now time.Time) {
	t.Helper()
	for _, nc := range next {
		pc, ok := Get(prev, nc.Type)
		switch {
		case ok && pc.Status == nc.Status && !nc.LastTransitionTime.Equal(pc.LastTransitionTime):
			t.Errorf("%s stayed %s but lastTransitionTime moved %s → %s", nc.Type, nc.Status,
				pc.LastTransitionTime.Format(time.TimeOnly), nc.LastTransitionTime.Format(time.TimeOnly))
		case (!ok || pc.Status != nc.Status) && !nc.LastTransitionTime.Equal(now):
			t.Errorf("%s flipped to %s but lastTransitionTime is %s, want %s", nc.Type, nc.Status,
				nc.LastTransitionTime.Format(time.TimeOnly), now.Format(time.TimeOnly))
		}
	}
}

func dump(s State) string {
	out := fmt.Sprintf("phase=%s observed=%d", s.Phase, s.ObservedGeneration)
	for _, c := range s.Conditions {
		out += fmt.Sprintf(" %s=%s(%s)", c.Type, c.Status, c.Reason)
	}
	return out
}

// TestTransitions names every transition of the status model and asserts its whole result.
func TestTransitions(t *testing.T) {
	t.Parallel()
	T, F, U := True, False, Unknown
	cases := []struct {
		name string
		prev State
		gen  int64 // the resource's generation after the step, for Check
		step stepFn
		want want
	}{
		// Creation.
		{"create → Created", State{}, 1, createStep(), want{phase: PhasePending, observed: 0,
			ready: c(U, ReasonPending), reconciling: c(T, ReasonPending), changed: true}},

		// Calls starting (Start).
		{"start: first reconcile of a created resource", fxCreated(), 1, startStep(1, false), want{phase: PhaseReconciling,
			ready: c(U, ReasonPending), reconciling: c(T, ReasonProgressing), changed: true}},
		{"start: new generation of a Ready resource", fxReadyGen2(), 2, startStep(2, false), want{phase: PhaseReconciling, observed: 1,
			ready: c(U, ReasonNewGeneration), reconciling: c(T, ReasonProgressing), synced: c(T, ReasonActionOK), changed: true}},
		// The store bumps a generation in SQL (readyUnknownSQL) rather than through NewGeneration,
		// so Start must itself keep the invariants when observedGeneration < generation.
		{"start: new generation of a resource still stored Ready=True", fxReady(), 2, startStep(2, false), want{phase: PhaseReconciling, observed: 1,
			ready: c(U, anyValue), reconciling: c(T, ReasonProgressing), synced: c(T, ReasonActionOK), changed: true}},
		{"start: new generation of a resource still stored Stalled=True", fxStalled(), 2, startStep(2, false), want{phase: anyValue, observed: 1,
			ready: c(F, ReasonStalled), reconciling: c(T, ReasonProgressing), synced: c(F, ReasonActionFailed), changed: true}},
		{"start: retry of a Failed resource keeps phase Failed", fxFailed(), 1, startStep(1, false), want{phase: PhaseFailed,
			ready: c(F, ReasonActionFailed), reconciling: c(T, ReasonRetrying), synced: c(F, ReasonActionFailed), changed: false}},
		{"start: delete of a Stalled resource", fxStalled(), 1, startStep(1, true), want{phase: PhaseDeleting, observed: 1,
			ready: c(F, ReasonStalled), reconciling: c(T, ReasonDeleting), synced: c(F, ReasonActionFailed), changed: true}},
		{"start: delete of a Ready resource", fxReady(), 1, startStep(1, true), want{phase: PhaseDeleting, observed: 1,
			ready: c(U, anyValue), reconciling: c(T, ReasonDeleting), synced: c(T, ReasonActionOK), changed: true}},
		{"start: delete of a Failed resource says Deleting", fxFailed(), 1, startStep(1, true), want{phase: PhaseDeleting,
			ready: c(F, ReasonActionFailed), reconciling: c(T, ReasonDeleting), synced: c(F, ReasonActionFailed), changed: true}},
		{"start: delete of a never-reconciled resource", fxCreated(), 1, startStep(1, true), want{phase: PhaseDeleting,
			ready: c(U, ReasonPending), reconciling: c(T, ReasonDeleting), changed: true}},
		{"start: retry of a failed delete changes nothing", fxDeleteFailed(), 1, startStep(1, true), want{phase: PhaseDeleting, observed: 1,
			ready: c(F, ReasonDeleteFailed), reconciling: c(T, ReasonRetrying), synced: c(F, ReasonActionFailed), changed: false}},
		{"start: resync of a Ready resource changes nothing", fxReady(), 1, startStep(1, false), want{phase: PhaseReady, observed: 1,
			ready: c(T, ReasonReconciled), synced: c(T, ReasonActionOK), changed: false}},
		{"start: resync of a Stalled resource changes nothing", fxStalled(), 1, startStep(1, false), want{phase: PhaseFailed, observed: 1,
			ready: c(F, ReasonStalled), stalled: c(T, ReasonActionRejected), synced: c(F, ReasonActionFailed), changed: false}},

		// Results of a reconcile call.
		{"result: success of a first reconcile", fxClaimed(), 1, resultStep(oDone), want{phase: PhaseReady, observed: 1,
			ready: c(T, ReasonReconciled), synced: c(T, ReasonActionOK), changed: true}},
		{"result: success of a new generation", fxReadyGen2Claimed(), 2, resultStep(Outcome{Generation: 2, CurrentGeneration: 2, Done: true}),
			want{phase: PhaseReady, observed: 2, ready: c(T, ReasonReconciled), synced: c(T, ReasonActionOK), changed: true}},
		{"result: success after drift → DriftCorrected", fxReady(), 1, resultStep(oDrift), want{phase: PhaseReady, observed: 1,
			ready: c(T, ReasonDriftCorrected), synced: c(T, ReasonActionOK), changed: true}},
		{"result: success with a reason override", fxClaimed(), 1, resultStep(Outcome{Generation: 1, CurrentGeneration: 1, Done: true, Reason: "Healthy"}),
			want{phase: PhaseReady, observed: 1, ready: c(T, "Healthy"), synced: c(T, ReasonActionOK), changed: true}},
		{"result: resync success of a Ready resource changes nothing", fxReady(), 1, resultStep(oDone), want{phase: PhaseReady, observed: 1,
			ready: c(T, ReasonReconciled), synced: c(T, ReasonActionOK), changed: false}},
		{"result: in progress on a first reconcile", fxClaimed(), 1, resultStep(oInProgress), want{phase: PhaseReconciling,
			ready: c(U, ReasonProgressing), reconciling: c(T, ReasonProgressing), synced: c(T, ReasonActionOK), changed: true}},
		{"result: in progress on a resync of a Ready resource", fxReady(), 1, resultStep(oInProgress), want{phase: PhaseReconciling, observed: 1,
			ready: c(U, ReasonProgressing), reconciling: c(T, ReasonProgressing), synced: c(T, ReasonActionOK), changed: true}},
		{"result: in progress after a failure keeps Ready False", fxFailed(), 1, resultStep(oInProgress), want{phase: PhaseReconciling,
			ready: c(F, ReasonActionFailed), reconciling: c(T, ReasonProgressing), synced: c(T, ReasonActionOK), changed: true}},
		{"result: failure", fxClaimed(), 1, resultStep(oFail), want{phase: PhaseFailed,
			ready: c(F, ReasonActionFailed), reconciling: c(T, ReasonRetrying), synced: c(F, ReasonActionFailed), changed: true}},
		{"result: failure again keeps the state", fxFailed(), 1, resultStep(oFail), want{phase: PhaseFailed,
			ready: c(F, ReasonActionFailed), reconciling: c(T, ReasonRetrying), synced: c(F, ReasonActionFailed), changed: false}},
		{"result: failure of a Ready resource's resync", fxReady(), 1, resultStep(oFail), want{phase: PhaseFailed, observed: 1,
			ready: c(F, ReasonActionFailed), reconciling: c(T, ReasonRetrying), synced: c(F, ReasonActionFailed), changed: true}},
		{"result: terminal failure stalls", fxClaimed(), 1, resultStep(oTerminal), want{phase: PhaseFailed, observed: 1,
			ready: c(F, ReasonStalled), stalled: c(T, ReasonActionRejected), synced: c(F, ReasonActionFailed), changed: true}},
		{"result: terminal failure of a new generation observes it", fxReadyGen2Claimed(), 2,
			resultStep(Outcome{Generation: 2, CurrentGeneration: 2, Err: "invalid spec", Terminal: true}), want{phase: PhaseFailed, observed: 2,
				ready: c(F, ReasonStalled), stalled: c(T, ReasonActionRejected), synced: c(F, ReasonActionFailed), changed: true}},
		{"result: terminal failure after a transient one", fxFailed(), 1, resultStep(oTerminal), want{phase: PhaseFailed, observed: 1,
			ready: c(F, ReasonStalled), stalled: c(T, ReasonActionRejected), synced: c(F, ReasonActionFailed), changed: true}},
		{"result: recovery after failure", fxFailed(), 1, resultStep(oDone), want{phase: PhaseReady, observed: 1,
			ready: c(T, ReasonReconciled), synced: c(T, ReasonActionOK), changed: true}},

		// A reconcile whose resource was marked for deletion during the call.
		{"result: success, marked for deletion during the call", fxClaimed(), 1,
			resultStep(Outcome{Generation: 1, CurrentGeneration: 1, Done: true, Deleting: true}), want{phase: PhaseDeleting, observed: 1,
				ready: c(U, anyValue), reconciling: c(T, ReasonDeletionRequested), synced: c(T, ReasonActionOK), changed: true}},
		{"result: failure, marked for deletion during the call", fxClaimed(), 1,
			resultStep(Outcome{Generation: 1, CurrentGeneration: 1, Err: "boom", Deleting: true}), want{phase: PhaseDeleting,
				ready: c(F, ReasonActionFailed), reconciling: c(T, ReasonDeletionRequested), synced: c(F, ReasonActionFailed), changed: true}},
		{"result: terminal failure, marked for deletion during the call", fxClaimed(), 1,
			resultStep(Outcome{Generation: 1, CurrentGeneration: 1, Err: "invalid spec", Terminal: true, Deleting: true}), want{phase: PhaseDeleting, observed: 1,
				ready: c(F, ReasonStalled), reconciling: c(T, ReasonDeletionRequested), synced: c(F, ReasonActionFailed), changed: true}},

		// Supersede: a newer generation arrived while the attempt ran.
		{"result: success superseded by a newer generation", fxClaimed(), 2,
			resultStep(Outcome{Generation: 1, CurrentGeneration: 2, Done: true}), want{phase: PhaseReconciling, observed: 1,
				ready: c(U, ReasonNewGeneration), reconciling: c(T, ReasonNewGeneration), synced: c(T, ReasonActionOK), changed: true}},
		{"result: resync success of a Ready resource superseded", fxReady(), 2,
			resultStep(Outcome{Generation: 1, CurrentGeneration: 2, Done: true}), want{phase: PhaseReconciling, observed: 1,
				ready: c(U, ReasonNewGeneration), reconciling: c(T, ReasonNewGeneration), synced: c(T, ReasonActionOK), changed: true}},
		{"result: terminal failure superseded", fxClaimed(), 2,
			resultStep(Outcome{Generation: 1, CurrentGeneration: 2, Err: "invalid spec", Terminal: true}), want{phase: PhaseReconciling, observed: 1,
				ready: c(F, ReasonStalled), reconciling: c(T, ReasonNewGeneration), synced: c(F, ReasonActionFailed), changed: true}},
		{"result: failure superseded", fxClaimed(), 2,
			resultStep(Outcome{Generation: 1, CurrentGeneration: 2, Err: "boom"}), want{phase: PhaseReconciling,
				ready: c(F, ReasonActionFailed), reconciling: c(T, ReasonNewGeneration), synced: c(F, ReasonActionFailed), changed: true}},
		{"result: in progress superseded", fxClaimed(), 2,
			resultStep(Outcome{Generation: 1, CurrentGeneration: 2, InProgress: true}), want{phase: PhaseReconciling,
				ready: c(U, ReasonProgressing), reconciling: c(T, ReasonNewGeneration), synced: c(T, ReasonActionOK), changed: true}},

		// Results of the action's Delete.
		{"delete result: failed", fxDeleteClaimedStalled(), 1, resultStep(oDelFail), want{phase: PhaseDeleting, observed: 1,
			ready: c(F, ReasonDeleteFailed), reconciling: c(T, ReasonRetrying), synced: c(F, ReasonActionFailed), changed: true}},
		{"delete result: failed again keeps the state", fxDeleteFailed(), 1, resultStep(oDelFail), want{phase: PhaseDeleting, observed: 1,
			ready: c(F, ReasonDeleteFailed), reconciling: c(T, ReasonRetrying), synced: c(F, ReasonActionFailed), changed: false}},
		{"delete result: in progress", fxDeleteClaimedStalled(), 1, resultStep(oDelWait), want{phase: PhaseDeleting, observed: 1,
			ready: c(F, ReasonStalled), reconciling: c(T, ReasonDeleting), synced: c(T, ReasonActionOK), changed: true}},
		{"delete result: in progress after a failed delete", fxDeleteFailed(), 1, resultStep(oDelWait), want{phase: PhaseDeleting, observed: 1,
			ready: c(F, ReasonDeleteFailed), reconciling: c(T, ReasonDeleting), synced: c(T, ReasonActionOK), changed: true}},
		{"delete result: in progress for a Ready resource", fxReadyDeleteClaimed(), 1, resultStep(oDelWait), want{phase: PhaseDeleting, observed: 1,
			ready: c(U, anyValue), reconciling: c(T, ReasonDeleting), synced: c(T, ReasonActionOK), changed: true}},
		{"delete result: succeeded → removed", fxDeleteClaimedStalled(), 1, resultStep(oDelOK), want{phase: PhaseDeleting, observed: 1,
			ready: c(F, ReasonStalled), reconciling: c(T, ReasonDeleting), synced: c(F, ReasonActionFailed), removed: true, changed: false}},
		{"delete result: succeeded after a failed delete → removed", fxDeleteFailed(), 1, resultStep(oDelOK), want{phase: PhaseDeleting, observed: 1,
			ready: c(F, ReasonDeleteFailed), reconciling: c(T, ReasonRetrying), synced: c(F, ReasonActionFailed), removed: true, changed: false}},
		{"delete result: succeeded but the manifest came back", fxDeleteClaimedStalled(), 1,
			resultStep(Outcome{Generation: 1, CurrentGeneration: 1, Delete: true, Done: true}), want{phase: PhaseReconciling, observed: 1,
				ready: c(F, ReasonStalled), reconciling: c(T, ReasonNewGeneration), synced: c(T, ReasonActionOK), changed: true}},
		{"delete result: succeeded for a Ready resource but the manifest came back", fxReadyDeleteClaimed(), 1,
			resultStep(Outcome{Generation: 1, CurrentGeneration: 1, Delete: true, Done: true}), want{phase: PhaseReconciling, observed: 1,
				ready: c(U, anyValue), reconciling: c(T, ReasonNewGeneration), synced: c(T, ReasonActionOK), changed: true}},
		{"delete result: failed and the manifest came back", fxDeleteClaimedStalled(), 1,
			resultStep(Outcome{Generation: 1, CurrentGeneration: 1, Delete: true, Err: "delete refused"}), want{phase: PhaseReconciling, observed: 1,
				ready: c(F, ReasonDeleteFailed), reconciling: c(T, ReasonNewGeneration), synced: c(F, ReasonActionFailed), changed: true}},

		// New generations stored by the syncer.
		{"new generation: of a Ready resource", fxReady(), 2, newGenStep(2), want{phase: PhaseReconciling, observed: 1,
			ready: c(U, ReasonNewGeneration), reconciling: c(T, ReasonNewGeneration), synced: c(T, ReasonActionOK), changed: true}},
		{"new generation: of a Stalled resource", fxStalled(), 2, newGenStep(2), want{phase: PhaseReconciling, observed: 1,
			ready: c(F, ReasonStalled), reconciling: c(T, ReasonNewGeneration), synced: c(F, ReasonActionFailed), changed: true}},
		{"new generation: of a never-reconciled resource", fxCreated(), 2, newGenStep(2), want{phase: PhasePending,
			ready: c(U, ReasonPending), reconciling: c(T, ReasonNewGeneration), changed: true}},
		{"new generation: of a Failed resource never reconciled", fxFailed(), 2, newGenStep(2), want{phase: PhasePending,
			ready: c(F, ReasonActionFailed), reconciling: c(T, ReasonNewGeneration), synced: c(F, ReasonActionFailed), changed: true}},
		{"new generation: twice in a row", fxReadyGen2(), 3, newGenStep(3), want{phase: PhaseReconciling, observed: 1,
			ready: c(U, ReasonNewGeneration), reconciling: c(T, ReasonNewGeneration), synced: c(T, ReasonActionOK), changed: true}},

		// Resyncs that found nothing to do.
		{"in sync: unchanged", fxReady(), 1, inSyncStep(1, 1, false), want{phase: PhaseReady, observed: 1,
			ready: c(T, ReasonReconciled), synced: c(T, ReasonActionOK), changed: false}},
		{"in sync: a new generation arrived meanwhile", fxReady(), 2, inSyncStep(1, 2, false), want{phase: PhaseReconciling, observed: 1,
			ready: c(U, ReasonNewGeneration), reconciling: c(T, ReasonNewGeneration), synced: c(T, ReasonActionOK), changed: true}},
		{"in sync: marked for deletion meanwhile", fxReady(), 1, inSyncStep(1, 1, true), want{phase: PhaseDeleting, observed: 1,
			ready: c(U, anyValue), reconciling: c(T, ReasonDeletionRequested), synced: c(T, ReasonActionOK), changed: true}},

		// Attempts cut short (replica died or lost its lease).
		{"interrupted: during a first reconcile", fxClaimed(), 1, interruptedStep(1, false), want{phase: PhaseReconciling,
			ready: c(U, ReasonPending), reconciling: c(T, ReasonInterrupted), changed: true}},
		{"interrupted: before the first claim was stored", fxCreated(), 1, interruptedStep(1, false), want{phase: PhaseReconciling,
			ready: c(U, ReasonPending), reconciling: c(T, ReasonInterrupted), changed: true}},
		{"interrupted: during a new generation", fxReadyGen2Claimed(), 2, interruptedStep(2, false), want{phase: PhaseReconciling, observed: 1,
			ready: c(U, ReasonNewGeneration), reconciling: c(T, ReasonInterrupted), synced: c(T, ReasonActionOK), changed: true}},
		{"interrupted: during a retry keeps phase Failed", fxFailed(), 1, interruptedStep(1, false), want{phase: PhaseFailed,
			ready: c(F, ReasonActionFailed), reconciling: c(T, ReasonInterrupted), synced: c(F, ReasonActionFailed), changed: true}},
		{"interrupted: during a delete", fxDeleteFailed(), 1, interruptedStep(1, true), want{phase: PhaseDeleting, observed: 1,
			ready: c(F, ReasonDeleteFailed), reconciling: c(T, ReasonInterrupted), synced: c(F, ReasonActionFailed), changed: true}},
		{"interrupted: during a delete of a Ready resource", fxReadyDeleteClaimed(), 1, interruptedStep(1, true), want{phase: PhaseDeleting, observed: 1,
			ready: c(U, anyValue), reconciling: c(T, ReasonInterrupted), synced: c(T, ReasonActionOK), changed: true}},
		{"interrupted: during a resync of a Ready resource changes nothing", fxReady(), 1, interruptedStep(1, false), want{phase: PhaseReady, observed: 1,
			ready: c(T, ReasonReconciled), synced: c(T, ReasonActionOK), changed: false}},

		// A claimed call starts, the row as it is now.
		{"call started: as claimed", fxCreated(), 1, callStartedStep(1, false, 1, false), want{phase: PhaseReconciling,
			ready: c(U, ReasonPending), reconciling: c(T, ReasonProgressing), changed: true}},
		{"call started: a newer generation was stored since the claim keeps waiting", fxReadyGen2(), 2, callStartedStep(1, false, 2, false),
			want{phase: PhaseReconciling, observed: 1, ready: c(U, ReasonNewGeneration), reconciling: c(T, ReasonNewGeneration), synced: c(T, ReasonActionOK), changed: false}},
		{"call started: deletion requested since the claim keeps waiting for the delete", DeletionRequested(fxReady(), at(3)), 1, callStartedStep(1, false, 1, true),
			want{phase: PhaseDeleting, observed: 1, ready: c(U, anyValue), reconciling: c(T, ReasonDeletionRequested), synced: c(T, ReasonActionOK), changed: false}},
		{"call started: the requested delete runs, Deleting", DeletionRequested(fxReady(), at(3)), 1, callStartedStep(1, true, 1, true),
			want{phase: PhaseDeleting, observed: 1, ready: c(U, anyValue), reconciling: c(T, ReasonDeleting), synced: c(T, ReasonActionOK), changed: true}},
		{"call started: resync of a Ready resource changes nothing", fxReady(), 1, callStartedStep(1, false, 1, false),
			want{phase: PhaseReady, observed: 1, ready: c(T, ReasonReconciled), synced: c(T, ReasonActionOK), changed: false}},
		{"call started: retry of a Failed resource keeps phase Failed", fxFailed(), 1, callStartedStep(1, false, 1, false),
			want{phase: PhaseFailed, ready: c(F, ReasonActionFailed), reconciling: c(T, ReasonRetrying), synced: c(F, ReasonActionFailed), changed: false}},
		{"call started: delete as claimed", fxStalled(), 1, callStartedStep(1, true, 1, true), want{phase: PhaseDeleting, observed: 1,
			ready: c(F, ReasonStalled), reconciling: c(T, ReasonDeleting), synced: c(F, ReasonActionFailed), changed: true}},

		// Leases ending without a result: only a call that started was cut short; a claim
		// still waiting for a worker goes back to the queue as it was.
		{"released: a requested delete never started keeps waiting for it", DeletionRequested(fxReady(), at(3)), 1, releasedStep(1, true, false),
			want{phase: PhaseDeleting, observed: 1, ready: c(U, anyValue), reconciling: c(T, ReasonDeletionRequested), synced: c(T, ReasonActionOK), changed: false}},
		{"released: claimed, never started, a created resource stays Pending", fxCreated(), 1, releasedStep(1, false, false), want{phase: PhasePending,
			ready: c(U, ReasonPending), reconciling: c(T, ReasonPending), changed: false}},
		{"released: claimed, never started, a new generation keeps waiting", fxReadyGen2(), 2, releasedStep(2, false, false), want{phase: PhaseReconciling, observed: 1,
			ready: c(U, ReasonNewGeneration), reconciling: c(T, ReasonNewGeneration), synced: c(T, ReasonActionOK), changed: false}},
		{"released: claimed, never started, a retry keeps its failure", fxFailed(), 1, releasedStep(1, false, false), want{phase: PhaseFailed,
			ready: c(F, ReasonActionFailed), reconciling: c(T, ReasonRetrying), synced: c(F, ReasonActionFailed), changed: false}},
		{"released: started first reconcile is interrupted", fxClaimed(), 1, releasedStep(1, false, true), want{phase: PhaseReconciling,
			ready: c(U, ReasonPending), reconciling: c(T, ReasonInterrupted), changed: true}},
		{"released: started delete is interrupted", fxReadyDeleteClaimed(), 1, releasedStep(1, true, true), want{phase: PhaseDeleting, observed: 1,
			ready: c(U, anyValue), reconciling: c(T, ReasonInterrupted), synced: c(T, ReasonActionOK), changed: true}},

		// A call that finished before its start was stored: the result follows the waiting state.
		{"result: success of a first reconcile whose start was not stored", fxCreated(), 1, resultStep(oDone), want{phase: PhaseReady, observed: 1,
			ready: c(T, ReasonReconciled), synced: c(T, ReasonActionOK), changed: true}},
		{"result: failure of a new generation whose start was not stored", fxReadyGen2(), 2, resultStep(Outcome{Generation: 2, CurrentGeneration: 2, Err: "boom"}),
			want{phase: PhaseFailed, observed: 1, ready: c(F, ReasonActionFailed), reconciling: c(T, ReasonRetrying), synced: c(F, ReasonActionFailed), changed: true}},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("duplicate row name %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			prevCopy := State{Phase: tc.prev.Phase, Conditions: clone(tc.prev.Conditions), ObservedGeneration: tc.prev.ObservedGeneration}
			got := tc.step(tc.prev, stepAt)
			if !equal(prevCopy, tc.prev) {
				t.Errorf("the transition modified its input: %s → %s", dump(prevCopy), dump(tc.prev))
			}
			assertTransition(t, tc.prev, tc.gen, got, tc.want, stepAt)
		})
	}
}

// TestFixturesKeepInvariants checks the fixtures the table starts from are themselves valid.
func TestFixturesKeepInvariants(t *testing.T) {
	t.Parallel()
	for _, fx := range []struct {
		name string
		s    State
		gen  int64
	}{
		{"created", fxCreated(), 1}, {"claimed", fxClaimed(), 1}, {"ready", fxReady(), 1}, {"failed", fxFailed(), 1},
		{"stalled", fxStalled(), 1}, {"ready gen 2", fxReadyGen2(), 2}, {"ready gen 2 claimed", fxReadyGen2Claimed(), 2},
		{"delete claimed (stalled)", fxDeleteClaimedStalled(), 1}, {"delete failed", fxDeleteFailed(), 1},
	} {
		if err := Check(fx.s, fx.gen, pendingAfter(fx.s, fx.gen, false)); err != nil {
			t.Errorf("fixture %s: %v (%s)", fx.name, err, dump(fx.s))
		}
	}
}

// TestLastTransitionTime: a condition's lastTransitionTime moves only when its status flips.
func TestLastTransitionTime(t *testing.T) {
	t.Parallel()
	ltt := func(s State, typ string) time.Time { c, _ := Get(s.Conditions, typ); return c.LastTransitionTime }

	t.Run("two failures in a row keep Ready's and Synced's", func(t *testing.T) {
		t.Parallel()
		s1, _ := Result(fxClaimed(), oFail, at(2))
		s2, _ := Start(s1, 1, false, at(3))
		s3, _ := Result(s2, Outcome{Generation: 1, CurrentGeneration: 1, Err: "boom again"}, at(4))
		if !ltt(s3, Ready).Equal(at(2)) || !ltt(s3, Synced).Equal(at(2)) {
			t.Errorf("Ready %v Synced %v, want both %v", ltt(s3, Ready), ltt(s3, Synced), at(2))
		}
		if r, _ := Get(s3.Conditions, Ready); r.Message != "boom again" {
			t.Errorf("Ready message %q not updated", r.Message)
		}
		// Reconciling has been True since creation.
		if !ltt(s3, Reconciling).Equal(at(0)) {
			t.Errorf("Reconciling %v, want %v", ltt(s3, Reconciling), at(0))
		}
	})
	t.Run("failure then success moves Ready's and Synced's", func(t *testing.T) {
		t.Parallel()
		s, _ := Result(fxFailed(), oDone, at(5))
		if !ltt(s, Ready).Equal(at(5)) || !ltt(s, Synced).Equal(at(5)) {
			t.Errorf("Ready %v Synced %v, want both %v", ltt(s, Ready), ltt(s, Synced), at(5))
		}
	})
	t.Run("success after success keeps Ready's", func(t *testing.T) {
		t.Parallel()
		s, _ := Result(fxReady(), oDrift, at(5))
		if !ltt(s, Ready).Equal(at(2)) {
			t.Errorf("Ready %v, want %v", ltt(s, Ready), at(2))
		}
	})
	t.Run("first claim keeps Reconciling's", func(t *testing.T) {
		t.Parallel()
		if !ltt(fxClaimed(), Reconciling).Equal(at(0)) {
			t.Errorf("Reconciling %v, want %v", ltt(fxClaimed(), Reconciling), at(0))
		}
	})
	t.Run("new generation of a Ready resource moves Ready's", func(t *testing.T) {
		t.Parallel()
		if !ltt(fxReadyGen2(), Ready).Equal(at(3)) {
			t.Errorf("Ready %v, want %v", ltt(fxReadyGen2(), Ready), at(3))
		}
	})
	t.Run("in progress then success moves Ready's once", func(t *testing.T) {
		t.Parallel()
		s1, _ := Result(fxClaimed(), oInProgress, at(2))
		s2, _ := Start(s1, 1, false, at(3))
		s3, _ := Result(s2, oDone, at(4))
		if !ltt(s1, Ready).Equal(at(0)) || !ltt(s3, Ready).Equal(at(4)) {
			t.Errorf("Ready %v then %v, want %v then %v", ltt(s1, Ready), ltt(s3, Ready), at(0), at(4))
		}
	})
}

// TestTransitionSequence runs a realistic life of one resource and checks every state.
func TestTransitionSequence(t *testing.T) {
	t.Parallel()
	type step struct {
		name    string
		gen     int64 // the resource's generation after this step
		fn      stepFn
		phase   string
		removed bool
	}
	steps := []step{
		{"create", 1, createStep(), PhasePending, false},
		{"claim gen 1", 1, startStep(1, false), PhaseReconciling, false},
		{"in progress", 1, resultStep(oInProgress), PhaseReconciling, false},
		{"claim again", 1, startStep(1, false), PhaseReconciling, false},
		{"success", 1, resultStep(oDone), PhaseReady, false},
		{"new generation 2", 2, newGenStep(2), PhaseReconciling, false},
		{"claim gen 2", 2, startStep(2, false), PhaseReconciling, false},
		{"failure", 2, resultStep(Outcome{Generation: 2, CurrentGeneration: 2, Err: "boom"}), PhaseFailed, false},
		{"claim retry", 2, startStep(2, false), PhaseFailed, false},
		{"terminal failure", 2, resultStep(Outcome{Generation: 2, CurrentGeneration: 2, Err: "invalid", Terminal: true}), PhaseFailed, false},
		{"new generation 3", 3, newGenStep(3), PhaseReconciling, false},
		{"claim gen 3", 3, startStep(3, false), PhaseReconciling, false},
		{"success gen 3", 3, resultStep(Outcome{Generation: 3, CurrentGeneration: 3, Done: true}), PhaseReady, false},
		{"delete claim", 3, startStep(3, true), PhaseDeleting, false},
		{"delete failed", 3, resultStep(Outcome{Generation: 3, CurrentGeneration: 3, Delete: true, Deleting: true, Err: "refused"}), PhaseDeleting, false},
		{"delete claim retry", 3, startStep(3, true), PhaseDeleting, false},
		{"delete ok", 3, resultStep(Outcome{Generation: 3, CurrentGeneration: 3, Delete: true, Deleting: true, Done: true}), PhaseDeleting, true},
	}
	var s State
	for i, st := range steps {
		now := at(i)
		got := st.fn(s, now)
		if got.s.Phase != st.phase {
			t.Errorf("step %d %s: phase %s, want %s", i, st.name, got.s.Phase, st.phase)
		}
		if got.removed != st.removed {
			t.Errorf("step %d %s: removed %v, want %v", i, st.name, got.removed, st.removed)
		}
		if got.reported && got.changed == equal(s, got.s) {
			t.Errorf("step %d %s: changed=%v disagrees with the state", i, st.name, got.changed)
		}
		if r, _ := Get(got.s.Conditions, Ready); r.Status == True && (got.s.ObservedGeneration < st.gen || got.s.Phase != PhaseReady) {
			t.Errorf("step %d %s: Ready=True with %s at generation %d", i, st.name, dump(got.s), st.gen)
		}
		pending := pendingAfter(got.s, st.gen, got.removed)
		if err := Check(got.s, st.gen, pending); err != nil {
			t.Errorf("step %d %s: Check(gen %d, pending %v): %v (%s)", i, st.name, st.gen, pending, err, dump(got.s))
		}
		t.Run(fmt.Sprintf("%02d %s", i, st.name), func(t *testing.T) {
			assertUnique(t, got.s.Conditions)
			assertTransitionTimes(t, s.Conditions, got.s.Conditions, now)
		})
		s = got.s
	}
	if s.ObservedGeneration != 3 {
		t.Errorf("final observedGeneration %d, want 3", s.ObservedGeneration)
	}
}

// TestConditionsStayUniqueAndOrdered applies every short sequence of transitions and checks
// conditions stay unique per type, Ready stays present, and the standard types come first in
// order.
func TestConditionsStayUniqueAndOrdered(t *testing.T) {
	t.Parallel()
	ops := []stepFn{
		startStep(1, false), startStep(2, false), startStep(1, true),
		resultStep(oDone), resultStep(oDrift), resultStep(oInProgress), resultStep(oFail), resultStep(oTerminal),
		resultStep(Outcome{Generation: 1, CurrentGeneration: 2, Done: true}),
		resultStep(Outcome{Generation: 1, CurrentGeneration: 1, Done: true, Deleting: true}),
		resultStep(oDelFail), resultStep(oDelWait), resultStep(Outcome{Generation: 1, CurrentGeneration: 1, Delete: true, Done: true}),
		newGenStep(2), inSyncStep(1, 1, false), inSyncStep(1, 2, true), interruptedStep(1, false), interruptedStep(1, true),
	}
	var walk func(s State, depth int, path []int)
	walk = func(s State, depth int, path []int) {
		if depth == 0 {
			return
		}
		for i, op := range ops {
			got := op(s, at(len(path)+1))
			next := append(append([]int(nil), path...), i)
			conds := got.s.Conditions
			seen := map[string]bool{}
			for j, c := range conds {
				if seen[c.Type] {
					t.Fatalf("ops %v: %s twice", next, c.Type)
				}
				seen[c.Type] = true
				if j > 0 {
					if oi, oj := order[conds[j-1].Type], order[c.Type]; oi > oj {
						t.Fatalf("ops %v: conditions out of order: %s", next, dump(got.s))
					}
				}
			}
			if !seen[Ready] {
				t.Fatalf("ops %v: Ready missing", next)
			}
			walk(got.s, depth-1, next)
		}
	}
	walk(fxCreated(), 3, nil)
}

// TestCheckRejectsBrokenStates: Check names each broken invariant and accepts valid states.
func TestCheckRejectsBrokenStates(t *testing.T) {
	t.Parallel()
	cd := func(typ, st string) Condition { return Condition{Type: typ, Status: st, LastTransitionTime: t0} }
	cases := []struct {
		name    string
		s       State
		gen     int64
		pending bool
		wantErr bool
	}{
		{"duplicate type", State{Phase: PhaseReady, ObservedGeneration: 1,
			Conditions: []Condition{cd(Ready, True), cd(Synced, True), cd(Synced, False)}}, 1, false, true},
		{"duplicate Ready", State{Phase: PhaseReady, ObservedGeneration: 1,
			Conditions: []Condition{cd(Ready, True), cd(Ready, True)}}, 1, false, true},
		{"Ready missing", State{Phase: PhaseReconciling, Conditions: []Condition{cd(Reconciling, True)}}, 1, true, true},
		{"Ready True with observed < generation", State{Phase: PhaseReady, ObservedGeneration: 1,
			Conditions: []Condition{cd(Ready, True), cd(Reconciling, True)}}, 2, true, true},
		{"Ready True before a first success", State{Phase: PhaseReady, Conditions: []Condition{cd(Ready, True)}}, 0, false, true},
		{"Ready True outside phase Ready", State{Phase: PhaseDeleting, ObservedGeneration: 1,
			Conditions: []Condition{cd(Ready, True), cd(Reconciling, True)}}, 1, true, true},
		{"Stalled with Ready True", State{Phase: PhaseReady, ObservedGeneration: 1,
			Conditions: []Condition{cd(Ready, True), cd(Stalled, True)}}, 1, false, true},
		{"Stalled with Ready Unknown", State{Phase: PhaseFailed, ObservedGeneration: 1,
			Conditions: []Condition{cd(Ready, Unknown), cd(Stalled, True)}}, 1, false, true},
		{"Reconciling and Stalled together", State{Phase: PhaseFailed, ObservedGeneration: 1,
			Conditions: []Condition{cd(Ready, False), cd(Reconciling, True), cd(Stalled, True)}}, 1, false, true},
		{"pending without Reconciling", State{Phase: PhasePending, Conditions: []Condition{cd(Ready, Unknown)}}, 1, true, true},
		{"pending with Reconciling False", State{Phase: PhaseFailed,
			Conditions: []Condition{cd(Ready, False), cd(Reconciling, False)}}, 1, true, true},

		{"valid: Ready at its generation", State{Phase: PhaseReady, ObservedGeneration: 2,
			Conditions: []Condition{cd(Ready, True), cd(Synced, True)}}, 2, false, false},
		{"valid: Stalled, nothing pending", State{Phase: PhaseFailed, ObservedGeneration: 1,
			Conditions: []Condition{cd(Ready, False), cd(Stalled, True), cd(Synced, False)}}, 1, false, false},
		{"valid: Stalled False with Reconciling True", State{Phase: PhaseReconciling, ObservedGeneration: 1,
			Conditions: []Condition{cd(Ready, Unknown), cd(Reconciling, True), cd(Stalled, False)}}, 2, true, false},
		{"valid: pending with Reconciling", State{Phase: PhasePending,
			Conditions: []Condition{cd(Ready, Unknown), cd(Reconciling, True)}}, 1, true, false},
		{"valid: created", Created(t0), 1, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := Check(tc.s, tc.gen, tc.pending)
			if (err != nil) != tc.wantErr {
				t.Errorf("Check = %v, want error %v (%s)", err, tc.wantErr, dump(tc.s))
			}
		})
	}
}

func TestDeletionRequested(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	prev, _ := Result(State{Phase: PhaseReconciling, Conditions: Created(now.Add(-time.Hour)).Conditions}, Outcome{Generation: 1, CurrentGeneration: 1, Done: true}, now.Add(-time.Minute))
	s := DeletionRequested(prev, now)
	if s.Phase != PhaseDeleting {
		t.Errorf("phase %s, want Deleting", s.Phase)
	}
	if c, _ := Get(s.Conditions, Reconciling); c.Status != True || c.Reason != ReasonDeletionRequested || c.Message != "waiting to run the action's delete" {
		t.Errorf("Reconciling %+v, want True DeletionRequested, waiting to run the action's delete", c)
	}
	if c, _ := Get(s.Conditions, Ready); c.Status == True {
		t.Errorf("Ready still True while the delete is pending: %+v", c)
	}
	if err := Check(s, 1, true); err != nil {
		t.Error(err)
	}
}
