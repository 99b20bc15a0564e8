package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/internal/pgembed"
)

// pidCPU is the CPU time pid has used, with that of its children it reaped when children is
// set, and its parent's pid (/proc/pid/stat: utime, stime, cutime, cstime in clock ticks,
// USER_HZ 100 on Linux). A process that is gone gives 0.
func pidCPU(pid int, children bool) (time.Duration, int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0
	}
	s := string(b)
	// The fields after the command, which may hold spaces, in parentheses: state, ppid, …
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 15 {
		return 0, 0
	}
	ppid, _ := strconv.Atoi(f[1])
	fields := f[11:13]
	if children {
		fields = f[11:15]
	}
	var ticks int64
	for _, v := range fields {
		t, _ := strconv.ParseInt(v, 10, 64)
		ticks += t
	}
	return time.Duration(ticks) * 10 * time.Millisecond, ppid
}

// postgresCPU is the CPU time the cluster's processes used so far: the postmaster's own, that
// of the backends it reaped, and that of those running.
func postgresCPU(cluster *pgembed.Cluster) (time.Duration, error) {
	pidText, err := os.ReadFile(filepath.Join(cluster.Dir(), "data", "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	pm, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(pidText), "\n", 2)[0]))
	if err != nil {
		return 0, err
	}
	total, _ := pidCPU(pm, true)
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == pm {
			continue
		}
		if t, ppid := pidCPU(pid, false); ppid == pm {
			total += t
		}
	}
	return total, nil
}
