package ghactions

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
)

const planWith = `{"planWorkflow":"plan.yml"}`

// planShape makes plan runs take three reads and publish outputs (nil: no artifact).
func planShape(outputs string) func(*fakeRun) {
	return func(r *fakeRun) {
		if r.Inputs["operation"] != "plan" {
			return
		}
		r.CompleteAfter = 3
		r.Jobs = []fakeJob{{Name: "plan", Conclusion: "success"}}
		if outputs != "" {
			r.Outputs = []byte(outputs)
		}
	}
}

func planOnce(t *testing.T, a *Action, r *resource, timeout time.Duration) (actions.Plan, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	return a.Plan(ctx, r.request())
}

// The hash is published as it is: a plan run whose hash holds the instance's token is refused,
// the error naming the field and not the token.
func TestPlanRefusesHashHoldingASecret(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	f.shapeRun = planShape(`{"changes": true, "add": 1, "hash": "h-` + f.token + `"}`)
	a, _ := newAction(t, f, f.config(nil), t.TempDir())
	p, err := planOnce(t, a, newResource("orders", planWith), 10*time.Second)
	if err == nil || !strings.HasSuffix(err.Error(), `: "hash" holds a secret of the call`) || strings.Contains(err.Error(), f.token) {
		t.Fatalf("Plan = %+v, %v; want the hash refused", p, err)
	}
}

func TestPlanWithoutPlanWorkflow(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	a, _ := newAction(t, f, f.config(nil), t.TempDir())
	if _, err := planOnce(t, a, newResource("plain", `{}`), 5*time.Second); !errors.Is(err, actions.ErrNoPlan) {
		t.Fatalf("err = %v, want ErrNoPlan", err)
	}
	if req, _, _, _ := f.counters(); req != 0 {
		t.Fatalf("%d requests without a plan workflow", req)
	}
}

func TestPlanReadsArtifact(t *testing.T) {
	t.Parallel()
	eachDispatchAnswer(t, func(t *testing.T, f *fakeGitHub) {
		f.shapeRun = planShape(`{"changes": true, "summary": "1 to add, 0 to change, 0 to destroy", "plan": "+ aws_db_instance.main", "add": 1, "hash": "run-plan-1"}`)
		a, _ := newAction(t, f, f.config(nil), t.TempDir())
		r := newResource("orders", planWith)
		p, err := planOnce(t, a, r, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if !p.Changes || p.Summary != "1 to add, 0 to change, 0 to destroy" || p.Text != "+ aws_db_instance.main" ||
			!p.Counted || p.Add != 1 || p.Hash != "run-plan-1" {
			t.Fatalf("plan = %+v", p)
		}
		plans := runFor(t, f, "orders", "plan.yml")
		if len(plans) != 1 || plans[0].Inputs["operation"] != "plan" || plans[0].Inputs["spec"] != `{"engine":"postgres","size":"small"}` {
			t.Fatalf("plan runs = %+v", plans)
		}
		// No side effect on the resource's state: nothing checkpointed, nothing kept.
		if len(r.checkpoints) != 0 || r.state != nil {
			t.Fatalf("plan touched the state: %d checkpoints, state %s", len(r.checkpoints), r.state)
		}
		// The reconcile that follows dispatches its own run, never adopting the plan's.
		res := mustDrive(t, r, a.Reconcile)
		deploys := runFor(t, f, "orders", "deploy.yml")
		if len(deploys) != 1 || outputInt(t, res.Outputs, "runID") != deploys[0].ID ||
			deploys[0].Inputs["trueup_id"] == plans[0].Inputs["trueup_id"] {
			t.Fatalf("reconcile after a plan: deploy runs %+v, outputs %v", deploys, res.Outputs)
		}
	})
}

func TestPlanFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		shape func(*fakeRun)
		want  string
	}{
		{name: "run fails", shape: func(r *fakeRun) {
			r.Final = "failure"
			r.Jobs = []fakeJob{{Name: "terraform-plan", Conclusion: "failure"}}
		}, want: "terraform-plan"},
		{name: "no artifact", shape: planShape(""), want: "published no trueup-outputs artifact"},
		{name: "changes not a boolean", shape: planShape(`{"changes": "yes"}`), want: `boolean "changes"`},
		{name: "plan not a string", shape: planShape(`{"changes": false, "plan": 3}`), want: `"plan" is not a string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeGitHub(t)
			f.shapeRun = tc.shape
			a, _ := newAction(t, f, f.config(nil), t.TempDir())
			_, err := planOnce(t, a, newResource("orders", planWith), 10*time.Second)
			if err == nil || errors.Is(err, actions.ErrNoPlan) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestPlanDeadlineCancelsRun(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	f.shapeRun = func(r *fakeRun) { r.CompleteAfter = -1 }
	a, _ := newAction(t, f, f.config(nil), t.TempDir())
	start := time.Now()
	_, err := planOnce(t, a, newResource("slowplan", planWith), 200*time.Millisecond)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the deadline", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("Plan returned after %s", el)
	}
	plans := runFor(t, f, "slowplan", "plan.yml")
	f.mu.Lock()
	cancels := slices.Clone(f.cancels)
	f.mu.Unlock()
	if len(plans) != 1 || !slices.Contains(cancels, plans[0].ID) {
		t.Fatalf("plan run %+v not cancelled (cancels %v)", plans, cancels)
	}
}

func TestPlanScrubsSecrets(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	f.shapeRun = planShape(`{"changes": true, "summary": "ok", "plan": "password = hunter2-long-value"}`)
	a, _ := newAction(t, f, f.config(nil), t.TempDir())
	r := newResource("orders", planWith)
	req := r.request()
	req.Secrets = []string{"hunter2-long-value"}
	p, err := a.Plan(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if p.Text != "password = ***" {
		t.Fatalf("plan text %q", p.Text)
	}
}

func TestPlanWorkflowValidated(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	a, _ := newAction(t, f, f.config(nil), t.TempDir())
	if err := a.ValidateWith([]byte(`{"planWorkflow": "../x"}`)); err == nil || !strings.Contains(err.Error(), "planWorkflow") {
		t.Fatalf("ValidateWith: %v", err)
	}
}
