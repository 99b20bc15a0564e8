package execaction

import "github.com/trueup-dev/trueup/actions"

// ForceProcessGroup makes a (built by New) contain its commands' descendants by process
// group only, as where PID namespaces are unavailable.
func ForceProcessGroup(a actions.Action) { a.(*Action).ns = nil }

// LockWait is how long a call waits for a previous run's lock.
const LockWait = lockWait
