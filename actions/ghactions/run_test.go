package ghactions

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
)

func TestCrashBetweenDispatchAndRecordAdoptsTheRun(t *testing.T) {
	t.Parallel()
	eachDispatchAnswer(t, func(t *testing.T, f *fakeGitHub) {
		f.shapeRun = func(r *fakeRun) { r.CompleteAfter = 3 }
		a, _ := newAction(t, f, f.config(nil), t.TempDir())
		r := newResource("crash", `{}`)

		// The replica dispatches, then dies before its result is written: only the
		// checkpoint reached the store.
		if _, err := a.Reconcile(t.Context(), r.request()); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		st := r.decoded(t)
		if st.Phase != phaseDispatching || st.Correlation == "" || st.DispatchedAt.IsZero() || st.Workflow != "deploy.yml" {
			t.Fatalf("checkpointed state = %+v; want the dispatch intent", st)
		}

		// Another replica (a fresh instance) takes over from the checkpoint.
		b, _ := newAction(t, f, f.config(nil), t.TempDir())
		res := mustDrive(t, r, b.Reconcile)
		runs := runFor(t, f, "crash", "deploy.yml")
		if _, d, _, _ := f.counters(); d != 1 || len(runs) != 1 {
			t.Fatalf("dispatches = %d, runs = %d; want the run adopted, not dispatched twice", d, len(runs))
		}
		if got := outputInt(t, res.Outputs, "runID"); got != runs[0].ID {
			t.Errorf("adopted run %d, want %d", got, runs[0].ID)
		}
	})
}

func TestAdoptsRunFromStateWithCorrelation(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	a, _ := newAction(t, f, f.config(nil), t.TempDir())
	// GitHub already received the dispatch carrying this correlation id.
	const corr = "trueup-0123456789abcdef01234567"
	body, _ := json.Marshal(map[string]any{"ref": "main", "inputs": map[string]string{"trueup_id": corr, "name": "adopt"}})
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/repos/acme/infra/actions/workflows/deploy.yml/dispatches", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+f.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("direct dispatch: %v %v", resp, err)
	}
	resp.Body.Close()

	r := newResource("adopt", `{}`)
	r.state, _ = json.Marshal(map[string]any{"phase": "dispatching", "correlation": corr, "generation": 1,
		"workflow": "deploy.yml", "dispatchedAt": f.now().UTC()})
	res := mustDrive(t, r, a.Reconcile)
	runs := runFor(t, f, "adopt", "deploy.yml")
	if _, d, _, _ := f.counters(); d != 1 || len(runs) != 1 {
		t.Fatalf("dispatches = %d; want 1 (adopted)", d)
	}
	if got := outputInt(t, res.Outputs, "runID"); got != runs[0].ID {
		t.Errorf("adopted run %d, want %d", got, runs[0].ID)
	}
}

func TestCheckpointFailurePreventsDispatch(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	a, _ := newAction(t, f, f.config(nil), t.TempDir())
	r := newResource("fenced", `{}`)
	r.failCheckpoint = errors.New("lease lost")
	_, err := a.Reconcile(t.Context(), r.request())
	if err == nil || !strings.Contains(err.Error(), "not dispatched") || !strings.Contains(err.Error(), "lease lost") {
		t.Fatalf("Reconcile with a failing checkpoint: err = %v", err)
	}
	if requests, d, _, _ := f.counters(); d != 0 || requests != 0 {
		t.Errorf("dispatches = %d, requests = %d; want none", d, requests)
	}
}

func TestUnconfirmedDispatchWithoutRunIsDispatchedAgainAfterGrace(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	a, _ := newAction(t, f, f.config(nil), t.TempDir())
	r := newResource("lost", `{}`)
	lost := state{Op: opReconcile, Phase: phaseDispatching, Generation: 1, Workflow: "deploy.yml",
		Correlation: "trueup-neverarrived", DispatchedAt: f.now().Add(-30 * time.Second)}
	r.state = lost.encode()

	res, err := a.Reconcile(t.Context(), r.request())
	if err != nil {
		t.Fatalf("Reconcile within grace: %v", err)
	}
	if res.Done || !bytes.Equal(res.State, lost.encode()) {
		t.Fatalf("within grace: Done %v State %s; want to keep waiting for the run", res.Done, res.State)
	}
	if _, d, _, _ := f.counters(); d != 0 {
		t.Fatalf("dispatched within the grace window")
	}

	f.clk.advance(adoptGrace)
	res = mustDrive(t, r, a.Reconcile)
	if _, d, _, _ := f.counters(); d != 1 {
		t.Fatalf("dispatches = %d, want 1 after the grace window", d)
	}
	runs := runFor(t, f, "lost", "deploy.yml")
	if st := r.decoded(t); st.Correlation == lost.Correlation || runs[0].Inputs["trueup_id"] != st.Correlation {
		t.Errorf("re-dispatch kept correlation %q; want a new one", st.Correlation)
	}
	if !res.Done {
		t.Errorf("not done")
	}
}

func TestConfirmedDispatchWhoseRunCannotBeFound(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	f.runDetails = false
	f.shapeRun = func(r *fakeRun) { r.Title = "Deploy" } // the workflow forgot run-name
	a, _ := newAction(t, f, f.config(nil), t.TempDir())
	r := newResource("noname", `{}`)
	res, err := a.Reconcile(t.Context(), r.request())
	if err != nil || res.Done {
		t.Fatalf("Reconcile: %+v %v", res, err)
	}
	r.record(res)
	f.clk.advance(adoptGrace + time.Second)
	_, err = a.Reconcile(t.Context(), r.request())
	if err == nil || !strings.Contains(err.Error(), "run-name: ${{ inputs.trueup_id }}") {
		t.Fatalf("err = %v; want an explanation about run-name", err)
	}
	if actions.IsTerminal(err) {
		t.Errorf("not-found run is terminal; want retried")
	}
	if _, d, _, _ := f.counters(); d != 1 {
		t.Errorf("dispatches = %d; a confirmed dispatch must not be repeated", d)
	}
}

func TestFailingRun(t *testing.T) {
	t.Parallel()
	for _, revert := range []bool{false, true} {
		t.Run("revertOnError="+strconv.FormatBool(revert), func(t *testing.T) {
			t.Parallel()
			f := newFakeGitHub(t)
			attempt := 0
			f.shapeRun = func(r *fakeRun) {
				attempt++
				if attempt == 1 {
					r.CompleteAfter = 2
					r.Final = "failure"
					r.Jobs = []fakeJob{{"build", "success"}, {"deploy", "failure"}, {"smoke-test", "cancelled"}, {"notify", "skipped"}}
				}
			}
			a, _ := newAction(t, f, f.config(nil), t.TempDir())
			r := newResource("failing", `{}`)
			r.revertOnError = revert
			_, err := drive(t, r, a.Reconcile)
			if err == nil {
				t.Fatal("failing run: no error")
			}
			runs := runFor(t, f, "failing", "deploy.yml")
			msg := err.Error()
			for _, want := range []string{fakeHTMLURL + strconv.FormatInt(runs[0].ID, 10), "deploy", "smoke-test", "concluded failure"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q lacks %q", msg, want)
				}
			}
			if strings.Contains(msg, "build") || strings.Contains(msg, "notify") {
				t.Errorf("error %q names jobs that did not fail", msg)
			}
			if actions.IsTerminal(err) {
				t.Error("failed run is terminal; want retried with backoff")
			}
			if st := r.decoded(t); !revert && st.Phase != phaseFailed {
				t.Fatalf("checkpointed state %+v; want phase failed", st)
			}
			// The retry dispatches again.
			res := mustDrive(t, r, a.Reconcile)
			runs = runFor(t, f, "failing", "deploy.yml")
			if len(runs) != 2 || outputInt(t, res.Outputs, "runID") != runs[1].ID {
				t.Fatalf("retry: %d runs, outputs %v", len(runs), res.Outputs)
			}
		})
	}
}

func TestNewGenerationCancelsSupersededRun(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	f.shapeRun = func(r *fakeRun) { r.CompleteAfter = -1 }
	a, _ := newAction(t, f, f.config(nil), t.TempDir())
	r := newResource("moving", `{}`)
	res, err := a.Reconcile(t.Context(), r.request())
	if err != nil || res.Done {
		t.Fatalf("gen 1: %+v %v", res, err)
	}
	r.record(res)
	old := r.decoded(t).RunID

	r.gen = 2
	res, err = a.Reconcile(t.Context(), r.request())
	if err != nil || res.Done {
		t.Fatalf("gen 2: %+v %v", res, err)
	}
	r.record(res)
	st := r.decoded(t)
	f.mu.Lock()
	cancels := slices.Clone(f.cancels)
	f.mu.Unlock()
	if !slices.Equal(cancels, []int64{old}) {
		t.Fatalf("cancelled %v, want [%d]", cancels, old)
	}
	if st.RunID == old || st.Generation != 2 || st.Supersedes != old {
		t.Fatalf("state %+v; want a new run for generation 2 superseding %d", st, old)
	}
	if !strings.Contains(res.Message, "supersedes run "+strconv.FormatInt(old, 10)) {
		t.Errorf("message %q does not name the superseded run", res.Message)
	}
	f.finish(st.RunID, "success")
	final := mustDrive(t, r, a.Reconcile)
	if outputInt(t, final.Outputs, "supersedes") != old || outputInt(t, final.Outputs, "runID") != st.RunID {
		t.Errorf("outputs %v", final.Outputs)
	}

	// A superseded run that completed meanwhile: cancel answers 409, which is fine.
	stale := st
	stale.Phase, stale.Outputs = phaseRunning, nil
	r.state = stale.encode()
	r.gen = 3
	f.mu.Lock()
	f.shapeRun = nil
	f.mu.Unlock()
	final = mustDrive(t, r, a.Reconcile)
	if got := r.decoded(t); got.Generation != 3 || !final.Done {
		t.Errorf("gen 3 after a 409 cancel: %+v", got)
	}
}

func TestDelete(t *testing.T) {
	t.Parallel()
	t.Run("nothing dispatched", func(t *testing.T) {
		t.Parallel()
		f := newFakeGitHub(t)
		a, _ := newAction(t, f, f.config(nil), t.TempDir())
		res, err := a.Delete(t.Context(), newResource("never", `{}`).request())
		if err != nil || !res.Done {
			t.Fatalf("Delete: %+v %v", res, err)
		}
		if requests, _, _, _ := f.counters(); requests != 0 {
			t.Errorf("requests = %d", requests)
		}
	})
	for _, tc := range []struct {
		name, with, workflow string
	}{
		{"deleteWorkflow", `{"deleteWorkflow":"delete.yml"}`, "delete.yml"},
		{"same workflow", `{}`, "deploy.yml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeGitHub(t)
			f.shapeRun = func(r *fakeRun) { r.CompleteAfter = 2 }
			a, _ := newAction(t, f, f.config(nil), t.TempDir())
			r := newResource("gone", tc.with)
			mustDrive(t, r, a.Reconcile)
			res := mustDrive(t, r, a.Delete)
			runs := runFor(t, f, "gone", tc.workflow)
			last := runs[len(runs)-1]
			if last.Inputs["operation"] != "delete" || outputInt(t, res.Outputs, "runID") != last.ID {
				t.Fatalf("delete run %+v, outputs %v", last, res.Outputs)
			}
			if _, d, _, _ := f.counters(); d != 2 {
				t.Errorf("dispatches = %d, want 2", d)
			}
			again, err := a.Delete(t.Context(), r.request())
			if err != nil || !again.Done {
				t.Errorf("Delete after Done: %+v %v", again, err)
			}
		})
	}
	t.Run("cancels the reconcile in flight", func(t *testing.T) {
		t.Parallel()
		f := newFakeGitHub(t)
		f.shapeRun = func(r *fakeRun) {
			if r.Inputs["operation"] == "reconcile" {
				r.CompleteAfter = -1
			}
		}
		a, _ := newAction(t, f, f.config(nil), t.TempDir())
		r := newResource("hurry", `{"deleteWorkflow":"delete.yml"}`)
		res, err := a.Reconcile(t.Context(), r.request())
		if err != nil {
			t.Fatal(err)
		}
		r.record(res)
		running := r.decoded(t).RunID
		mustDrive(t, r, a.Delete)
		f.mu.Lock()
		defer f.mu.Unlock()
		if !slices.Equal(f.cancels, []int64{running}) {
			t.Errorf("cancels = %v, want [%d]", f.cancels, running)
		}
	})
}

func TestInputLimitsAreTerminal(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	a, _ := newAction(t, f, f.config(nil), t.TempDir())
	r := newResource("huge", `{}`)
	r.spec = json.RawMessage(`{"blob":"` + strings.Repeat("x", maxInputChars) + `"}`)
	_, err := a.Reconcile(t.Context(), r.request())
	if !actions.IsTerminal(err) || !strings.Contains(err.Error(), "65535") {
		t.Fatalf("oversized inputs: err = %v; want a terminal error naming the limit", err)
	}
	if requests, _, _, _ := f.counters(); requests != 0 || len(r.checkpoints) != 0 {
		t.Errorf("requests = %d, checkpoints = %d; want none", requests, len(r.checkpoints))
	}
}
