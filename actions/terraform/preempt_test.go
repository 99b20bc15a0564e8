//go:build unix

package terraform_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/actiontest"
)

// A reconcile never waits for, nor fails because of, a preview's plan: through the host's
// gate, a plan in progress is stopped (terraform killed) and says why.
func TestReconcilePreemptsPlan(t *testing.T) {
	t.Parallel()
	started := filepath.Join(t.TempDir(), "plan-started")
	f := setup(t, "preempt", config{Binary: "testdata/slow-plan-tf.sh",
		Env: map[string]string{"TF_REAL": binary(t), "PLAN_STARTED": started}})
	var gate actions.PlanGate
	req := request("db", `{"size": 1}`)
	if _, err := f.action.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}

	planErr := make(chan error, 1)
	go func() {
		preq := request("db", `{"size": 2}`)
		_, err := gate.Plan(t.Context(), f.action.(actions.Planner), preq)
		planErr <- err
	}()
	actiontest.WaitFile(t, started, 30*time.Second)

	start := time.Now()
	req.Resource.Spec = []byte(`{"size": 3}`)
	done, err := gate.Want(t.Context(), req.Resource)
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.action.Reconcile(t.Context(), req)
	done()
	if err != nil {
		t.Fatalf("a reconcile during a plan: %v", err)
	}
	if res.Outputs["size"] == nil || time.Since(start) > 20*time.Second {
		t.Fatalf("reconcile = %+v after %s; want it applied at once", res, time.Since(start))
	}
	if err := <-planErr; err == nil || !strings.Contains(err.Error(), "the resource is being reconciled: no plan now") {
		t.Fatalf("the preempted plan's error = %v", err)
	}
}

// A plan's init holds the instance's init lock, which a call of any resource of the instance
// takes: the call stops the plan instead of waiting for its init (both working copies need
// one after a module, binary or backend change).
func TestCallPreemptsPlanInit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	slow, started := filepath.Join(dir, "slow-init"), filepath.Join(dir, "init-started")
	f := setup(t, "preemptinit", config{Binary: "testdata/slow-init-tf.sh",
		Env: map[string]string{"TF_REAL": binary(t), "SLOW_INIT": slow, "INIT_STARTED": started}})
	for _, name := range []string{"a", "b"} {
		if _, err := f.action.Reconcile(t.Context(), request(name, `{"size": 1}`)); err != nil {
			t.Fatal(err)
		}
	}
	// Both working copies init again on their next call.
	stamps, err := filepath.Glob(filepath.Join(f.cfg.WorkDir, "*", "stamp"))
	if err != nil || len(stamps) != 2 {
		t.Fatalf("stamps %v, %v", stamps, err)
	}
	for _, s := range stamps {
		if err := os.Remove(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(slow, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	gate := actions.GateFor(nil, f.action)
	planErr := make(chan error, 1)
	go func() {
		_, err := gate.Plan(t.Context(), f.action.(actions.Planner), request("a", `{"size": 2}`))
		planErr <- err
	}()
	actiontest.WaitFile(t, started, 30*time.Second)
	if err := os.Remove(slow); err != nil { // b's init runs at once
		t.Fatal(err)
	}
	// Well within the plan's minute-long init.
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()
	req := request("b", `{"size": 3}`)
	done, err := gate.Want(ctx, req.Resource)
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.action.Reconcile(ctx, req)
	done()
	if err != nil || res.Outputs["size"] == nil {
		t.Fatalf("reconcile of b during a's plan init = %+v, %v", res, err)
	}
	if err := <-planErr; !errors.Is(err, actions.ErrPlanBusy) {
		t.Fatalf("the preempted plan's error = %v, want ErrPlanBusy", err)
	}
}
