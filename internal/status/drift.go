package status

import "time"

// DriftLeft is the state after a resync found drift that the type's drift mode leaves in
// place (detect, notify): Drifted=True (reason ReasonDriftDetected, msg) at generation gen;
// phase, Ready and the other conditions as InSync leaves them (a change or a deletion that
// arrived meanwhile is pending). changed reports that the condition appeared or its message
// changed: what is worth an Event and, under notify, a notification.
func DriftLeft(prev State, gen, currentGen int64, deleting bool, msg string, now time.Time) (s State, changed bool) {
	was, had := Get(prev.Conditions, Drifted)
	changed = !had || was.Status != True || was.Message != msg
	s = InSync(WindowPassed(prev), gen, currentGen, deleting, now)
	s.Conditions = Set(s.Conditions, Condition{Type: Drifted, Status: True, Reason: ReasonDriftDetected, Message: msg, ObservedGeneration: gen}, now)
	s.Conditions = keepTimes(prev.Conditions, s.Conditions)
	return s, changed
}

// IsDrifted reports whether conds hold Drifted=True.
func IsDrifted(conds []Condition) bool {
	c, ok := Get(conds, Drifted)
	return ok && c.Status == True
}
