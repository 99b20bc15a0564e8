//go:build unix && !linux

package proc

import "syscall"

// dieWithParent has no portable equivalent outside Linux.
func dieWithParent(*syscall.SysProcAttr) {}
