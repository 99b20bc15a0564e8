package ghactions

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/actiontest"
	"github.com/trueup-dev/trueup/internal/logbuf"
)

// driveTimeout bounds how long a test drives one resource to Done.
const driveTimeout = 10 * time.Second

func TestConformance(t *testing.T) {
	f := newFakeGitHub(t)
	actiontest.Run(t, actiontest.Suite{
		Factory:    New,
		Config:     f.config(nil),
		SlowConfig: f.config(map[string]any{"repo": fakeSlow}),
		With: json.RawMessage(`{"workflow":"deploy.yml","deleteWorkflow":"delete.yml",
			"checkWorkflow":"check.yml","inputs":{"environment":"staging"}}`),
		Env: actions.Env{Name: "conformance", BaseDir: t.TempDir()},
	})
}

// logBuffer is a goroutine-safe log sink.
type logBuffer = logbuf.Buffer

// newAction builds an instance on the fake's clock, logging at debug level into logs.
func newAction(t *testing.T, f *fakeGitHub, cfg json.RawMessage, baseDir string) (*Action, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	act, err := New(cfg, actions.Env{Name: "gha", BaseDir: baseDir, Logger: logger})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	a := act.(*Action)
	a.now = f.clk.now
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return a, logs
}

// resource plays the reconciler's row of one resource: the State it keeps and the
// checkpoints it commits (which survive a failed call, like the store's fenced write).
type resource struct {
	name string
	gen  int64
	spec json.RawMessage
	with json.RawMessage

	// revertOnError restores the State from before a failed call, as a reconciler does
	// that does not keep checkpoints written during a failed call.
	revertOnError bool

	mu             sync.Mutex
	state          json.RawMessage
	checkpoints    []json.RawMessage
	failCheckpoint error
}

func newResource(name string, with string) *resource {
	return &resource{name: name, gen: 1, spec: json.RawMessage(`{ "engine": "postgres", "size": "small" }`), with: json.RawMessage(with)}
}

func (r *resource) checkpoint(_ context.Context, st json.RawMessage) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failCheckpoint != nil {
		return r.failCheckpoint
	}
	r.state = append(json.RawMessage(nil), st...)
	r.checkpoints = append(r.checkpoints, r.state)
	return nil
}

func (r *resource) request() actions.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return actions.Request{
		Resource: actions.Resource{
			APIVersion: "example.com/v1", Kind: "Database", Namespace: "team-a", Name: r.name,
			UID: "uid-" + r.name, Generation: r.gen, Spec: r.spec, Source: "infra",
			Revision: "0123456789abcdef0123456789abcdef01234567",
		},
		With:       r.with,
		State:      r.state,
		Checkpoint: r.checkpoint,
	}
}

func (r *resource) record(res actions.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state = res.State
}

func (r *resource) decoded(t *testing.T) state {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	st, err := decodeState(r.state)
	if err != nil {
		t.Fatalf("decode state %s: %v", r.state, err)
	}
	return st
}

type opFunc func(context.Context, actions.Request) (actions.Result, error)

// drive calls op the way the reconciler does, feeding State back and waiting RequeueAfter
// (capped), until Done or an error.
func drive(t *testing.T, r *resource, op opFunc) (actions.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), driveTimeout)
	defer cancel()
	for {
		req := r.request()
		res, err := op(ctx, req)
		if err != nil {
			if r.revertOnError {
				r.mu.Lock()
				r.state = req.State
				r.mu.Unlock()
			}
			return res, err
		}
		r.record(res)
		if res.Done {
			return res, nil
		}
		select {
		case <-time.After(min(res.RequeueAfter, 20*time.Millisecond)):
		case <-ctx.Done():
			t.Fatalf("%s not done after %s; last message %q", r.name, driveTimeout, res.Message)
		}
	}
}

func mustDrive(t *testing.T, r *resource, op opFunc) actions.Result {
	t.Helper()
	res, err := drive(t, r, op)
	if err != nil {
		t.Fatalf("%s: %v", r.name, err)
	}
	return res
}

func condition(res actions.Result, typ string) (actions.Condition, bool) {
	for _, c := range res.Conditions {
		if c.Type == typ {
			return c, true
		}
	}
	return actions.Condition{}, false
}

// runFor finds the fake's run dispatched for a resource (by its name input) and workflow.
func runFor(t *testing.T, f *fakeGitHub, name, workflow string) []fakeRun {
	t.Helper()
	var out []fakeRun
	for _, r := range f.runsSnapshot() {
		if r.Inputs["name"] == name && r.Workflow == workflow {
			out = append(out, r)
		}
	}
	return out
}

func outputInt(t *testing.T, out map[string]any, key string) int64 {
	t.Helper()
	n, ok := out[key].(json.Number)
	if !ok {
		t.Fatalf("output %s = %#v, want a number", key, out[key])
	}
	v, err := n.Int64()
	if err != nil {
		t.Fatalf("output %s: %v", key, err)
	}
	return v
}

func TestDispatchWithRunDetails(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	f.shapeRun = func(r *fakeRun) {
		r.CompleteAfter = 4
		r.Jobs = []fakeJob{{"plan", "success"}, {"apply", "success"}}
		r.Outputs = []byte(`{"endpoint":"db.internal:5432","replicas":3}`)
	}
	a, _ := newAction(t, f, f.config(nil), t.TempDir())
	r := newResource("db1", `{"workflow":"deploy.yml","ref":"release/v2","inputs":{"environment":"prod"}}`)
	r.gen = 3

	first, err := a.Reconcile(t.Context(), r.request())
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if first.Done || first.RequeueAfter != 5*time.Millisecond {
		t.Fatalf("first Reconcile: Done %v RequeueAfter %s; want an in-progress answer after pollInterval", first.Done, first.RequeueAfter)
	}
	if c, ok := condition(first, conditionRateLimited); !ok || c.Status != "False" {
		t.Errorf("first Reconcile: RateLimited condition = %+v, want status False", c)
	}
	r.record(first)
	st := r.decoded(t)
	if st.Phase != phaseRunning || st.RunID == 0 || st.ETag == "" || st.Generation != 3 || st.Correlation == "" {
		t.Fatalf("state after dispatch = %+v; want a running handle with run id, etag, generation, correlation", st)
	}
	if !strings.Contains(first.Message, fakeHTMLURL) {
		t.Errorf("message %q lacks the run URL", first.Message)
	}

	res := mustDrive(t, r, a.Reconcile)
	runs := runFor(t, f, "db1", "deploy.yml")
	if len(runs) != 1 {
		t.Fatalf("runs for db1: %d, want 1", len(runs))
	}
	run := runs[0]
	want := map[string]string{
		"name": "db1", "namespace": "team-a", "generation": "3", "revision": "0123456789abcdef0123456789abcdef01234567",
		"spec": `{"engine":"postgres","size":"small"}`, "operation": "reconcile", "trueup_id": st.Correlation,
		"environment": "prod",
	}
	for k, v := range want {
		if run.Inputs[k] != v {
			t.Errorf("input %s = %q, want %q", k, run.Inputs[k], v)
		}
	}
	if len(run.Inputs) != len(want) {
		t.Errorf("inputs = %v, want exactly %v", run.Inputs, want)
	}
	if run.Ref != "release/v2" {
		t.Errorf("ref = %q, want the with: override release/v2", run.Ref)
	}

	out := res.Outputs
	if got := outputInt(t, out, "runID"); got != run.ID {
		t.Errorf("runID = %d, want %d", got, run.ID)
	}
	if out["runURL"] != fakeHTMLURL+strconv.FormatInt(run.ID, 10) {
		t.Errorf("runURL = %v", out["runURL"])
	}
	if out["endpoint"] != "db.internal:5432" || fmt.Sprint(out["replicas"]) != "3" {
		t.Errorf("artifact outputs missing: %v", out)
	}
	jobs, _ := json.Marshal(out["jobs"])
	var jobList []jobOutput
	if err := json.Unmarshal(jobs, &jobList); err != nil || len(jobList) != 2 ||
		jobList[0].Name != "plan" || jobList[0].Conclusion != "success" || jobList[0].StartedAt == "" ||
		jobList[0].CompletedAt == "" || jobList[1].Name != "apply" {
		t.Errorf("jobs = %s", jobs)
	}
	arts, _ := json.Marshal(out["artifacts"])
	if !strings.Contains(string(arts), `{"name":"build-logs","sizeInBytes":2048}`) || !strings.Contains(string(arts), `"name":"trueup-outputs"`) {
		t.Errorf("artifacts = %s", arts)
	}

	// Conditional polls: the idle ones were 304s and cost no quota.
	requests, dispatches, notModified, _ := f.counters()
	if dispatches != 1 {
		t.Errorf("dispatches = %d, want 1", dispatches)
	}
	if notModified != 2 {
		t.Errorf("304 answers = %d, want 2 (the polls between the first look and completion)", notModified)
	}
	f.mu.Lock()
	quota := f.quota
	f.mu.Unlock()
	if used := 5000 - quota; used != requests-notModified {
		t.Errorf("quota used = %d, want requests %d minus 304s %d", used, requests, notModified)
	}
	if got := a.RateLimitRemaining(); got != quota {
		t.Errorf("RateLimitRemaining = %d, want %d", got, quota)
	}

	// Done and fed back: the same answer, without a new dispatch or any request.
	again, err := a.Reconcile(t.Context(), r.request())
	if err != nil || !again.Done {
		t.Fatalf("Reconcile after Done: %+v, %v", again, err)
	}
	if r2, d2, _, _ := f.counters(); r2 != requests || d2 != 1 {
		t.Errorf("Reconcile after Done made %d requests", r2-requests)
	}
}

func TestDispatchWithoutRunDetails(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	f.runDetails = false // older GitHub Enterprise: 204, no run id
	f.visibleIn = 40 * time.Millisecond
	f.maxPerPage = 2
	f.shapeRun = func(r *fakeRun) { r.CompleteAfter = 2 }
	f.onDispatch = func(r *fakeRun) {
		// Others dispatch the same workflow at the same moment; their runs are newer and
		// show up at once.
		for i := range 3 {
			f.addRunLocked(r.Workflow, fmt.Sprintf("Deploy by someone else #%d", i), r.Created.Add(time.Duration(i+1)*time.Millisecond))
		}
	}
	a, _ := newAction(t, f, f.config(nil), t.TempDir())
	r := newResource("db2", `{"workflow":"101"}`) // numeric workflow id

	first, err := a.Reconcile(t.Context(), r.request())
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	r.record(first)
	if st := r.decoded(t); first.Done || st.Phase != phaseDispatched || st.RunID != 0 {
		t.Fatalf("after a 204: Done %v state %+v; want phase dispatched without run id", first.Done, st)
	}
	if first.RequeueAfter <= 0 || first.RequeueAfter > maxFindDelay {
		t.Errorf("RequeueAfter = %s, want a short wait for the run to appear", first.RequeueAfter)
	}
	res := mustDrive(t, r, a.Reconcile)
	runs := runFor(t, f, "db2", "deploy.yml")
	if len(runs) != 1 {
		t.Fatalf("runs for db2: %d, want 1", len(runs))
	}
	if got := outputInt(t, res.Outputs, "runID"); got != runs[0].ID {
		t.Errorf("tracked run %d, want %d (the one whose run-name carries the trueup_id)", got, runs[0].ID)
	}
	if _, d, _, _ := f.counters(); d != 1 {
		t.Errorf("dispatches = %d, want 1", d)
	}
}

func TestServerRefusingRunDetails(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	f.strictBody = true
	a, _ := newAction(t, f, f.config(nil), t.TempDir())
	for _, name := range []string{"old-ghes-1", "old-ghes-2"} {
		res := mustDrive(t, newResource(name, `{}`), a.Reconcile)
		runs := runFor(t, f, name, "deploy.yml")
		if len(runs) != 1 || outputInt(t, res.Outputs, "runID") != runs[0].ID {
			t.Fatalf("%s: runs %d, outputs %v", name, len(runs), res.Outputs)
		}
	}
	// One refused dispatch, then never again with the parameter.
	_, d, _, _ := f.counters()
	f.mu.Lock()
	refused := f.refused
	f.mu.Unlock()
	if d != 2 || refused != 1 {
		t.Errorf("dispatches = %d, refused = %d; want 2 and 1", d, refused)
	}
}

func TestConcurrentResources(t *testing.T) {
	t.Parallel()
	eachDispatchAnswer(t, func(t *testing.T, f *fakeGitHub) {
		f.visibleIn = 20 * time.Millisecond
		f.maxPerPage = 7
		f.shapeRun = func(r *fakeRun) {
			r.CompleteAfter = 2
			r.Outputs = []byte(`{"resource":"` + r.Inputs["name"] + `"}`)
		}
		a, _ := newAction(t, f, f.config(nil), t.TempDir())
		const n = 50
		results := make([]actions.Result, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				r := newResource(fmt.Sprintf("db-%02d", i), `{}`)
				results[i], errs[i] = drive(t, r, a.Reconcile)
			})
		}
		wg.Wait()
		for i := range n {
			name := fmt.Sprintf("db-%02d", i)
			if errs[i] != nil {
				t.Errorf("%s: %v", name, errs[i])
				continue
			}
			runs := runFor(t, f, name, "deploy.yml")
			if len(runs) != 1 {
				t.Errorf("%s: %d runs, want 1", name, len(runs))
				continue
			}
			out := results[i].Outputs
			if got := outputInt(t, out, "runID"); got != runs[0].ID || out["resource"] != name {
				t.Errorf("%s tracked run %d (outputs resource %v), want its own run %d", name, got, out["resource"], runs[0].ID)
			}
		}
		if _, d, _, _ := f.counters(); d != n {
			t.Errorf("dispatches = %d, want %d", d, n)
		}
	})
}

func TestClose(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	act, err := New(f.config(nil), actions.Env{Name: "gha"})
	if err != nil {
		t.Fatal(err)
	}
	a := act.(*Action)
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := a.Reconcile(t.Context(), newResource("x", `{}`).request()); err == nil {
		t.Fatal("Reconcile after Close succeeded")
	}
	if requests, _, _, _ := f.counters(); requests != 0 {
		t.Errorf("requests after Close = %d", requests)
	}
}

// TestDisallowedRefNeverDispatched: a type whose with.ref the instance's allowedRefs does
// not list is Stalled (a terminal error naming the field) on every operation, and nothing is
// dispatched; an allowed ref is dispatched on that ref.
func TestDisallowedRefNeverDispatched(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	f.shapeRun = func(r *fakeRun) { r.CompleteAfter = 1 }
	a, _ := newAction(t, f, f.config(map[string]any{"allowedRefs": []string{"main", "release/*"}}), t.TempDir())

	evil := newResource("evil", `{"workflow":"deploy.yml","checkWorkflow":"check.yml","ref":"evil"}`)
	const want = `with.ref: "evil" is not in the action's allowedRefs [main release/*]`
	for name, call := range map[string]func() error{
		"Reconcile": func() error { _, err := a.Reconcile(t.Context(), evil.request()); return err },
		"Delete":    func() error { _, err := a.Delete(t.Context(), evil.request()); return err },
		"Observe":   func() error { _, err := a.Observe(t.Context(), evil.request()); return err },
	} {
		err := call()
		if err == nil || !actions.IsTerminal(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s = %v; want a terminal error containing %q", name, err, want)
		}
	}
	f.mu.Lock()
	dispatches, requests := f.dispatches, f.requests
	f.mu.Unlock()
	if dispatches != 0 || requests != 0 || len(evil.checkpoints) != 0 {
		t.Fatalf("refused ref: %d dispatches, %d API requests, %d checkpoints; want none", dispatches, requests, len(evil.checkpoints))
	}

	ok := newResource("ok", `{"workflow":"deploy.yml","ref":"release/2.0"}`)
	mustDrive(t, ok, a.Reconcile)
	runs := runFor(t, f, "ok", "deploy.yml")
	if len(runs) != 1 || runs[0].Ref != "release/2.0" {
		t.Fatalf("allowed ref: runs %+v; want one on release/2.0", runs)
	}
}
