// Package cputime reads the CPU time the process has used, which benchmarks report beside
// the wall time: on a shared machine the wall time swings with other load, CPU time much
// less.
package cputime

import (
	"syscall"
	"time"
)

// Self is the CPU time (user and system) the process has used; 0 when it cannot be read.
func Self() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
