package status

import "time"

// Conditions and reasons of dependencies (DESIGN §4, Dependencies).
const (
	// DependenciesReady is set on a resource with dependencies: True when every dependency
	// is Ready at its current generation, False while it waits.
	DependenciesReady = "DependenciesReady"
	// DependentsDeleted is set on a resource being deleted while resources that depend on
	// it still exist: its delete waits for theirs.
	DependentsDeleted = "DependentsDeleted"

	ReasonWaitingForDependency = "WaitingForDependency"
	ReasonDependenciesReady    = "DependenciesReady"
	ReasonWaitingForDependents = "WaitingForDependents"
)

// Dependencies is the state of a resource with dependencies once it is known what it waits
// for: waiting names the dependencies that are not Ready ("" when none). A resource with work
// pending for its generation that must wait is Pending, and says so in Reconciling; one that
// reached its generation keeps its phase (a dependency failing later does not undo what was
// done) but shows the dependency's state in DependenciesReady. Resources being deleted are
// left to Dependents.
func Dependencies(prev State, gen int64, deleting bool, waiting string, now time.Time) State {
	s := State{Phase: prev.Phase, Conditions: clone(prev.Conditions), ObservedGeneration: prev.ObservedGeneration}
	if deleting {
		return s
	}
	if waiting == "" {
		s.Conditions = Set(s.Conditions, Condition{Type: DependenciesReady, Status: True, Reason: ReasonDependenciesReady,
			Message: "every dependency is Ready", ObservedGeneration: prev.ObservedGeneration}, now)
		if c, ok := Get(s.Conditions, Reconciling); ok && c.Status == True && c.Reason == ReasonWaitingForDependency {
			s.Conditions = Set(s.Conditions, Condition{Type: Reconciling, Status: True, Reason: ReasonPending,
				Message: "dependencies are Ready; waiting for a worker", ObservedGeneration: prev.ObservedGeneration}, now)
		}
		return s
	}
	s.Conditions = Set(s.Conditions, Condition{Type: DependenciesReady, Status: False, Reason: ReasonWaitingForDependency,
		Message: waiting, ObservedGeneration: prev.ObservedGeneration}, now)
	if prev.ObservedGeneration < gen {
		s.Phase = PhasePending
		s.Conditions = Remove(s.Conditions, Stalled)
		s.Conditions = Set(s.Conditions, Condition{Type: Reconciling, Status: True, Reason: ReasonWaitingForDependency,
			Message: waiting, ObservedGeneration: prev.ObservedGeneration}, now)
		if c, ok := Get(s.Conditions, Ready); !ok || c.Status == True {
			s.Conditions = Set(s.Conditions, Condition{Type: Ready, Status: Unknown, Reason: ReasonWaitingForDependency,
				Message: waiting, ObservedGeneration: prev.ObservedGeneration}, now)
		}
	} else if c, ok := Get(s.Conditions, Reconciling); ok && c.Reason == ReasonWindowClosed {
		// A change a window held at the generation observed waits for its dependencies now.
		s.Conditions = Set(s.Conditions, Condition{Type: Reconciling, Status: True, Reason: ReasonWaitingForDependency,
			Message: waiting, ObservedGeneration: prev.ObservedGeneration}, now)
	}
	return s
}

// Dependents is the state of a resource being deleted once it is known which dependents
// still exist (waiting names them, "" when none): its delete waits for theirs.
func Dependents(prev State, waiting string, now time.Time) State {
	s := State{Phase: prev.Phase, Conditions: clone(prev.Conditions), ObservedGeneration: prev.ObservedGeneration}
	if waiting == "" {
		s.Conditions = Remove(s.Conditions, DependentsDeleted)
		return s
	}
	s.Phase = PhaseDeleting
	s.Conditions = Set(s.Conditions, Condition{Type: DependentsDeleted, Status: False, Reason: ReasonWaitingForDependents,
		Message: waiting, ObservedGeneration: prev.ObservedGeneration}, now)
	return s
}

// Differ reports whether two states differ (for writing only what changed).
func Differ(a, b State) bool { return !equal(a, b) }
