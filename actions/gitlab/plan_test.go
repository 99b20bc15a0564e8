package gitlab

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
)

// planJobs makes plan pipelines run one job, "plan", whose artifact is outputs ("" none).
func planJobs(fx fixture, status string) {
	fx.f.set(func(f *fakeGitLab) {
		f.jobs = func(vars map[string]string) []fakeJob {
			if vars["TRUEUP_OPERATION"] == "plan" {
				return []fakeJob{{Name: "plan", Stage: "plan", Status: status}}
			}
			return []fakeJob{{Name: "apply", Stage: "deploy", Status: "success"}}
		}
	})
}

func TestPlanWithoutPlanJob(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	if _, err := fx.driver(t, "orders").Plan(5 * time.Second); !errors.Is(err, actions.ErrNoPlan) {
		t.Fatalf("err = %v, want ErrNoPlan", err)
	}
	if n := fx.f.requestCount(); n != 0 {
		t.Fatalf("%d requests without a plan job", n)
	}
}

func TestPlanReadsArtifact(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	planJobs(fx, "success")
	fx.f.set(func(f *fakeGitLab) {
		f.finishAfter, f.finishAs = 3, "success"
		f.artifacts[f.nextJobID+1] = `{"changes": true, "summary": "1 to add, 0 to change, 0 to destroy", "plan": "+ db", "add": 1, "destroy": 0}`
	})
	d := fx.driver(t, "orders")
	d.With = json.RawMessage(`{"planJob": "plan"}`)
	p, err := d.Plan(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Changes || p.Summary != "1 to add, 0 to change, 0 to destroy" || p.Text != "+ db" || !p.Counted || p.Add != 1 || p.Destroy != 0 {
		t.Fatalf("plan = %+v", p)
	}
	pl := fx.f.last()
	if pl.Vars["TRUEUP_OPERATION"] != "plan" || pl.Vars["TRUEUP_SPEC"] != `{"engine":"postgres","storage_gb":500}` || pl.Vars["TRUEUP_ID"] == "" {
		t.Fatalf("plan pipeline variables %v", pl.Vars)
	}
	if pl.reads != 3 {
		t.Errorf("plan pipeline read %d times, want 3", pl.reads)
	}
	if d.State != nil || d.Checkpoints != 0 {
		t.Fatalf("plan touched the state: %s, %d checkpoints", d.State, d.Checkpoints)
	}
	// The reconcile that follows triggers its own pipeline, under its own TRUEUP_ID.
	d.Must(opReconcile)
	rec := fx.f.last()
	if fx.f.routeCount("POST trigger") != 2 || rec.ID == pl.ID || rec.Vars["TRUEUP_OPERATION"] != "reconcile" ||
		rec.Vars["TRUEUP_ID"] == pl.Vars["TRUEUP_ID"] || d.st().PipelineID != rec.ID {
		t.Fatalf("reconcile after a plan: pipeline %+v, state %s", rec, d.State)
	}
}

func TestPlanFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		finishAs string
		jobState string
		artifact string // "" none
		with     string
		want     string
	}{
		{name: "pipeline fails", finishAs: "failed", jobState: "failed", with: `{"planJob": "plan"}`, want: "failed jobs: plan"},
		{name: "no artifact", finishAs: "success", jobState: "success", with: `{"planJob": "plan"}`, want: "trueup-outputs.json"},
		{name: "no such job", finishAs: "success", jobState: "success", artifact: `{"changes": true}`, with: `{"planJob": "tf-plan"}`, want: `no job "tf-plan"`},
		{name: "changes missing", finishAs: "success", jobState: "success", artifact: `{"summary": "x"}`, with: `{"planJob": "plan"}`, want: `boolean "changes"`},
		{name: "a negative count", finishAs: "success", jobState: "success", artifact: `{"changes": true, "destroy": -1}`, with: `{"planJob": "plan"}`,
			want: `trueup-outputs.json: "destroy": want a non-negative integer`},
		{name: "a hash holding the trigger token", finishAs: "success", jobState: "success", artifact: `{"changes": true, "add": 1, "hash": "h-glptt-TRIGGER-s3cr3t-123456"}`,
			with: `{"planJob": "plan"}`, want: `trueup-outputs.json: "hash" holds a secret of the call`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := setup(t, nil)
			planJobs(fx, tc.jobState)
			fx.f.set(func(f *fakeGitLab) {
				f.finishAfter, f.finishAs = 1, tc.finishAs
				if tc.artifact != "" {
					f.artifacts[f.nextJobID+1] = tc.artifact
				}
			})
			d := fx.driver(t, "orders")
			d.With = json.RawMessage(tc.with)
			_, err := d.Plan(10 * time.Second)
			if err == nil || errors.Is(err, actions.ErrNoPlan) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestPlanDeadlineCancelsPipeline(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	planJobs(fx, "running")
	d := fx.driver(t, "orders")
	d.With = json.RawMessage(`{"planJob": "plan"}`)
	start := time.Now()
	_, err := d.Plan(200 * time.Millisecond)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the deadline", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("Plan returned after %s", el)
	}
	if p := fx.f.last(); p.Cancels != 1 {
		t.Fatalf("plan pipeline cancelled %d times, want 1", p.Cancels)
	}
}

func TestPlanJobValidated(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	if err := fx.a.ValidateWith(json.RawMessage(`{"planJob": " plan"}`)); err == nil || !strings.Contains(err.Error(), "planJob") {
		t.Fatalf("ValidateWith: %v", err)
	}
}
