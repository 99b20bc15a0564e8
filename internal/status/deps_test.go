package status

import (
	"testing"
	"time"
)

func TestDependencies(t *testing.T) {
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	created := Created(now.Add(-time.Minute))
	ready := State{Phase: PhaseReady, ObservedGeneration: 2, Conditions: []Condition{
		{Type: Ready, Status: True, Reason: ReasonReconciled, LastTransitionTime: now.Add(-time.Hour)},
		{Type: Reconciling, Status: False, Reason: ReasonReconciled, LastTransitionTime: now.Add(-time.Hour)},
	}}
	newGen := NewGeneration(ready, 3, now.Add(-time.Minute))
	waiting := "waiting for Network/prod/core (Failed: quota exceeded)"
	tests := []struct {
		name      string
		prev      State
		gen       int64
		deleting  bool
		waiting   string
		phase     string
		deps      string // DependenciesReady status, "" when absent
		rec       string // Reconciling reason
		readyStat string
	}{
		{"new resource waits", created, 1, false, waiting, PhasePending, False, ReasonWaitingForDependency, Unknown},
		{"new resource unblocked", Dependencies(created, 1, false, waiting, now), 1, false, "", PhasePending, True, ReasonPending, Unknown},
		{"new generation waits", newGen, 3, false, waiting, PhasePending, False, ReasonWaitingForDependency, Unknown},
		{"ready resource keeps its phase", ready, 2, false, waiting, PhaseReady, False, ReasonReconciled, True},
		{"ready resource, dependencies ready", ready, 2, false, "", PhaseReady, True, ReasonReconciled, True},
		{"deleting is left alone", ready, 2, true, waiting, PhaseReady, "", ReasonReconciled, True},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Dependencies(tt.prev, tt.gen, tt.deleting, tt.waiting, now)
			if s.Phase != tt.phase {
				t.Errorf("phase %s, want %s", s.Phase, tt.phase)
			}
			c, ok := Get(s.Conditions, DependenciesReady)
			if got := map[bool]string{true: c.Status}[ok]; got != tt.deps {
				t.Errorf("DependenciesReady %q, want %q", got, tt.deps)
			}
			if ok && c.Status == False && (c.Reason != ReasonWaitingForDependency || c.Message != tt.waiting) {
				t.Errorf("DependenciesReady %+v", c)
			}
			if r, _ := Get(s.Conditions, Reconciling); r.Reason != tt.rec {
				t.Errorf("Reconciling reason %q, want %q", r.Reason, tt.rec)
			}
			if r, _ := Get(s.Conditions, Ready); r.Status != tt.readyStat {
				t.Errorf("Ready %q, want %q", r.Status, tt.readyStat)
			}
			pending := tt.prev.ObservedGeneration < tt.gen
			if err := Check(s, tt.gen, pending); err != nil {
				t.Errorf("invariant: %v", err)
			}
		})
	}
	// A claim after the wait starts real work.
	s, _ := Start(Dependencies(created, 1, false, "", now), 1, false, now)
	if r, _ := Get(s.Conditions, Reconciling); s.Phase != PhaseReconciling || r.Reason != ReasonProgressing {
		t.Errorf("claim after wait: %s %+v", s.Phase, r)
	}
}

func TestDependents(t *testing.T) {
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	del := DeletionRequested(State{Phase: PhaseReady, ObservedGeneration: 1, Conditions: []Condition{{Type: Ready, Status: True}}}, now)
	s := Dependents(del, "waiting for dependents to be deleted: App/prod/web", now)
	c, ok := Get(s.Conditions, DependentsDeleted)
	if s.Phase != PhaseDeleting || !ok || c.Status != False || c.Reason != ReasonWaitingForDependents {
		t.Fatalf("waiting: %s %+v", s.Phase, s.Conditions)
	}
	if err := Check(s, 1, true); err != nil {
		t.Fatal(err)
	}
	s = Dependents(s, "", now)
	if _, ok := Get(s.Conditions, DependentsDeleted); ok || s.Phase != PhaseDeleting {
		t.Fatalf("done waiting: %s %+v", s.Phase, s.Conditions)
	}
	if Differ(s, s) {
		t.Fatal("Differ")
	}
}
