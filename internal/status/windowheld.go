package status

import "time"

// WindowHeld is the state of a change a change window holds (msg names the window and when
// the change may proceed): Reconciling=True reason ReasonWindowClosed with msg, no Stalled;
// phase Pending for a resource never applied, Deleting for a delete, else the phase it had (a
// held drift correction leaves a Ready resource Ready; a new generation keeps what
// NewGeneration set). Ready stays as it was. The work is due when the window lets it proceed.
func WindowHeld(prev State, deleting bool, msg string, now time.Time) State {
	s := unchanged(prev)
	switch {
	case deleting:
		s.Phase = PhaseDeleting
	case prev.ObservedGeneration == 0:
		s.Phase = PhasePending
	}
	s.Conditions = Remove(s.Conditions, Stalled)
	s.Conditions = Set(s.Conditions, Condition{Type: Reconciling, Status: True, Reason: ReasonWindowClosed, Message: msg,
		ObservedGeneration: prev.ObservedGeneration}, now)
	s.Conditions = keepTimes(prev.Conditions, s.Conditions)
	return s
}

// WindowPassed is prev without the Reconciling condition a change window's hold left, for a
// resync that finds nothing to correct once the window lets changes proceed.
func WindowPassed(prev State) State {
	s := unchanged(prev)
	if c, ok := Get(s.Conditions, Reconciling); ok && c.Reason == ReasonWindowClosed {
		s.Conditions = Remove(s.Conditions, Reconciling)
	}
	return s
}
