//go:build unix

package terraform_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
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
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the plan did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}

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
