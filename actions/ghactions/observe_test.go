package ghactions

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const checkWith = `{"checkWorkflow":"check.yml"}`

func TestObserveWithoutCheckWorkflow(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	a, _ := newAction(t, f, f.config(nil), t.TempDir())
	r := newResource("plain", `{}`)
	mustDrive(t, r, a.Reconcile)
	before, _, _, _ := f.counters()
	obs, err := a.Observe(t.Context(), r.request())
	if err != nil || !obs.InSync {
		t.Fatalf("Observe: %+v %v", obs, err)
	}
	if after, _, _, _ := f.counters(); after != before {
		t.Errorf("Observe without checkWorkflow made %d requests", after-before)
	}
}

func TestObserveCheckSucceeds(t *testing.T) {
	t.Parallel()
	eachDispatchAnswer(t, func(t *testing.T, f *fakeGitHub) {
		f.visibleIn = 10 * time.Millisecond
		f.shapeRun = func(r *fakeRun) { r.CompleteAfter = 3 }
		a, _ := newAction(t, f, f.config(nil), t.TempDir())
		r := newResource("steady", checkWith)
		mustDrive(t, r, a.Reconcile)
		obs, err := a.Observe(t.Context(), r.request())
		if err != nil || !obs.InSync {
			t.Fatalf("Observe: %+v %v", obs, err)
		}
		checks := runFor(t, f, "steady", "check.yml")
		if len(checks) != 1 || checks[0].Inputs["operation"] != "check" {
			t.Fatalf("check runs = %+v", checks)
		}
		if !strings.Contains(obs.Message, fakeHTMLURL+strconv.FormatInt(checks[0].ID, 10)) {
			t.Errorf("message %q lacks the check run URL", obs.Message)
		}
	})
}

func TestObserveDriftLeadsToNewRun(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	f.shapeRun = func(r *fakeRun) {
		if r.Inputs["operation"] == "check" {
			r.Final = "failure"
			r.Jobs = []fakeJob{{"compare", "failure"}}
		}
	}
	a, _ := newAction(t, f, f.config(nil), t.TempDir())
	r := newResource("drifty", checkWith)
	mustDrive(t, r, a.Reconcile)

	obs, err := a.Observe(t.Context(), r.request())
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	check := runFor(t, f, "drifty", "check.yml")[0]
	if obs.InSync || !strings.Contains(obs.Message, "compare") || !strings.Contains(obs.Message, fakeHTMLURL+strconv.FormatInt(check.ID, 10)) {
		t.Fatalf("Observe = %+v; want drift naming the failing job and the run URL", obs)
	}
	// The reconcile that follows the drift runs the workflow again, once.
	res := mustDrive(t, r, a.Reconcile)
	deploys := runFor(t, f, "drifty", "deploy.yml")
	if len(deploys) != 2 || outputInt(t, res.Outputs, "runID") != deploys[1].ID {
		t.Fatalf("after drift: %d deploy runs, outputs %v", len(deploys), res.Outputs)
	}
	mustDrive(t, r, a.Reconcile)
	if n := len(runFor(t, f, "drifty", "deploy.yml")); n != 2 {
		t.Errorf("a second reconcile without drift dispatched again (%d runs)", n)
	}
}

func TestObserveCheckTimeout(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	f.shapeRun = func(r *fakeRun) {
		if r.Inputs["operation"] == "check" {
			r.CompleteAfter = -1
		}
	}
	a, _ := newAction(t, f, f.config(map[string]any{"checkTimeout": "100ms"}), t.TempDir())
	r := newResource("slowcheck", checkWith)
	mustDrive(t, r, a.Reconcile)
	_, err := a.Observe(t.Context(), r.request())
	if err == nil || !strings.Contains(err.Error(), "no result within 100ms") {
		t.Fatalf("err = %v", err)
	}
	check := runFor(t, f, "slowcheck", "check.yml")[0]
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.cancels, check.ID) {
		t.Errorf("the abandoned check run %d was not cancelled (cancels %v)", check.ID, f.cancels)
	}
}

func TestObserveRateLimitedSkipsCheck(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	a, _ := newAction(t, f, f.config(nil), t.TempDir())
	r := newResource("limitedcheck", checkWith)
	mustDrive(t, r, a.Reconcile)
	f.setLimit("429", time.Minute)
	obs, err := a.Observe(t.Context(), r.request())
	if err != nil || !obs.InSync || !strings.Contains(obs.Message, "drift check skipped") {
		t.Fatalf("Observe under a rate limit: %+v %v", obs, err)
	}
	requests, _, _, _ := f.counters()
	obs, err = a.Observe(t.Context(), r.request())
	if err != nil || !obs.InSync {
		t.Fatalf("second Observe: %+v %v", obs, err)
	}
	if after, _, _, _ := f.counters(); after != requests {
		t.Errorf("second Observe during the limit made %d requests", after-requests)
	}
}
