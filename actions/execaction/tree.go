package execaction

// How the descendants of a command are contained. Reported by TreeKill, so that `trueup
// serve` can say at start-up when descendants may outlive it.
const (
	// TreePIDNamespace: every command is the init of a PID namespace of its own, killed with
	// trueup (Pdeathsig); the kernel then kills every process in the namespace, however it
	// was started (double fork, setsid) and however trueup died.
	TreePIDNamespace = "pid-namespace"
	// TreeProcessGroup: every command leads a process group of its own, which trueup kills on
	// timeout, cancellation and shutdown; if trueup itself is killed, only the command dies
	// with it (Linux) and its descendants may keep running.
	TreeProcessGroup = "process-group"
)

// TreeKill reports how this process contains the descendants of exec commands. The first
// call (or the first exec instance) probes once whether PID namespaces can be used; when
// they cannot, mode is TreeProcessGroup and err says why.
func TreeKill() (mode string, err error) {
	if _, err := probePIDNamespace(); err != nil {
		return TreeProcessGroup, err
	}
	return TreePIDNamespace, nil
}
