// Package proc starts plugin commands so that nothing they start outlives their call or
// trueup: the process runner shared by the exec and terraform actions.
//
// A command is contained in one of two ways, chosen once per process (Mode):
//   - TreePIDNamespace: the command is the init of a PID namespace of its own, killed with
//     trueup (parent-death signal); the kernel then kills every process in the namespace,
//     however it was started (double fork, setsid) and however trueup died.
//   - TreeProcessGroup: the command leads a process group of its own, which the caller kills
//     on timeout, cancellation and shutdown; if trueup itself is killed, only the command dies
//     with it (Linux) and its descendants may keep running.
package proc

import (
	"os"
	"os/exec"
)

// How the descendants of a command are contained.
const (
	TreePIDNamespace = "pid-namespace"
	TreeProcessGroup = "process-group"
)

// Mode reports how this process contains the descendants of commands. The first call probes
// once whether PID namespaces can be used; when they cannot, mode is TreeProcessGroup and err
// says why (serve logs it once, when it first builds an action that runs commands).
func Mode() (mode string, err error) {
	if _, err := probePIDNamespace(); err != nil {
		return TreeProcessGroup, err
	}
	return TreePIDNamespace, nil
}

// Tree is how commands are contained: in a PID namespace of their own where this machine
// allows it (NewTree), else in a process group. The zero Tree uses process groups only.
type Tree struct {
	ns *pidNamespace
}

// NewTree returns the strongest containment this machine allows (probed once per process).
func NewTree() Tree {
	ns, _ := probePIDNamespace() // the reason it is unavailable is told by Mode
	return Tree{ns: ns}
}

// Namespaced reports whether commands run as the init of a PID namespace of their own.
func (t Tree) Namespaced() bool { return t.ns != nil }

// Prepare sets cmd up, before Start, to lead a process group of its own, to die with trueup
// (Linux), and to be the init of a new PID namespace when t is Namespaced. It replaces
// cmd.SysProcAttr.
func (t Tree) Prepare(cmd *exec.Cmd) {
	ownProcessGroup(cmd)
	if t.ns != nil {
		t.ns.apply(cmd)
	}
}

// Terminate asks p's process group to stop (SIGTERM). An init of a PID namespace without a
// SIGTERM handler ignores the signal as PID 1; it is killed instead, as it would have died of
// it as an ordinary process. A group that is gone is fine.
func (t Tree) Terminate(p *os.Process) {
	terminateGroup(p)
	if t.ns != nil {
		termInit(p)
	}
}

// Kill kills p's process group (with a PID namespace, its death takes every process in the
// namespace). A group that is gone, or a nil p, is fine.
func Kill(p *os.Process) {
	if p != nil {
		killGroup(p)
	}
}
