//go:build unix && !linux

package pgembed

import "syscall"

// postmasterAttr starts the postmaster in its own process group, so a Ctrl-C at the terminal
// reaches trueup alone and trueup stops the server after draining.
func postmasterAttr(a *account) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: a.credential()}
}

// postmasterOf reports whether pid is alive; without /proc it cannot tell a postmaster from
// a process that reused the pid, and postgres itself rechecks.
func postmasterOf(pid int, _ string) bool {
	return alive(pid)
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
