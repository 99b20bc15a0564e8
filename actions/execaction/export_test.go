package execaction

import (
	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/proc"
)

// ForceProcessGroup makes a (built by New) contain its commands' descendants by process
// group only, as where PID namespaces are unavailable.
func ForceProcessGroup(a actions.Action) { a.(*Action).tree = proc.Tree{} }

// LockWait is how long a call waits for a previous run's lock.
const LockWait = lockWait
