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

// A reconcile never waits for, nor fails because of, a preview's plan: a plan in progress is
// stopped and says why.
func TestReconcilePreemptsPlan(t *testing.T) {
	t.Parallel()
	started := filepath.Join(t.TempDir(), "plan-started")
	f := setup(t, "preempt", config{Binary: "testdata/slow-plan-tf.sh",
		Env: map[string]string{"TF_REAL": binary(t), "PLAN_STARTED": started}})
	req := request("db", `{"size": 1}`)
	if _, err := f.action.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}

	planErr := make(chan error, 1)
	go func() {
		preq := request("db", `{"size": 2}`)
		_, err := f.action.(actions.Planner).Plan(t.Context(), preq)
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
	res, err := f.action.Reconcile(t.Context(), req)
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
