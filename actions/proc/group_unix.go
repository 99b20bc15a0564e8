//go:build unix

package proc

import (
	"os"
	"os/exec"
	"syscall"
)

// ownProcessGroup makes the command the leader of a new process group, so that it and
// everything it starts can be signalled at once.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
}

// terminateGroup sends SIGTERM to p's group. A group that is gone is fine.
func terminateGroup(p *os.Process) {
	_ = syscall.Kill(-p.Pid, syscall.SIGTERM)
}

// killGroup sends SIGKILL to p's group. A group that is gone is fine.
func killGroup(p *os.Process) {
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
}

// Interrupt sends SIGINT to p alone (as Ctrl-C does to a foreground program that forwards the
// stop to its own children, as Terraform does).
func Interrupt(p *os.Process) error { return p.Signal(os.Interrupt) }
