package status

import "time"

// NextReconcile is when the controller takes a resource up next, from its row: the time its
// work is due (runAt; nil when none is), unless nothing is scheduled because a replica holds
// its lease (it runs now), or it is suspended, or blocked (it waits for its dependencies, or
// for its dependents' deletes). The API shows it as nextReconcileTime.
func NextReconcile(runAt *time.Time, leased, suspended, blocked bool) *time.Time {
	if leased || suspended || blocked {
		return nil
	}
	return runAt
}
