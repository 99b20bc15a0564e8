//go:build unix && !linux

package execaction

import "syscall"

// dieWithParent has no portable equivalent outside Linux.
func dieWithParent(*syscall.SysProcAttr) {}
