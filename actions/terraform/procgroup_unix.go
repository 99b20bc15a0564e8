//go:build unix

package terraform

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup makes the run the leader of a process group of its own, so that the
// providers it starts can be killed with it.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// interrupt sends SIGINT to Terraform alone: it forwards the stop to its providers itself.
func interrupt(p *os.Process) error { return p.Signal(os.Interrupt) }

// killGroup kills whatever is left of p's process group.
func killGroup(p *os.Process) {
	if p != nil {
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
}
