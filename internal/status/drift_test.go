package status

import "testing"

// The states drift leaves: DriftLeft keeps phase and Ready, sets Drifted and says when it is
// news; a resync in sync and a successful reconcile remove it.
func TestDriftStates(t *testing.T) {
	t.Parallel()
	created, _ := Start(Created(at(0)), 1, false, at(1))
	ready, _ := Result(created, Outcome{Generation: 1, CurrentGeneration: 1, Done: true}, at(2))
	drifted, _ := DriftLeft(ready, 1, 1, false, "/tags: expected \"a\", found \"b\"", at(3))
	failed, _ := Result(created, Outcome{Generation: 1, CurrentGeneration: 1, Err: "boom"}, at(2))
	failedDrift, _ := DriftLeft(failed, 1, 1, false, "/size", at(3))
	for _, tc := range []struct {
		name     string
		s        func() (State, bool)
		pending  bool
		phase    string
		ready    cond
		drifted  cond
		changed  bool
		sinceMin int // the minute Drifted turned True (-1: absent)
	}{
		{"drift appears on a Ready resource", func() (State, bool) { return DriftLeft(ready, 1, 1, false, "/tags", stepAt) },
			false, PhaseReady, c(True, ReasonReconciled), c(True, ReasonDriftDetected), true, 10},
		{"the same drift again: no news", func() (State, bool) {
			return DriftLeft(drifted, 1, 1, false, "/tags: expected \"a\", found \"b\"", stepAt)
		},
			false, PhaseReady, c(True, ReasonReconciled), c(True, ReasonDriftDetected), false, 3},
		{"other drift: news, same transition", func() (State, bool) { return DriftLeft(drifted, 1, 1, false, "/size", stepAt) },
			false, PhaseReady, c(True, ReasonReconciled), c(True, ReasonDriftDetected), true, 3},
		{"drift of a failed resource keeps Failed", func() (State, bool) { return DriftLeft(failed, 1, 1, false, "/size", stepAt) },
			true, PhaseFailed, c(False, ReasonActionFailed), c(True, ReasonDriftDetected), true, 10},
		{"a new generation arrived meanwhile", func() (State, bool) { return DriftLeft(ready, 1, 2, false, "/tags", stepAt) },
			true, PhaseReconciling, c(Unknown, ReasonNewGeneration), c(True, ReasonDriftDetected), true, 10},
		{"the manifest went meanwhile", func() (State, bool) { return DriftLeft(drifted, 1, 1, true, "/tags", stepAt) },
			true, PhaseDeleting, c(Unknown, ReasonDeleting), c(True, ReasonDriftDetected), true, 3},
		{"in sync removes it", func() (State, bool) { return InSync(drifted, 1, 1, false, stepAt), false },
			false, PhaseReady, c(True, ReasonReconciled), absent, false, -1},
		{"in sync of a failed one removes it", func() (State, bool) { return InSync(failedDrift, 1, 1, false, stepAt), false },
			true, PhaseFailed, c(False, ReasonActionFailed), absent, false, -1},
		{"a successful reconcile removes it", func() (State, bool) {
			s, _ := Result(drifted, Outcome{Generation: 1, CurrentGeneration: 1, Done: true}, stepAt)
			return s, false
		}, false, PhaseReady, c(True, ReasonReconciled), absent, false, -1},
		{"a failed reconcile keeps it", func() (State, bool) {
			s, _ := Result(drifted, Outcome{Generation: 1, CurrentGeneration: 1, Err: "boom"}, stepAt)
			return s, false
		}, true, PhaseFailed, c(False, ReasonActionFailed), c(True, ReasonDriftDetected), false, 3},
	} {
		s, changed := tc.s()
		if err := Check(s, s.ObservedGeneration, tc.pending); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if s.Phase != tc.phase || changed != tc.changed || IsDrifted(s.Conditions) != (tc.drifted != absent) {
			t.Errorf("%s: phase %s changed %v drifted %v; want %s %v %v", tc.name, s.Phase, changed, IsDrifted(s.Conditions), tc.phase, tc.changed, tc.drifted != absent)
		}
		for _, w := range []struct {
			typ  string
			want cond
		}{{Ready, tc.ready}, {Drifted, tc.drifted}} {
			got, ok := Get(s.Conditions, w.typ)
			if (w.want == absent) == ok || ok && (got.Status != w.want.status || got.Reason != w.want.reason) {
				t.Errorf("%s: %s = %+v (present %v); want %+v", tc.name, w.typ, got, ok, w.want)
			}
			if w.typ == Drifted && ok && !got.LastTransitionTime.Equal(at(tc.sinceMin)) {
				t.Errorf("%s: Drifted since %v; want %v", tc.name, got.LastTransitionTime, at(tc.sinceMin))
			}
		}
	}
}
