package status

import "testing"

// The gate's states: each keeps the invariants of Check, names its reason on Approved, and
// a repeated decision moves no lastTransitionTime.
func TestGateStates(t *testing.T) {
	t.Parallel()
	started := func(prev State, gen int64, deleting bool) State {
		s, _ := Start(prev, gen, deleting, at(1))
		return s
	}
	created := started(Created(at(0)), 1, false)
	ready, _ := Result(created, Outcome{Generation: 1, CurrentGeneration: 1, Done: true}, at(2))
	gen2 := started(NewGeneration(ready, 2, at(3)), 2, false)
	deleting := started(DeletionRequested(ready, at(3)), 1, true)
	const msg = "needs a DBA — plan 0123456789ab: 1 to replace"
	for _, tc := range []struct {
		name                               string
		s                                  State
		gen                                int64
		pending                            bool
		phase                              string
		observed                           int64
		ready, reconciling, stalled, appro cond
	}{
		{"first apply waits", AwaitingApproval(created, 1, false, msg, stepAt), 1, true, PhasePending, 0,
			c(Unknown, ReasonPending), c(True, ReasonApprovalRequired), absent, c(False, ReasonApprovalRequired)},
		{"drift of a Ready resource waits", AwaitingApproval(ready, 1, false, msg, stepAt), 1, true, PhasePending, 1,
			c(Unknown, ReasonApprovalRequired), c(True, ReasonApprovalRequired), absent, c(False, ReasonApprovalRequired)},
		{"a new generation waits", AwaitingApproval(gen2, 2, false, msg, stepAt), 2, true, PhasePending, 1,
			c(Unknown, ReasonNewGeneration), c(True, ReasonApprovalRequired), absent, c(False, ReasonApprovalRequired)},
		{"a delete waits", AwaitingApproval(deleting, 1, true, msg, stepAt), 1, true, PhaseDeleting, 1,
			c(Unknown, ReasonDeleting), c(True, ReasonApprovalRequired), absent, c(False, ReasonApprovalRequired)},
		{"denied", Refused(gen2, 2, false, ReasonPolicyDenied, "no", stepAt), 2, false, PhaseFailed, 1,
			c(False, ReasonPolicyDenied), absent, c(True, ReasonPolicyDenied), c(False, ReasonPolicyDenied)},
		{"rejected while waiting", Refused(AwaitingApproval(gen2, 2, false, msg, at(5)), 2, false, ReasonRejected, "rejected by token:dba: no", stepAt), 2, false, PhaseFailed, 1,
			c(False, ReasonRejected), absent, c(True, ReasonRejected), c(False, ReasonRejected)},
		{"a delete denied", Refused(deleting, 1, true, ReasonPolicyDenied, "no", stepAt), 1, false, PhaseDeleting, 1,
			c(False, ReasonPolicyDenied), absent, c(True, ReasonPolicyDenied), c(False, ReasonPolicyDenied)},
		{"approved, then applied", func() State {
			s := AwaitingApproval(gen2, 2, false, msg, at(5))
			s.Conditions = Allowed(s.Conditions, 2, ReasonApproved, "approved by token:dba", stepAt)
			s, _ = Result(s, Outcome{Generation: 2, CurrentGeneration: 2, Done: true}, stepAt)
			return s
		}(), 2, false, PhaseReady, 2, c(True, ReasonReconciled), absent, absent, c(True, ReasonApproved)},
		{"a drift wait whose drift went away", DriftGone(AwaitingApproval(ready, 1, false, msg, at(5)), 1, "drift gone", stepAt), 1, false, PhaseReady, 1,
			c(True, ReasonReconciled), absent, absent, absent},
		{"a refused drift whose drift went away", DriftGone(Refused(ready, 1, false, ReasonRejected, "no", at(5)), 1, "drift gone", stepAt), 1, false, PhaseReady, 1,
			c(True, ReasonReconciled), absent, absent, absent},
		{"denied, the policies reloaded meanwhile", Redecide(Refused(gen2, 2, false, ReasonPolicyDenied, "no", stepAt), "reloaded", stepAt), 2, true, PhaseFailed, 1,
			c(False, ReasonPolicyDenied), c(True, ReasonPending), absent, c(False, ReasonPolicyDenied)},
		{"waiting, the policies reloaded meanwhile", Redecide(AwaitingApproval(gen2, 2, false, msg, stepAt), "reloaded", stepAt), 2, true, PhasePending, 1,
			c(Unknown, ReasonNewGeneration), c(True, ReasonApprovalRequired), absent, c(False, ReasonApprovalRequired)},
		{"allowed, then failed", func() State {
			s := gen2
			s.Conditions = Allowed(s.Conditions, 2, ReasonPolicyAllowed, "", stepAt)
			s, _ = Result(s, Outcome{Generation: 2, CurrentGeneration: 2, Err: "boom"}, stepAt)
			return s
		}(), 2, true, PhaseFailed, 1, c(False, ReasonActionFailed), c(True, ReasonRetrying), absent, c(True, ReasonPolicyAllowed)},
	} {
		if err := Check(tc.s, tc.gen, tc.pending); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if tc.s.Phase != tc.phase || tc.s.ObservedGeneration != tc.observed {
			t.Errorf("%s: phase %s observed %d; want %s %d", tc.name, tc.s.Phase, tc.s.ObservedGeneration, tc.phase, tc.observed)
		}
		for _, w := range []struct {
			typ  string
			want cond
		}{{Ready, tc.ready}, {Reconciling, tc.reconciling}, {Stalled, tc.stalled}, {Approved, tc.appro}} {
			got, ok := Get(tc.s.Conditions, w.typ)
			if (w.want == absent) == ok || ok && (got.Status != w.want.status || got.Reason != w.want.reason) {
				t.Errorf("%s: %s = %+v (present %v); want %+v", tc.name, w.typ, got, ok, w.want)
			}
		}
		if a, ok := Get(tc.s.Conditions, Approved); ok && a.ObservedGeneration != tc.gen {
			t.Errorf("%s: Approved for generation %d; want %d", tc.name, a.ObservedGeneration, tc.gen)
		}
	}

	// Waiting again (another plan: another message) moves no transition time.
	first := AwaitingApproval(gen2, 2, false, msg, at(5))
	again := AwaitingApproval(first, 2, false, "another plan", stepAt)
	for _, typ := range []string{Ready, Reconciling, Approved} {
		a, _ := Get(first.Conditions, typ)
		b, _ := Get(again.Conditions, typ)
		if !a.LastTransitionTime.Equal(b.LastTransitionTime) {
			t.Errorf("%s moved from %v to %v waiting again", typ, a.LastTransitionTime, b.LastTransitionTime)
		}
	}
}
