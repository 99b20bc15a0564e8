//go:build linux

package execaction_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/actiontest"
	"github.com/trueup-dev/trueup/actions/execaction"
	"github.com/trueup-dev/trueup/actions/proc"
)

// needPIDNamespace skips where the kernel or the sandbox refuses PID namespaces: there trueup
// runs in process-group mode, which the tests with ForceProcessGroup cover.
func needPIDNamespace(t *testing.T) {
	t.Helper()
	if mode, err := proc.Mode(); mode != proc.TreePIDNamespace {
		t.Skipf("descendants contained by %s here: %v", mode, err)
	}
}

// processGroupFactory builds instances in the fallback mode.
func processGroupFactory(raw json.RawMessage, env actions.Env) (actions.Action, error) {
	a, err := execaction.New(raw, env)
	if err == nil {
		execaction.ForceProcessGroup(a)
	}
	return a, err
}

// The fallback mode still behaves as every action must.
func TestConformanceProcessGroup(t *testing.T) {
	t.Parallel()
	actiontest.Run(t, conformanceSuite(t, processGroupFactory))
}

// treePIDs reads the pids tree.sh wrote to dir.
func treePIDs(t *testing.T, dir string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, name := range []string{"child", "daemon"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("pid file: %v", err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("pid file %s: %v", name, err)
		}
		out[name] = pid
		t.Cleanup(func() {
			if !processGone(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		})
	}
	return out
}

// goneWithin reports how long the processes took to be gone, failing t past limit.
func goneWithin(t *testing.T, pids map[string]int, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for name, pid := range pids {
		for !processGone(pid) {
			if time.Since(start) > limit {
				t.Fatalf("%s (pid %d) still running %s after the call returned", name, pid, limit)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return time.Since(start)
}

// TestDescendantsDie: whatever ends a call, every process its command started ends with it,
// the double-forked and setsid'd daemon included.
func TestDescendantsDie(t *testing.T) {
	t.Parallel()
	needPIDNamespace(t)
	for _, tc := range []struct {
		name    string
		timeout string
		mode    string
		cancel  bool
	}{
		{name: "timeout", timeout: "500ms"},
		{name: "cancelled", cancel: true},
		{name: "command exits", mode: "exit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			f := setup(t, config{
				Command: []string{"./testdata/tree.sh"},
				Timeout: tc.timeout,
				Env:     map[string]string{"PID_DIR": dir, "MODE": tc.mode},
			})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tc.cancel {
				go func() {
					actiontest.WaitFile(t, filepath.Join(dir, "ready"), 10*time.Second)
					cancel()
				}()
			}
			_, err := f.action.Reconcile(ctx, request())
			switch {
			case tc.mode == "exit" && err != nil:
				t.Fatalf("Reconcile: %v", err)
			case tc.mode != "exit" && err == nil:
				t.Fatal("Reconcile: err = nil; want the call interrupted")
			}
			took := goneWithin(t, treePIDs(t, dir), time.Second)
			t.Logf("descendants gone %s after the call returned", took)
		})
	}
}

// TestLockWaitsForRunningCall: a second instance (a restarted trueup) does not run the
// action of a resource whose command still runs; it fails with a retriable error instead.
func TestLockWaitsForRunningCall(t *testing.T) {
	t.Parallel()
	locks := t.TempDir()
	pidFile := filepath.Join(t.TempDir(), "pid")
	first := build(t, config{Command: []string{"./testdata/slow.sh"}, LockDir: locks,
		Env: map[string]string{"PID_FILE": pidFile}}, ".")
	out := t.TempDir()
	second := build(t, config{Command: []string{"./testdata/record.sh"}, LockDir: locks,
		Env: map[string]string{"OUT_DIR": out}}, ".")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := first.Reconcile(ctx, request())
		errc <- err
	}()
	actiontest.WaitFile(t, pidFile, 10*time.Second)

	start := time.Now()
	_, err := second.Delete(t.Context(), request()) // another operation, same resource
	waited := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "a previous run of this action for team-a/Database/orders is still running") {
		t.Fatalf("second call: err = %v; want the previous run reported", err)
	}
	if actions.IsTerminal(err) {
		t.Errorf("second call: err %v is terminal; want it retried", err)
	}
	if waited < execaction.LockWait || waited > execaction.LockWait+2*time.Second {
		t.Errorf("second call failed after %s; want about %s", waited, execaction.LockWait)
	}
	if _, err := os.Stat(filepath.Join(out, "stdin.json")); err == nil {
		t.Fatal("second command ran next to the first")
	}
	other := request()
	other.Resource.Name, other.Resource.UID = "another-resource", "another-uid"
	if _, err := second.Reconcile(t.Context(), other); err != nil {
		t.Fatalf("call for another resource: %v", err)
	}

	cancel()
	if err := <-errc; err == nil {
		t.Fatal("first call: err = nil; want it cancelled")
	}
	if _, err := second.Reconcile(t.Context(), request()); err != nil {
		t.Fatalf("call after the first ended: %v", err)
	}
}

// TestLockHeldByLeftoverDaemon: in process-group mode a daemon the command left behind
// outlives the call, and holds the lock it inherited: the next run for the resource waits for
// it and fails, whatever instance makes it; once the daemon is gone the next run goes ahead.
func TestLockHeldByLeftoverDaemon(t *testing.T) {
	t.Parallel()
	locks := t.TempDir()
	instance := func(pidDir string) actions.Action {
		a := build(t, config{Command: []string{"./testdata/tree.sh"}, LockDir: locks,
			Env: map[string]string{"PID_DIR": pidDir, "MODE": "exit"}}, ".")
		execaction.ForceProcessGroup(a)
		return a
	}
	dir1, dir2 := t.TempDir(), t.TempDir()
	first, second := instance(dir1), instance(dir2)

	if _, err := first.Reconcile(t.Context(), request()); err != nil {
		t.Fatalf("first call: %v", err)
	}
	pids := treePIDs(t, dir1)
	goneWithin(t, map[string]int{"child": pids["child"]}, time.Second) // its process group
	if processGone(pids["daemon"]) {
		t.Fatal("the setsid'd daemon died with the call; this test needs it to outlive the call")
	}

	_, err := second.Reconcile(t.Context(), request())
	if err == nil || !strings.Contains(err.Error(), "is still running") || actions.IsTerminal(err) {
		t.Fatalf("call while the daemon lives: err = %v; want a retriable previous-run error", err)
	}
	if _, err := os.Stat(filepath.Join(dir2, "ready")); err == nil {
		t.Fatal("second command ran while the first one's daemon held the lock")
	}

	if err := syscall.Kill(pids["daemon"], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	goneWithin(t, map[string]int{"daemon": pids["daemon"]}, time.Second)
	if _, err := second.Reconcile(t.Context(), request()); err != nil {
		t.Fatalf("call after the daemon died: %v", err)
	}
	treePIDs(t, dir2) // its daemon, killed at cleanup
}

// TestInitDiesOfTERM: as PID 1, a command without a SIGTERM handler would ignore the SIGTERM
// of a timeout and live through the grace; it is killed at once, as an ordinary process
// would have died.
func TestInitDiesOfTERM(t *testing.T) {
	t.Parallel()
	needPIDNamespace(t)
	f := setup(t, config{Command: []string{"sleep", "1000"}, Timeout: "300ms"})
	start := time.Now()
	_, err := f.action.Reconcile(t.Context(), request())
	if err == nil || !strings.HasPrefix(err.Error(), "timed out after 300ms") {
		t.Fatalf("err = %v; want a timeout", err)
	}
	if elapsed := time.Since(start); elapsed > 300*time.Millisecond+time.Second {
		t.Errorf("Reconcile returned after %s; the SIGTERM should have ended the command", elapsed)
	}
}
