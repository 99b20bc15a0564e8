package gitlab

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/actiontest"
	"github.com/trueup-dev/trueup/internal/forge/gitlabapi"
	"github.com/trueup-dev/trueup/internal/logbuf"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	f := newFakeGitLab(t)
	f.initialStatus = "success" // so that the first Reconcile already reports Done
	slow := actiontest.HangingServer(t)
	actiontest.Run(t, actiontest.Suite{
		Factory: New,
		Config:  f.config(nil),
		SlowConfig: actiontest.MustJSON(t, map[string]any{"baseURL": slow.URL, "project": 42,
			"triggerToken": "glptt-slow-123456", "token": "glpat-slow-123456"}),
		With: json.RawMessage(`{"ref": "release", "variables": {"TIER": "gold", "REPLICAS": 3}}`),
		Env:  actions.Env{Name: "conformance"},
	})
}

// logBuffer collects log lines from concurrent calls.
type logBuffer = logbuf.Buffer

// fixture is a fake GitLab and an instance talking to it, logging into logs.
type fixture struct {
	f     *fakeGitLab
	a     *Action
	logs  *logBuffer
	clock *clock
}

// clock is a settable time for the rate-limit pause.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func setup(t *testing.T, extra map[string]any) fixture {
	t.Helper()
	f := newFakeGitLab(t)
	logs := &logBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	act, err := New(f.config(extra), actions.Env{Name: "ci", Logger: logger})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	a := act.(*Action)
	clk := &clock{t: time.Now()}
	a.now = clk.now
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		for _, secret := range (fixture{f: f}).secrets() {
			if strings.Contains(logs.String(), secret) {
				t.Errorf("a token appears in the logs:\n%s", logs)
			}
		}
	})
	return fixture{f: f, a: a, logs: logs, clock: clk}
}

// driver calls the instance for one resource the way the reconciler does.
type driver struct {
	*actiontest.Driver
	fx fixture
}

func (fx fixture) driver(t *testing.T, name string) *driver {
	return &driver{fx: fx, Driver: &actiontest.Driver{T: t, Action: fx.a, Secrets: fx.secrets(), Resource: actions.Resource{
		APIVersion: "example.com/v1", Kind: "Database", Namespace: "team-a", Name: name,
		UID: "uid-" + name, Generation: 1, Spec: json.RawMessage(`{ "engine": "postgres", "storage_gb": 500 }`),
		Revision: "0123456789abcdef0123456789abcdef01234567",
	}}}
}

func (d *driver) st() state {
	d.T.Helper()
	var s state
	d.DecodeState(&s)
	return s
}

// secrets are the tokens no answer, state, error or log line may contain.
func (fx fixture) secrets() []string { return []string{fx.f.token, fx.f.triggerToken} }

func TestLifecycle(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	f := fx.f
	d := fx.driver(t, "orders")
	d.With = json.RawMessage(`{"variables": {"TIER": "gold", "REPLICAS": 3}}`)

	// Create: the call triggers and returns at once.
	res := d.Must(opReconcile)
	if res.Done || res.RequeueAfter != 10*time.Millisecond {
		t.Fatalf("first Reconcile: Done %v, RequeueAfter %s; want not done, pollInterval", res.Done, res.RequeueAfter)
	}
	p1 := f.last()
	want := map[string]string{
		"TRUEUP_OPERATION": "reconcile", "TRUEUP_KIND": "Database", "TRUEUP_NAMESPACE": "team-a",
		"TRUEUP_NAME": "orders", "TRUEUP_GENERATION": "1", "TRUEUP_REVISION": d.Resource.Revision,
		"TRUEUP_SPEC": `{"engine":"postgres","storage_gb":500}`, "TIER": "gold", "REPLICAS": "3",
	}
	for k, v := range want {
		if p1.Vars[k] != v {
			t.Errorf("variable %s = %q, want %q", k, p1.Vars[k], v)
		}
	}
	if p1.Ref != "main" || p1.Vars["TRUEUP_ID"] == "" || p1.Vars["TRUEUP_ID"] != d.st().Correlation {
		t.Errorf("pipeline ref %q, TRUEUP_ID %q, state %s", p1.Ref, p1.Vars["TRUEUP_ID"], d.State)
	}
	if s := d.st(); s.PipelineID != p1.ID || s.WebURL != f.webURL(p1.ID) || s.Generation != 1 || s.Phase != phaseRunning {
		t.Errorf("state = %+v", s)
	}
	if d.Checkpoints != 1 {
		t.Errorf("checkpoints = %d, want 1 (the intent, before the trigger)", d.Checkpoints)
	}

	// Poll through every in-progress status.
	for _, status := range []string{"waiting_for_resource", "preparing", "pending", "running", "scheduled", "manual"} {
		f.setStatus(p1.ID, status)
		if res := d.Must(opReconcile); res.Done || !strings.Contains(res.Message, status) {
			t.Fatalf("status %s: Done %v, message %q", status, res.Done, res.Message)
		}
	}
	f.setStatus(p1.ID, "success")
	res = d.Must(opReconcile)
	if !res.Done {
		t.Fatalf("after success: not done: %q", res.Message)
	}
	wantOut := `{"jobs":[{"name":"build","stage":"build","status":"success"},{"name":"deploy","stage":"deploy","status":"success"}],"pipelineID":` +
		fmt.Sprint(p1.ID) + `,"webURL":"` + f.webURL(p1.ID) + `"}`
	if got, _ := json.Marshal(res.Outputs); string(got) != wantOut {
		t.Errorf("outputs = %s\nwant      %s", got, wantOut)
	}
	// Called again (a resync): reads the pipeline again, starts nothing.
	if again := d.Must(opReconcile); !again.Done || f.routeCount("POST trigger") != 1 {
		t.Fatalf("second Reconcile: Done %v, triggers %d", again.Done, f.routeCount("POST trigger"))
	}

	// Update: generation 2 starts; generation 3 arrives while it runs.
	d.Resource.Generation = 2
	d.Must(opReconcile)
	p2 := f.last()
	f.setStatus(p2.ID, "running")
	d.Resource.Generation = 3
	res = d.Must(opReconcile)
	if res.Done || !strings.Contains(res.Message, "superseded") {
		t.Fatalf("generation 3 while 2 runs: Done %v, message %q", res.Done, res.Message)
	}
	if got := f.pipeline(p2.ID); got.Cancels != 1 || got.Status != "canceling" {
		t.Fatalf("superseded pipeline: %d cancels, status %s", got.Cancels, got.Status)
	}
	if f.last().ID != p2.ID {
		t.Fatal("a pipeline was triggered before the superseded one finished")
	}
	// GitLab takes its time: while the pipeline is "canceling", the next call still waits.
	if res := d.Must(opReconcile); res.Done || f.last().ID != p2.ID {
		t.Fatalf("triggered while the superseded pipeline was canceling (Done %v)", res.Done)
	}
	// Once it reads "canceled", generation 3 is triggered.
	d.Must(opReconcile)
	p3 := f.last()
	if p3.ID == p2.ID || p3.Vars["TRUEUP_GENERATION"] != "3" || f.pipeline(p2.ID).Status != "canceled" {
		t.Fatalf("after cancellation: last pipeline %+v, superseded %s", p3, f.pipeline(p2.ID).Status)
	}
	if f.pipeline(p2.ID).Cancels != 1 {
		t.Errorf("superseded pipeline cancelled %d times", f.pipeline(p2.ID).Cancels)
	}

	// A failing attempt names the failed job and the pipeline.
	f.failJob(p3.ID, "deploy")
	f.setStatus(p3.ID, "failed")
	_, err := d.Call(opReconcile)
	if err == nil || actions.IsTerminal(err) {
		t.Fatalf("failed pipeline: err = %v, want a retryable error", err)
	}
	for _, s := range []string{"deploy", f.webURL(p3.ID), "failed"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
	if d.st().Phase != phaseFailed {
		t.Errorf("state after failure = %s, want phase failed saved", d.State)
	}

	// Recovery: the retry triggers a new pipeline, which succeeds.
	d.Must(opReconcile)
	p4 := f.last()
	if p4.ID == p3.ID || p4.Vars["TRUEUP_GENERATION"] != "3" {
		t.Fatalf("retry did not trigger anew: %+v", p4)
	}
	f.setStatus(p4.ID, "success")
	if res := d.Must(opReconcile); !res.Done || res.Outputs["pipelineID"] != p4.ID {
		t.Fatalf("recovery: Done %v, outputs %v", res.Done, res.Outputs)
	}

	// Delete runs a pipeline with TRUEUP_OPERATION=delete and waits for it; it carries the
	// revision to fall back to.
	d.Resource.FallbackRevision = "fedcba9876543210fedcba9876543210fedcba98"
	if res := d.Must(opDelete); res.Done {
		t.Fatal("Delete done before its pipeline ran")
	}
	p5 := f.last()
	if p5.Vars["TRUEUP_OPERATION"] != "delete" || p5.Vars["TRUEUP_FALLBACK_REVISION"] != d.Resource.FallbackRevision {
		t.Fatalf("delete pipeline variables: %v", p5.Vars)
	}
	f.setStatus(p5.ID, "running")
	if res := d.Must(opDelete); res.Done {
		t.Fatal("Delete done while its pipeline runs")
	}
	f.setStatus(p5.ID, "success")
	if res := d.Must(opDelete); !res.Done {
		t.Fatalf("Delete after success: %q", res.Message)
	}
	if n := f.routeCount("POST trigger"); n != 5 {
		t.Errorf("%d triggers, want 5", n)
	}
}

func TestTerminalStatusesFail(t *testing.T) {
	t.Parallel()
	for _, status := range []string{"canceled", "skipped"} {
		t.Run(status, func(t *testing.T) {
			t.Parallel()
			fx := setup(t, nil)
			d := fx.driver(t, "r")
			d.Must(opReconcile)
			fx.f.setStatus(fx.f.last().ID, status)
			_, err := d.Call(opReconcile)
			if err == nil || !strings.Contains(err.Error(), status) {
				t.Fatalf("err = %v, want one naming %s", err, status)
			}
		})
	}
}

func TestDeleteCancelsRunningReconcile(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	d := fx.driver(t, "r")
	d.Must(opReconcile)
	p1 := fx.f.last()
	fx.f.setStatus(p1.ID, "pending")
	// A pending pipeline is cancelled at once, so the delete pipeline starts in the same call.
	if res := d.Must(opDelete); res.Done {
		t.Fatal("delete done at once")
	}
	if got := fx.f.pipeline(p1.ID); got.Status != "canceled" {
		t.Fatalf("reconcile pipeline %s, want canceled", got.Status)
	}
	if p := fx.f.last(); p.ID == p1.ID || p.Vars["TRUEUP_OPERATION"] != "delete" {
		t.Fatalf("no delete pipeline: %+v", p)
	}
}

func TestAdoptsInterruptedDispatch(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	f := fx.f
	f.set(func(f *fakeGitLab) { f.maxPerPage = 5 }) // several pages to search
	// Other pipelines on the same ref: other resources' triggers and a push.
	for i := range 12 {
		f.add("main", "trigger", map[string]string{"TRUEUP_ID": fmt.Sprintf("other-%d", i)})
	}
	f.add("main", "push", nil)

	// The replica dies after the trigger, before recording its result: only the
	// checkpointed intent survives.
	d := fx.driver(t, "orders")
	if _, err := d.Call(opReconcile); err != nil {
		t.Fatal(err)
	}
	dispatched := f.last()
	intent := d.Saved[0]
	var s state
	if err := json.Unmarshal(intent, &s); err != nil || s.Phase != phaseDispatching || s.Correlation != dispatched.Vars["TRUEUP_ID"] {
		t.Fatalf("checkpointed intent %s (pipeline TRUEUP_ID %q)", intent, dispatched.Vars["TRUEUP_ID"])
	}
	for i := range 8 { // more pipelines after ours, so that ours is not on the first page
		f.add("main", "trigger", map[string]string{"TRUEUP_ID": fmt.Sprintf("later-%d", i)})
	}

	d2 := fx.driver(t, "orders")
	d2.State = intent
	res, err := d2.Call(opReconcile)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.routeCount("POST trigger"); n != 1 {
		t.Fatalf("%d triggers after adoption, want 1", n)
	}
	if s := d2.st(); s.PipelineID != dispatched.ID || s.Phase != phaseRunning || res.Done {
		t.Fatalf("adopted state %+v (Done %v), want pipeline #%d running", s, res.Done, dispatched.ID)
	}
	if f.routeCount("GET pipelines") < 2 {
		t.Errorf("the search did not page: %d list calls", f.routeCount("GET pipelines"))
	}
}

func TestInterruptedDispatchWithoutPipeline(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	d := fx.driver(t, "orders")
	d.State = state{Phase: phaseDispatching, Operation: opReconcile, Generation: 1, Ref: "main",
		Correlation: "lost-dispatch", TriggeredAt: fx.clock.now().Add(-30 * time.Second)}.encode()

	// Within the grace window: wait, the trigger call may still be in flight.
	res := d.Must(opReconcile)
	if res.Done || fx.f.routeCount("POST trigger") != 0 || res.RequeueAfter <= 0 {
		t.Fatalf("within grace: Done %v, RequeueAfter %s, %d triggers", res.Done, res.RequeueAfter, fx.f.routeCount("POST trigger"))
	}
	// After it: trigger anew with a new correlation id.
	fx.clock.advance(adoptGrace)
	d.Must(opReconcile)
	if fx.f.routeCount("POST trigger") != 1 {
		t.Fatalf("%d triggers after the grace window, want 1", fx.f.routeCount("POST trigger"))
	}
	if id := fx.f.last().Vars["TRUEUP_ID"]; id == "" || id == "lost-dispatch" || id != d.st().Correlation {
		t.Fatalf("new TRUEUP_ID %q, state %s", id, d.State)
	}
}

func TestCheckpointErrorPreventsTrigger(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	d := fx.driver(t, "orders")
	d.CheckpointErr = errors.New("lease lost")
	_, err := d.Call(opReconcile)
	if err == nil || !strings.Contains(err.Error(), "lease lost") {
		t.Fatalf("err = %v, want the checkpoint error", err)
	}
	if n := fx.f.routeCount("POST trigger"); n != 0 {
		t.Fatalf("%d triggers despite the failed checkpoint", n)
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	f := fx.f
	f.set(func(f *fakeGitLab) { f.limited, f.retryAfter = true, 30 })

	d := fx.driver(t, "first")
	res, err := d.Call(opReconcile)
	if err != nil {
		t.Fatalf("rate-limited call failed: %v", err)
	}
	if res.Done || res.RequeueAfter < 29*time.Second || res.RequeueAfter > 35*time.Second {
		t.Fatalf("Done %v, RequeueAfter %s; want ≈ 30s", res.Done, res.RequeueAfter)
	}
	if len(res.Conditions) != 1 || res.Conditions[0] != (actions.Condition{Type: "RateLimited", Status: "True",
		Reason: "GitLabRateLimit", Message: res.Conditions[0].Message}) {
		t.Fatalf("conditions = %+v", res.Conditions)
	}
	if fx.a.RateLimitRemaining() != 0 {
		t.Errorf("RateLimitRemaining = %d, want 0", fx.a.RateLimitRemaining())
	}

	// Twenty more resources while the limit holds: they wait without calling GitLab.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			d := fx.driver(t, fmt.Sprintf("r%d", i))
			res, err := d.Call(opReconcile)
			if err != nil || res.Done || res.RequeueAfter < 29*time.Second {
				t.Errorf("resource %d: err %v, Done %v, RequeueAfter %s", i, err, res.Done, res.RequeueAfter)
			}
		})
	}
	wg.Wait()
	if n := f.requestCount(); n > 2 {
		t.Fatalf("%d requests during the rate limit, want at most a handful", n)
	}

	// At the reset, the resource goes on and the condition is cleared.
	f.set(func(f *fakeGitLab) { f.limited = false })
	fx.clock.advance(31 * time.Second)
	res = d.Must(opReconcile)
	if f.routeCount("POST trigger") != 1 {
		t.Fatalf("no trigger after the reset")
	}
	if len(res.Conditions) != 1 || res.Conditions[0].Type != "RateLimited" || res.Conditions[0].Status != "False" {
		t.Fatalf("conditions after the reset = %+v", res.Conditions)
	}
	if fx.a.RateLimitRemaining() <= 0 {
		t.Errorf("RateLimitRemaining = %d after the reset", fx.a.RateLimitRemaining())
	}
	// Cleared once: the next call says nothing of it.
	if res := d.Must(opReconcile); len(res.Conditions) != 0 {
		t.Errorf("conditions on the next call = %+v", res.Conditions)
	}
}

func TestRateLimitWhilePollingKeepsPipeline(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	d := fx.driver(t, "orders")
	d.Must(opReconcile)
	id := d.st().PipelineID
	fx.f.set(func(f *fakeGitLab) { f.limited, f.retryAfter = true, 5 })
	res := d.Must(opReconcile)
	if res.Done || d.st().PipelineID != id || !d.st().RateLimited {
		t.Fatalf("rate-limited poll: Done %v, state %s", res.Done, d.State)
	}
	fx.f.set(func(f *fakeGitLab) { f.limited = false })
	fx.clock.advance(6 * time.Second)
	fx.f.setStatus(id, "success")
	if res := d.Must(opReconcile); !res.Done || fx.f.routeCount("POST trigger") != 1 {
		t.Fatalf("after the reset: Done %v, %d triggers", res.Done, fx.f.routeCount("POST trigger"))
	}
}

func TestRemainingZeroPausesCalls(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	// The first call spends the last request of GitLab's window.
	fx.f.set(func(f *fakeGitLab) { f.remaining = 1 })
	fx.driver(t, "first").Must(opReconcile)
	if fx.a.RateLimitRemaining() != 0 {
		t.Fatalf("RateLimitRemaining = %d", fx.a.RateLimitRemaining())
	}
	// The next resource waits for RateLimit-Reset instead of earning a 429.
	before := fx.f.requestCount()
	res := fx.driver(t, "second").Must(opReconcile)
	if res.Done || res.RequeueAfter < 50*time.Second || len(res.Conditions) != 1 || fx.f.requestCount() != before {
		t.Fatalf("Done %v, RequeueAfter %s, conditions %+v, %d requests", res.Done, res.RequeueAfter, res.Conditions, fx.f.requestCount()-before)
	}
}

func TestOutputsJobArtifact(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	fx.f.initialStatus = "success"
	fx.f.jobs = func(map[string]string) []fakeJob {
		return []fakeJob{{Name: "apply", Stage: "deploy", Status: "success"}, {Name: "export", Stage: ".post", Status: "success"}}
	}
	d := fx.driver(t, "orders")
	d.With = json.RawMessage(`{"outputsJob": "export"}`)
	// The export job is the pipeline's second job: ids are given in order from 5001.
	fx.f.set(func(f *fakeGitLab) {
		f.artifacts[f.nextJobID+2] = `{"endpoint": "db.internal:5432", "port": 5432, "pipelineID": "ignored"}`
	})
	res := d.Must(opReconcile)
	if !res.Done || res.Outputs["endpoint"] != "db.internal:5432" || res.Outputs["port"] != json.Number("5432") {
		t.Fatalf("outputs = %v", res.Outputs)
	}
	if res.Outputs["pipelineID"] != fx.f.last().ID {
		t.Errorf("the artifact overrode pipelineID: %v", res.Outputs["pipelineID"])
	}

	// A missing artifact is an error, not a new pipeline.
	d2 := fx.driver(t, "other")
	d2.With = json.RawMessage(`{"outputsJob": "export"}`)
	_, err := d2.Call(opReconcile)
	if err == nil || !strings.Contains(err.Error(), "trueup-outputs.json") {
		t.Fatalf("err = %v", err)
	}
	_, _ = d2.Call(opReconcile)
	if n := fx.f.routeCount("POST trigger"); n != 2 {
		t.Errorf("%d triggers, want 2 (no retrigger for a missing artifact)", n)
	}
}

func TestTriggerRefusedIsNotAdopted(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	d := fx.driver(t, "orders")
	d.With = json.RawMessage(`{"ref": "nope"}`)
	_, err := d.Call(opReconcile)
	if err == nil || !strings.Contains(err.Error(), "Reference not found") {
		t.Fatalf("err = %v", err)
	}
	// GitLab refused: nothing to look for; the retry triggers again at once.
	if s := d.st(); s.Phase == phaseDispatching {
		t.Fatalf("state after a refused trigger = %s", d.State)
	}
	d.With = nil
	d.Must(opReconcile)
	if fx.f.routeCount("GET pipelines") != 0 || fx.f.routeCount("POST trigger") != 2 {
		t.Fatalf("list calls %d, triggers %d", fx.f.routeCount("GET pipelines"), fx.f.routeCount("POST trigger"))
	}
}

func TestSecretsScrubbedFromErrors(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	// A server (or proxy) that echoes the token in its error message.
	fx.f.set(func(f *fakeGitLab) { f.triggerError = "invalid token " + f.triggerToken + " for " + f.token })
	d := fx.driver(t, "orders")
	_, err := d.Call(opReconcile) // Driver.Call fails the test on a leak
	if err == nil || !strings.Contains(err.Error(), "invalid token ***") {
		t.Fatalf("err = %v", err)
	}
}

// TestRedirectNotFollowed: neither token reaches another host, whatever redirects there:
// Go forwards PRIVATE-TOKEN on a redirect, and on a 307 the form body with the trigger token.
func TestRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	f := newFakeGitLab(t)
	var mu sync.Mutex
	var arrived []string // everything that reached the other host
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		arrived = append(arrived, fmt.Sprintf("%s %s %v %s", r.Method, r.URL, r.Header, body))
		mu.Unlock()
		actiontest.WriteJSON(w, http.StatusOK, []any{})
	}))
	t.Cleanup(other.Close)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(front.Close)

	act, err := New(f.config(map[string]any{"baseURL": front.URL + "/"}), actions.Env{Name: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	defer actions.Close(act)
	a := act.(*Action)
	for _, r := range []gitlabapi.Request{
		{Method: http.MethodGet, Path: "projects/42/pipelines", Auth: true},
		{Method: http.MethodPost, Path: "projects/42/trigger/pipeline", Form: url.Values{"token": {f.triggerToken}, "ref": {"main"}}},
	} {
		_, err := a.gl.Do(t.Context(), r)
		if !gitlabapi.IsStatus(err, http.StatusTemporaryRedirect) || !strings.Contains(err.Error(), "not followed") {
			t.Errorf("%s %s: err = %v, want the 307 refused", r.Method, r.Path, err)
		}
	}
	// And through the action itself.
	d := &actiontest.Driver{T: t, Action: a, Secrets: (fixture{f: f}).secrets(), Resource: actions.Resource{Kind: "K", Name: "n", Generation: 1}}
	if res, err := d.Call(opReconcile); err == nil {
		t.Errorf("Reconcile through a redirect: %+v, want an error", res)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, got := range arrived {
		for _, secret := range []string{f.token, f.triggerToken} {
			if strings.Contains(got, secret) {
				t.Errorf("a token reached the other host: %s", got)
			}
		}
	}
	if len(arrived) != 0 {
		t.Errorf("%d requests reached the other host: %q", len(arrived), arrived)
	}
}

func TestNumericProjectAndAPIBase(t *testing.T) {
	t.Parallel()
	f := newFakeGitLab(t)
	f.initialStatus = "success"
	cfg := f.config(map[string]any{"project": 42, "baseURL": f.srv.URL + "/api/v4"})
	a, err := New(cfg, actions.Env{})
	if err != nil {
		t.Fatal(err)
	}
	defer actions.Close(a)
	res, err := a.Reconcile(t.Context(), actions.Request{Resource: actions.Resource{Kind: "K", Name: "n", Generation: 1}})
	if err != nil || !res.Done {
		t.Fatalf("Reconcile: %v, Done %v", err, res.Done)
	}
}

func TestConfigRejected(t *testing.T) {
	t.Parallel()
	base := map[string]any{"baseURL": "https://gitlab.example.com/", "project": "infra/db", "triggerToken": "glptt-x", "token": "glpat-y"}
	for _, tc := range []struct {
		name   string
		change map[string]any
		want   string
	}{
		{"no baseURL", map[string]any{"baseURL": ""}, "baseURL is required"},
		{"relative baseURL", map[string]any{"baseURL": "gitlab.example.com"}, "absolute"},
		{"credentials in baseURL", map[string]any{"baseURL": "https://u:p@gitlab.example.com/"}, "credentials"},
		{"no project", map[string]any{"project": ""}, "project is required"},
		{"bad project", map[string]any{"project": 1.5}, "project"},
		{"no triggerToken", map[string]any{"triggerToken": ""}, "triggerToken is required"},
		{"no token", map[string]any{"token": ""}, "token is required"},
		{"bad pollInterval", map[string]any{"pollInterval": "often"}, "pollInterval"},
		{"negative timeout", map[string]any{"timeout": "-1s"}, "negative"},
		{"bad allowedRefs", map[string]any{"allowedRefs": []string{"release/[a"}}, `allowedRefs: "release/[a" is not a valid pattern`},
		{"empty allowedVariables entry", map[string]any{"allowedVariables": []string{""}}, "allowedVariables: empty entry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := map[string]any{}
			for k, v := range base {
				c[k] = v
			}
			for k, v := range tc.change {
				c[k] = v
			}
			_, err := New(actiontest.MustJSON(t, c), actions.Env{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	s, err := parseConfig(json.RawMessage(`{"baseURL": "https://gitlab.example.com/gl/", "project": "infra/db", "triggerToken": "a", "token": "b"}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.api != "https://gitlab.example.com/gl/api/v4/" || s.project != "infra%2Fdb" || s.ref != "main" ||
		s.pollInterval != 15*time.Second || s.timeout != 30*time.Second {
		t.Fatalf("settings = %+v", s)
	}
}

func TestValidateWith(t *testing.T) {
	t.Parallel()
	a := &Action{}
	restricted := &Action{settings: settings{allowedRefs: actions.Allowlist{"main", "release/*"},
		allowedVariables: actions.Allowlist{"TIER", "DEPLOY_*"}}}
	for _, tc := range []struct {
		with string
		want string // "" for valid
		a    *Action
	}{
		{`{"ref": "release/1.2", "variables": {"TIER": "gold", "DEPLOY_REGION": "eu"}}`, "", restricted},
		{`{}`, "", restricted},
		{`{"ref": "evil"}`, `with.ref: "evil" is not in the action's allowedRefs [main release/*]`, restricted},
		{`{"variables": {"TIER": "gold", "CI_DEBUG_TRACE": "true"}}`,
			`with.variables: "CI_DEBUG_TRACE" is not in the action's allowedVariables [TIER DEPLOY_*]`, restricted},
		{`{"ref": "release", "variables": {"A": "x", "N": 1, "B": true}, "outputsJob": "export"}`, "", nil},
		{`{}`, "", nil},
		{`{"unknown": 1}`, "unknown", nil},
		{`{"variables": {"bad-name": "x"}}`, "bad-name", nil},
		{`{"variables": {"TRUEUP_NAME": "x"}}`, "TRUEUP_", nil},
		{`{"variables": {"A": {"nested": 1}}}`, "strings, numbers or booleans", nil},
		{`{"ref": " main"}`, "ref", nil},
	} {
		a := cmp.Or(tc.a, a)
		err := a.ValidateWith(json.RawMessage(tc.with))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("ValidateWith(%s): %v", tc.with, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("ValidateWith(%s) = %v, want an error containing %q", tc.with, err, tc.want)
		}
	}
}

func TestClassifyKnowsEveryStatus(t *testing.T) {
	t.Parallel()
	for status, want := range map[string]progress{
		"created": inProgress, "waiting_for_resource": inProgress, "preparing": inProgress, "pending": inProgress,
		"running": inProgress, "scheduled": inProgress, "manual": inProgress, "canceling": inProgress,
		"waiting_for_callback": inProgress, "success": succeeded, "failed": failed, "canceled": failed, "skipped": failed,
	} {
		if got, known := classify(status); got != want || !known {
			t.Errorf("classify(%s) = %v, %v; want %v", status, got, known, want)
		}
	}
}

func TestSupersededManualPipelineNotWaitedFor(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	d := fx.driver(t, "orders")
	d.Must(opReconcile)
	p1 := fx.f.last()
	fx.f.setStatus(p1.ID, "manual")
	d.Resource.Generation = 2
	d.Must(opReconcile)
	if got := fx.f.pipeline(p1.ID); got.Cancels != 1 {
		t.Fatalf("manual pipeline cancelled %d times, want one try", got.Cancels)
	}
	if p := fx.f.last(); p.ID == p1.ID || p.Vars["TRUEUP_GENERATION"] != "2" {
		t.Fatalf("generation 2 not triggered: %+v", p)
	}
}

// TestDisallowedWithNeverTriggered: a type whose with.ref or with.variables the instance's
// allowlists do not cover is Stalled (a terminal error naming the field) and no pipeline is
// triggered; what they cover runs.
func TestDisallowedWithNeverTriggered(t *testing.T) {
	t.Parallel()
	fx := setup(t, map[string]any{"allowedRefs": []string{"main", "release/*"}, "allowedVariables": []string{"TIER"}})
	for _, tc := range []struct{ with, want string }{
		{`{"ref": "evil"}`, `with.ref: "evil" is not in the action's allowedRefs [main release/*]`},
		{`{"variables": {"TIER": "gold", "CI_DEBUG_TRACE": "true"}}`, `with.variables: "CI_DEBUG_TRACE" is not in the action's allowedVariables [TIER]`},
	} {
		for _, op := range []string{opReconcile, opDelete} {
			d := fx.driver(t, "evil")
			d.With = json.RawMessage(tc.with)
			_, err := d.Call(op)
			if err == nil || !actions.IsTerminal(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s with %s: err = %v; want a terminal error containing %q", op, tc.with, err, tc.want)
			}
			if d.Checkpoints != 0 {
				t.Errorf("%s with %s: %d checkpoints; want none", op, tc.with, d.Checkpoints)
			}
		}
	}
	fx.f.mu.Lock()
	requests, pipelines := fx.f.requests, len(fx.f.pipelines)
	fx.f.mu.Unlock()
	if requests != 0 || pipelines != 0 {
		t.Fatalf("refused with: %d requests, %d pipelines; want none", requests, pipelines)
	}

	fx.f.mu.Lock()
	fx.f.refs = append(fx.f.refs, "release/2.0")
	fx.f.mu.Unlock()
	d := fx.driver(t, "ok")
	d.With = json.RawMessage(`{"ref": "release/2.0", "variables": {"TIER": "gold"}}`)
	d.Must(opReconcile)
	if p := fx.f.last(); p.Ref != "release/2.0" || p.Vars["TIER"] != "gold" {
		t.Fatalf("allowed with: pipeline on %q with TIER %q; want release/2.0, gold", p.Ref, p.Vars["TIER"])
	}
}
