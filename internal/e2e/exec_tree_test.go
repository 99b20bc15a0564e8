//go:build linux

package e2e

// Issue 9, point 2: when `trueup serve` is killed with SIGKILL while an exec action runs, the
// action's descendants (a child and a double-forked, setsid'd daemon of a wrapper script)
// die with it, and the restarted trueup runs the action again without overlapping the old run.

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions/proc"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

// treeRun is one run of testdata/tree-action.sh, from a replica's call log.
type treeRun struct {
	replica    int
	pid        int
	start, end int64          // unix ns; end 0 while running or when killed
	workers    map[string]int // name → pid
}

// treeRuns reads the runs r logged.
func treeRuns(t *testing.T, r *procReplica) []*treeRun {
	t.Helper()
	b, err := os.ReadFile(r.callLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var runs []*treeRun
	byPID := map[int]*treeRun{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			t.Fatalf("r%d call log: unexpected line %q", r.idx, line)
		}
		pid, err1 := strconv.Atoi(f[1])
		at, err2 := strconv.ParseInt(f[2], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("r%d call log: line %q: %v", r.idx, line, err)
		}
		switch {
		case f[0] == "run-start":
			run := &treeRun{replica: r.idx, pid: pid, start: at, workers: map[string]int{}}
			runs = append(runs, run)
			byPID[pid] = run
		case f[0] == "run-end" && byPID[pid] != nil:
			byPID[pid].end = at
		case f[0] == "worker" && len(f) == 4 && len(runs) > 0:
			// Workers log after their run's start and before the next run's: the runs of one
			// replica never overlap, which the test checks from their intervals.
			runs[len(runs)-1].workers[f[3]] = pid
		default:
			t.Fatalf("r%d call log: unexpected line %q", r.idx, line)
		}
	}
	return runs
}

// pidGone reports whether pid has exited; a zombie counts as gone (nobody may reap it).
func pidGone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

// TestExecTreeDiesWithTrueup: kill -9 of trueup while a wrapper script's workers sleep 20 s;
// every one of them is gone within 1 s; a restarted trueup on the same database runs the
// action again, never while the old run lived.
func TestExecTreeDiesWithTrueup(t *testing.T) {
	if mode, err := proc.Mode(); mode != proc.TreePIDNamespace {
		t.Skipf("exec descendants contained by %s on this machine: %v", mode, err)
	}
	url := pgtest.NewDatabase(t, store.MigrateURL)
	w := procSetup(t, url, "20")
	w.script = "testdata/tree-action.sh"
	files, want := procManifests(1, 1, func(int) int { return 1 })
	w.commit(files, "one database")
	first := w.startOne()

	var run *treeRun
	w.eventually(60*time.Second, "the first run's workers started", func() (bool, string) {
		runs := treeRuns(t, first)
		if len(runs) == 0 {
			return false, "no run yet"
		}
		run = runs[0]
		return len(run.workers) == 2, fmt.Sprintf("workers %v", run.workers)
	})
	pids := map[string]int{"script": run.pid, "child": run.workers["child"], "daemon": run.workers["daemon"]}
	for name, pid := range pids {
		if pidGone(pid) {
			t.Fatalf("%s (pid %d) is not running before the kill", name, pid)
		}
	}

	first.killed = true
	killedAt := time.Now()
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	gone := map[string]time.Duration{}
	for len(gone) < len(pids) {
		for name, pid := range pids {
			if _, ok := gone[name]; !ok && pidGone(pid) {
				gone[name] = time.Since(killedAt)
			}
		}
		if time.Since(killedAt) > time.Second {
			var left []string
			for name, pid := range pids {
				if _, ok := gone[name]; !ok {
					left = append(left, fmt.Sprintf("%s (pid %d)", name, pid))
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			t.Fatalf("still running 1 s after trueup was killed: %v", left)
		}
		time.Sleep(time.Millisecond)
	}
	lastGone := killedAt.Add(slices.Max(slices.Collect(maps.Values(gone))))
	t.Logf("after kill -9 of trueup: gone after %v", gone)
	select {
	case <-first.done:
	case <-time.After(10 * time.Second):
		t.Fatal("trueup survived SIGKILL")
	}

	// Restart on the same database: the action runs again, to completion.
	w.sleep = "0.3"
	second := w.startOne()
	w.waitReady(60*time.Second, want)
	reruns := treeRuns(t, second)
	if len(reruns) == 0 {
		t.Fatal("the restarted trueup did not run the action")
	}
	if firstRuns := treeRuns(t, first); len(firstRuns) != 1 {
		t.Errorf("the killed trueup made %d runs, want 1", len(firstRuns))
	}
	// The killed run lived until its last process was gone; no two runs overlap.
	run.end = lastGone.UnixNano()
	runs := append([]*treeRun{run}, reruns...)
	for i, r := range runs {
		if i > 0 && r.end == 0 {
			t.Errorf("run %d (r%d, pid %d) never finished", i, r.replica, r.pid)
		}
		if i > 0 && r.start < runs[i-1].end {
			t.Errorf("run %d (r%d) started %s before run %d (r%d) ended", i, r.replica,
				time.Duration(runs[i-1].end-r.start), i-1, runs[i-1].replica)
		}
	}
	t.Logf("rerun started %s after the last process of the killed run was gone",
		time.Duration(reruns[0].start-lastGone.UnixNano()).Round(time.Millisecond))
}
