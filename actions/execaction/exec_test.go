//go:build unix

package execaction_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/actiontest"
	"github.com/trueup-dev/trueup/actions/execaction"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	actiontest.Run(t, conformanceSuite(t, execaction.New))
}

// conformanceSuite runs record.sh and slow.sh, instances built by factory.
func conformanceSuite(t *testing.T, factory actions.Factory) actiontest.Suite {
	return actiontest.Suite{
		Factory: factory,
		Config: actiontest.MustJSON(t, config{
			Command: []string{"./testdata/record.sh"},
			Env:     map[string]string{"REPLY_JSON": `{"outputs": {"id": "db-1"}, "state": {"n": 1}}`},
			LockDir: t.TempDir(),
		}),
		SlowConfig: actiontest.MustJSON(t, config{Command: []string{"./testdata/slow.sh"}, LockDir: t.TempDir()}),
		With:       json.RawMessage(`{"tier": "gold"}`),
		Env:        actions.Env{Name: "conformance", BaseDir: "."},
	}
}

// config mirrors the exec config, so that tests write it as Go values.
type config struct {
	Command []string          `json:"command"`
	Timeout string            `json:"timeout,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Dir     string            `json:"dir,omitempty"`
	LockDir string            `json:"lockDir,omitempty"`
	// InheritEnv is left out when false, so that configs of the old shape stay valid.
	InheritEnv bool `json:"inheritEnv,omitempty"`
}

// fixture is what most tests need: an instance, and the folder its command records into.
type fixture struct {
	action actions.Action
	out    string // OUT_DIR of record.sh
}

// setup builds an instance running record.sh (unless cfg names a command) with OUT_DIR set.
func setup(t *testing.T, cfg config) fixture {
	t.Helper()
	out := t.TempDir()
	if cfg.Command == nil {
		cfg.Command = []string{"./testdata/record.sh"}
	}
	if cfg.Env == nil {
		cfg.Env = map[string]string{}
	}
	cfg.Env["OUT_DIR"] = out
	return fixture{action: build(t, cfg, "."), out: out}
}

// build makes an instance; its resource locks are the test's own (tests share resource UIDs).
func build(t *testing.T, cfg config, baseDir string) actions.Action {
	t.Helper()
	if cfg.LockDir == "" {
		cfg.LockDir = t.TempDir()
	}
	a, err := execaction.New(actiontest.MustJSON(t, cfg), actions.Env{Name: "test", BaseDir: baseDir})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := actions.Close(a); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return a
}

func (f fixture) read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.out, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func request() actions.Request {
	return actions.Request{
		Resource: actions.Resource{
			APIVersion:  "trueup.dev/v1",
			Kind:        "Database",
			Namespace:   "team-a",
			Name:        "orders",
			UID:         "6f1c2a4e",
			Generation:  3,
			Spec:        json.RawMessage(`{"size":"small"}`),
			Labels:      map[string]string{"tier": "gold"},
			Annotations: map[string]string{"owner": "ana"},
			Source:      "infra",
			Revision:    "0123456789abcdef0123456789abcdef01234567",
			// A delete's: where to read the repository when Revision is gone.
			FallbackRevision: "fedcba9876543210fedcba9876543210fedcba98",
		},
		With:  json.RawMessage(`{"region":"eu-west-1"}`),
		State: json.RawMessage(`{"job":42}`),
	}
}

func TestCommandInput(t *testing.T) {
	t.Parallel()
	f := setup(t, config{Env: map[string]string{"K": "V"}})
	a := f.action
	calls := map[string]func(context.Context, actions.Request) error{
		"reconcile": func(ctx context.Context, r actions.Request) error { _, err := a.Reconcile(ctx, r); return err },
		"delete":    func(ctx context.Context, r actions.Request) error { _, err := a.Delete(ctx, r); return err },
		"observe": func(ctx context.Context, r actions.Request) error {
			_, err := a.(actions.Observer).Observe(ctx, r)
			return err
		},
	}
	for _, op := range []string{"reconcile", "delete", "observe"} {
		// One at a time: they share OUT_DIR.
		if err := calls[op](t.Context(), request()); err != nil {
			t.Fatalf("%s: %v", op, err)
		}

		var got map[string]any
		if err := json.Unmarshal([]byte(f.read(t, "stdin.json")), &got); err != nil {
			t.Fatalf("%s: stdin: %v", op, err)
		}
		var want map[string]any
		_ = json.Unmarshal([]byte(`{
			"protocol": "trueup.dev/exec/v1",
			"operation": "`+op+`",
			"resource": {
				"apiVersion": "trueup.dev/v1", "kind": "Database", "namespace": "team-a",
				"name": "orders", "uid": "6f1c2a4e", "generation": 3, "spec": {"size": "small"},
				"labels": {"tier": "gold"}, "annotations": {"owner": "ana"}, "source": "infra",
				"revision": "0123456789abcdef0123456789abcdef01234567",
				"fallbackRevision": "fedcba9876543210fedcba9876543210fedcba98"
			},
			"with": {"region": "eu-west-1"},
			"state": {"job": 42},
			"keepPlan": false,
			"approvedPlan": ""
		}`), &want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: stdin =\n%v\nwant\n%v", op, got, want)
		}

		env := strings.Split(f.read(t, "env.txt"), "\n")
		for _, kv := range []string{
			"TRUEUP_OPERATION=" + op,
			"TRUEUP_KIND=Database",
			"TRUEUP_NAMESPACE=team-a",
			"TRUEUP_NAME=orders",
			"TRUEUP_GENERATION=3",
			"TRUEUP_REVISION=0123456789abcdef0123456789abcdef01234567",
			"TRUEUP_FALLBACK_REVISION=fedcba9876543210fedcba9876543210fedcba98",
			"K=V",
			"PATH=" + os.Getenv("PATH"), // inherited
		} {
			if !contains(env, kv) {
				t.Errorf("%s: environment lacks %s", op, kv)
			}
		}
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

func TestMinimalRequest(t *testing.T) {
	t.Parallel()
	f := setup(t, config{})
	req := actions.Request{Resource: actions.Resource{Kind: "Bucket", Name: "b"}}
	if _, err := f.action.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Resource struct {
			Spec        json.RawMessage `json:"spec"`
			Labels      json.RawMessage `json:"labels"`
			Annotations json.RawMessage `json:"annotations"`
			Revision    *string         `json:"revision"`
			Fallback    *string         `json:"fallbackRevision"`
		} `json:"resource"`
		With  json.RawMessage `json:"with"`
		State json.RawMessage `json:"state"`
	}
	if err := json.Unmarshal([]byte(f.read(t, "stdin.json")), &got); err != nil {
		t.Fatal(err)
	}
	r := got.Resource
	if string(r.Spec) != "{}" || string(r.Labels) != "{}" || string(r.Annotations) != "{}" ||
		r.Revision == nil || r.Fallback == nil || string(got.With) != "{}" || string(got.State) != "null" {
		t.Fatalf("stdin = %s; want empty objects for spec, labels, annotations and with, revision \"\", state null", f.read(t, "stdin.json"))
	}
}

func TestReply(t *testing.T) {
	t.Parallel()
	prev := json.RawMessage(`{"job":42}`)
	for _, tc := range []struct {
		name  string
		reply string
		want  actions.Result
	}{
		{"empty stdout is done", "", actions.Result{Done: true, State: prev}},
		{"whitespace is empty", " \n\t\n", actions.Result{Done: true, State: prev}},
		{"empty object is done", "{}", actions.Result{Done: true, State: prev}},
		{"requeueAfter alone is not done", `{"requeueAfter": "30s"}`,
			actions.Result{RequeueAfter: 30 * time.Second, State: prev}},
		{"explicit done wins", `{"done": true, "requeueAfter": "1m"}`,
			actions.Result{Done: true, RequeueAfter: time.Minute, State: prev}},
		{"explicit not done", `{"done": false}`, actions.Result{State: prev}},
		{"state replaced", `{"state": {"job": 43}}`,
			actions.Result{Done: true, State: json.RawMessage(`{"job": 43}`)}},
		{"state cleared", `{"state": null}`, actions.Result{Done: true}},
		{"unknown fields ignored", `{"done": true, "fromTheFuture": {"x": 1}}`,
			actions.Result{Done: true, State: prev}},
		{"observed of another shape ignored", `{"done": true, "observed": "2026-11-26"}`,
			actions.Result{Done: true, State: prev}},
		{"drift of another shape ignored", `{"done": true, "drift": "none"}`,
			actions.Result{Done: true, State: prev}},
		{"everything", `{
			"done": false, "requeueAfter": "2m", "message": "workflow running",
			"outputs": {"runID": 12345678901234567890, "url": "https://ci/run/1"},
			"state": "run-1",
			"conditions": [{"type": "WorkflowRunning", "status": "True", "reason": "Queued", "message": "queued"}]
		}`, actions.Result{
			RequeueAfter: 2 * time.Minute,
			Message:      "workflow running",
			Outputs:      map[string]any{"runID": json.Number("12345678901234567890"), "url": "https://ci/run/1"},
			State:        json.RawMessage(`"run-1"`),
			Conditions:   []actions.Condition{{Type: "WorkflowRunning", Status: "True", Reason: "Queued", Message: "queued"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, config{Env: map[string]string{"REPLY_JSON": tc.reply}})
			req := request()
			req.State = prev
			got, err := f.action.Reconcile(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Reconcile =\n%#v\nwant\n%#v", got, tc.want)
			}
		})
	}
}

func TestReplyErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ reply, want string }{
		{"hello from the script", "stdout: not a JSON object"},
		{`["done"]`, "stdout: not a JSON object"},
		{`{"done": true}` + "\n" + `{"done": true}`, "more than one JSON document"},
		{`{"done": true} trailing`, "more than one JSON document"},
		{`{"done": true`, "stdout: invalid reply"},
		{`{"done": "yes"}`, "stdout: invalid reply"},
		{`{"requeueAfter": "soon"}`, "requeueAfter"},
		{`{"requeueAfter": "-1s"}`, "negative"},
		{`{"conditions": [{"status": "True"}]}`, "conditions[0]: type is required"},
		{`{"conditions": [{"type": "Ready", "status": "yes"}]}`, "conditions[0] (Ready): status"},
	} {
		t.Run(tc.reply, func(t *testing.T) {
			t.Parallel()
			f := setup(t, config{Env: map[string]string{"REPLY_JSON": tc.reply}})
			_, err := f.action.Reconcile(t.Context(), request())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want one containing %q", err, tc.want)
			}
			if actions.IsTerminal(err) {
				t.Fatalf("err %v is terminal; a bad reply is a failed attempt", err)
			}
		})
	}
}

// What drifted is checked only where it is read: in an observe reply not in sync.
func TestObserveReplyErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ reply, want string }{
		{`{"inSync": false, "drift": [{"expected": 1}]}`, "drift[0]: path is required"},
		{`{"inSync": false, "drift": [{"path": "/a"}, {"path": "tags"}]}`, "drift[1].path: not a JSON pointer"},
		{`{"inSync": false, "drift": [{"path": "/a~2"}]}`, "drift[0].path: not a JSON pointer"},
		{`{"inSync": false, "drift": {"path": "/a"}}`, "stdout: drift: must be a list"},
		{`{"inSync": false, "drift": [{"path": 1}]}`, "stdout: drift: must be a list"},
		{`{"inSync": false, "drift": [` + strings.Repeat(`{"path": "/a"},`, 100) + `{"path": "/b"}]}`, "drift: 101 entries; at most 100"},
		{`{"inSync": false, "observed": [1]}`, "observed: must be a JSON object"},
		{`{"inSync": false, "observed": "x"}`, "observed: must be a JSON object"},
	} {
		t.Run(tc.reply, func(t *testing.T) {
			t.Parallel()
			f := setup(t, config{Env: map[string]string{"REPLY_JSON": tc.reply}})
			_, err := f.action.(actions.Observer).Observe(t.Context(), request())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want one containing %q", err, tc.want)
			}
			if actions.IsTerminal(err) {
				t.Fatalf("err %v is terminal; a bad reply is a failed attempt", err)
			}
			// Another operation's reply of the same keys is fine: they are not read there.
			if _, err := f.action.Reconcile(t.Context(), request()); err != nil {
				t.Errorf("Reconcile: %v", err)
			}
			if _, err := f.action.Delete(t.Context(), request()); err != nil {
				t.Errorf("Delete: %v", err)
			}
		})
	}
}

func TestObserve(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reply string
		want  actions.Observation
	}{
		{"", actions.Observation{InSync: true}},
		{`{"message": "fine"}`, actions.Observation{InSync: true, Message: "fine"}},
		{`{"inSync": false, "message": "size drifted", "outputs": {"size": "large"}}`,
			actions.Observation{Message: "size drifted", Outputs: map[string]any{"size": "large"}}},
		{`{"inSync": false, "drift": [{"path": "/tags/owner", "expected": "a", "actual": "b"}, {"path": "/a~1b"}, {"path": "/n", "expected": 1, "actual": {"x": [true]}}]}`,
			actions.Observation{Drift: []actions.DriftPath{{Path: "/tags/owner", Expected: "a", Actual: "b"}, {Path: "/a~1b"},
				{Path: "/n", Expected: json.Number("1"), Actual: map[string]any{"x": []any{true}}}}}},
		{`{"inSync": false, "observed": {"size": 2, "tags": {"owner": "b"}}}`,
			actions.Observation{Observed: json.RawMessage(`{"size": 2, "tags": {"owner": "b"}}`)}},
		{`{"inSync": false, "observed": null, "drift": []}`, actions.Observation{}},
		// In sync: what drifted is not read, nor checked.
		{`{"drift": [{"path": "/a"}], "observed": {"a": 1}}`, actions.Observation{InSync: true}},
		{`{"drift": [{"path": "x"}]}`, actions.Observation{InSync: true}},
		{`{"inSync": true, "drift": "none", "observed": [1]}`, actions.Observation{InSync: true}},
	} {
		f := setup(t, config{Env: map[string]string{"REPLY_JSON": tc.reply}})
		got, err := f.action.(actions.Observer).Observe(t.Context(), request())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Observe with reply %q = %#v; want %#v", tc.reply, got, tc.want)
		}
	}
}

func TestStateRoundTrip(t *testing.T) {
	t.Parallel()
	f := setup(t, config{Env: map[string]string{"REPLY_JSON": `{"done": false, "requeueAfter": "10s", "state": {"run": 7, "attempt": [1, 2]}}`}})
	req := request()
	req.State = nil
	first, err := f.action.Reconcile(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	req.State = first.State
	if _, err := f.action.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	var stdin struct{ State json.RawMessage }
	if err := json.Unmarshal([]byte(f.read(t, "stdin.json")), &stdin); err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(stdin.State, []byte(`{"run": 7, "attempt": [1, 2]}`)) {
		t.Fatalf("second call got state %s; want the first reply's state", stdin.State)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y bytes.Buffer
	return json.Compact(&x, a) == nil && json.Compact(&y, b) == nil && x.String() == y.String()
}

func TestExitStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		exit     string
		stderr   []string
		want     string
		terminal bool
	}{
		{"1", []string{"provisioning", "quota exceeded", ""}, "exit status 1: provisioning\nquota exceeded", false},
		{"2", nil, "exit status 2", false},
		{"78", []string{`spec.size: unknown size "huge"`}, `exit status 78: spec.size: unknown size "huge"`, true},
	} {
		t.Run(tc.exit, func(t *testing.T) {
			t.Parallel()
			f := setup(t, config{
				Command: append([]string{"./testdata/record.sh"}, tc.stderr...),
				Env:     map[string]string{"EXIT": tc.exit, "REPLY_JSON": `{"done": true}`},
			})
			_, err := f.action.Reconcile(t.Context(), request())
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v; want %q", err, tc.want)
			}
			if actions.IsTerminal(err) != tc.terminal {
				t.Fatalf("IsTerminal(%v) = %v; want %v", err, !tc.terminal, tc.terminal)
			}
		})
	}
}

func TestStderrTail(t *testing.T) {
	t.Parallel()
	f := setup(t, config{Command: []string{"./testdata/flood.sh", "stderr"}})
	_, err := f.action.Reconcile(t.Context(), request())
	if err == nil {
		t.Fatal("err = nil; want exit status 1")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "exit status 1: …") || !strings.HasSuffix(msg, "progress line 2000\nLAST LINE") {
		t.Fatalf("err = %.80q…%q; want the exit status, an ellipsis and the end of stderr", msg, msg[max(len(msg)-40, 0):])
	}
	if tail := strings.TrimPrefix(msg, "exit status 1: …"); len(tail) > 4096 || len(tail) < 4000 {
		t.Fatalf("stderr tail is %d bytes; want close to 4 KiB", len(tail))
	}
}

func TestStdoutLimit(t *testing.T) {
	t.Parallel()
	f := setup(t, config{Command: []string{"./testdata/flood.sh", "stdout"}})
	_, err := f.action.Reconcile(t.Context(), request())
	if err == nil || !strings.Contains(err.Error(), "stdout: more than 4 MiB") {
		t.Fatalf("err = %v; want the stdout limit", err)
	}
}

// processGone reports whether pid has exited. A zombie counts as gone: in containers nobody
// may reap orphans.
func processGone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	// The state follows the command name, which is in parentheses.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

// waitGone fails t unless the process in pidFile is gone within a few seconds.
func waitGone(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(5 * time.Second)
	for !processGone(pid) {
		select {
		case <-tick.C:
		case <-deadline:
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("grandchild %d still running", pid)
		}
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		script string
		within time.Duration
	}{
		{"./testdata/slow.sh", time.Second},         // dies of SIGTERM
		{"./testdata/stubborn.sh", 4 * time.Second}, // ignores SIGTERM: SIGKILL after the grace
	} {
		t.Run(tc.script, func(t *testing.T) {
			t.Parallel()
			pidFile := filepath.Join(t.TempDir(), "pid")
			f := setup(t, config{
				Command: []string{tc.script},
				Timeout: "300ms",
				Env:     map[string]string{"PID_FILE": pidFile},
			})
			start := time.Now()
			_, err := f.action.Reconcile(t.Context(), request())
			elapsed := time.Since(start)
			if err == nil || !strings.HasPrefix(err.Error(), "timed out after 300ms") {
				t.Fatalf("err = %v; want a timeout", err)
			}
			if elapsed > 300*time.Millisecond+tc.within {
				t.Errorf("Reconcile returned after %s", elapsed)
			}
			waitGone(t, pidFile)
		})
	}
}

func TestCancelKillsProcessGroup(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	f := setup(t, config{Command: []string{"./testdata/slow.sh"}, Env: map[string]string{"PID_FILE": pidFile}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// Cancel once the command runs (it wrote its pid), however slow the machine is to start it.
	go func() {
		defer cancel()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
				return
			}
		}
	}()
	_, err := f.action.Reconcile(ctx, request())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v; want the caller's context error", err)
	}
	waitGone(t, pidFile)
}

func TestLeftoverChildKilled(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	f := setup(t, config{Command: []string{"./testdata/leave-child.sh"}, Env: map[string]string{"PID_FILE": pidFile}})
	start := time.Now()
	res, err := f.action.Reconcile(t.Context(), request())
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed > 4*time.Second {
		t.Errorf("Reconcile returned after %s; a child holding stdout must not block the call", elapsed)
	}
	if !res.Done || res.Message != "left a child behind" {
		t.Errorf("Reconcile = %+v; want the reply printed before exiting", res)
	}
	waitGone(t, pidFile)
}

func TestRelativePaths(t *testing.T) {
	t.Parallel()
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	for _, tc := range []struct {
		name    string
		command string
		dir     string
		wantPwd string
	}{
		{"command and dir against BaseDir", "./record.sh", "", testdata},
		{"dir relative to BaseDir", "./record.sh", "..", filepath.Dir(testdata)},
		{"absolute dir", "./record.sh", other, other},
		{"bare name from PATH", "bash", "", testdata},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := t.TempDir()
			cfg := config{Command: []string{tc.command}, Dir: tc.dir, Env: map[string]string{"OUT_DIR": out}}
			if tc.command == "bash" {
				cfg.Command = append(cfg.Command, filepath.Join(testdata, "record.sh"))
			}
			// BaseDir is not the test's working directory, so resolving against the
			// working directory would fail.
			a := build(t, cfg, testdata)
			if _, err := a.Reconcile(t.Context(), request()); err != nil {
				t.Fatal(err)
			}
			f := fixture{out: out}
			if got := strings.TrimSpace(f.read(t, "pwd.txt")); got != tc.wantPwd {
				t.Fatalf("working directory = %s; want %s", got, tc.wantPwd)
			}
		})
	}
}

func TestMissingCommand(t *testing.T) {
	t.Parallel()
	f := setup(t, config{Command: []string{"./testdata/no-such-script.sh"}})
	_, err := f.action.Reconcile(t.Context(), request())
	if err == nil || !strings.Contains(err.Error(), "start command") || actions.IsTerminal(err) {
		t.Fatalf("err = %v; want a retryable start error", err)
	}
}

func TestSecretsNotLeaked(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-b3a1f0c9"
	f := setup(t, config{Command: []string{"./testdata/record.sh", "curl: 401 for token " + secret}, Env: map[string]string{
		"API_TOKEN":  secret,
		"EXIT":       "1",
		"REPLY_JSON": `{"message": "token ` + secret + `"}`,
	}})
	_, err := f.action.Reconcile(t.Context(), request())
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("err = %v; want an error without the secret", err)
	}

	f = setup(t, config{Env: map[string]string{
		"API_TOKEN":  secret,
		"REPLY_JSON": `{"message": "using ` + secret + `", "conditions": [{"type": "Auth", "status": "True", "message": "` + secret + `"}]}`,
	}})
	res, err := f.action.Reconcile(t.Context(), request())
	if err != nil {
		t.Fatal(err)
	}
	if res.Message != "using ***" || res.Conditions[0].Message != "***" {
		t.Fatalf("Reconcile = %+v; want messages redacted", res)
	}

	// Outputs too, at any depth, keys and numbers included; Observe's as well.
	f = setup(t, config{Env: map[string]string{
		"DB_PASSWORD": "12345678901",
		"API_TOKEN":   secret,
		"REPLY_JSON": `{"outputs": {"token": "` + secret + `", "nested": {"list": ["x ` + secret + `", 7]}, "` + secret + `": 1,
			"pin": 12345678901, "id": 42}}`,
	}})
	want := map[string]any{"token": "***", "nested": map[string]any{"list": []any{"x ***", json.Number("7")}}, "***": json.Number("1"),
		"pin": "***", "id": json.Number("42")}
	res, err = f.action.Reconcile(t.Context(), request())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Outputs, want) {
		t.Errorf("Reconcile outputs = %#v; want %#v", res.Outputs, want)
	}
	obs, err := f.action.(actions.Observer).Observe(t.Context(), request())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(obs.Outputs, want) {
		t.Errorf("Observe outputs = %#v; want %#v", obs.Outputs, want)
	}

	// And what drifted: the values of drift paths (the spec as found is not: see below).
	fd := setup(t, config{Env: map[string]string{
		"API_TOKEN": secret,
		"REPLY_JSON": `{"inSync": false, "drift": [{"path": "/token", "expected": "x", "actual": "` + secret + `"}],
			"observed": {"token": "` + secret + `", "n": 12}}`,
	}})
	drifted, err := fd.action.(actions.Observer).Observe(t.Context(), request())
	if err != nil {
		t.Fatal(err)
	}
	if len(drifted.Drift) != 1 || drifted.Drift[0].Actual != "***" {
		t.Errorf("Observe drift %+v; want the secret redacted", drifted.Drift)
	}
	// The spec as found is handed over as it is, for the controller to compare with the spec it
	// sent: a spec field set to the instance's secret matches it (the controller scrubs what it
	// tells of the drift).
	if string(drifted.Observed) != `{"token": "`+secret+`", "n": 12}` {
		t.Errorf("Observe observed %s; want it as the command wrote it", drifted.Observed)
	}
	if got := f.action.(actions.SecretHolder).Secrets(); !slices.Contains(got, secret) || !slices.Contains(got, "12345678901") {
		t.Errorf("Secrets() = %q; want both secret-named values", got)
	}

	_, err = execaction.New(actiontest.MustJSON(t, config{
		Command: []string{"true"},
		Env:     map[string]string{"TRUEUP_TOKEN": secret},
	}), actions.Env{})
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("New err = %v; want an error naming the key, not the value", err)
	}
}

// TestSettingsNotRedacted: only the values of secret-named env variables are redacted;
// settings such as a folder or a region stay readable in messages and errors.
func TestSettingsNotRedacted(t *testing.T) {
	t.Parallel()
	const (
		token    = "hunter2-b3a1f0c9"
		password = "pw-7d41e2"
	)
	env := map[string]string{
		"DEMO_DIR":    "../.trueup/demo",
		"REGION":      "eu-west-1",
		"API_TOKEN":   token,
		"db_password": password,
		"SSH_KEY":     "abc", // secret, but too short to redact
	}
	msg := "rendered to ../.trueup/demo/orders.json in eu-west-1 with " + token + " and " + password + " (abc)"
	want := "rendered to ../.trueup/demo/orders.json in eu-west-1 with *** and *** (abc)"

	cfg := config{Env: map[string]string{"REPLY_JSON": `{"message": "` + msg + `", "conditions": [{"type": "Rendered", "status": "True", "message": "` + msg + `"}]}`}}
	for k, v := range env {
		cfg.Env[k] = v
	}
	res, err := setup(t, cfg).action.Reconcile(t.Context(), request())
	if err != nil {
		t.Fatal(err)
	}
	if res.Message != want || res.Conditions[0].Message != want {
		t.Errorf("messages %q, %q; want %q", res.Message, res.Conditions[0].Message, want)
	}

	// The stderr tail of a failed command too.
	cfg = config{Command: []string{"./testdata/record.sh", msg}, Env: map[string]string{"EXIT": "1"}}
	for k, v := range env {
		cfg.Env[k] = v
	}
	_, err = setup(t, cfg).action.Reconcile(t.Context(), request())
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v; want one containing %q", err, want)
	}
}

// TestTrueupEnvNotInherited runs alone (t.Setenv): the controller's own TRUEUP_ variables,
// such as the database URL, do not reach the command, and the protocol's are the only ones,
// with or without inheritEnv.
func TestTrueupEnvNotInherited(t *testing.T) {
	t.Setenv("TRUEUP_DATABASE_URL", "postgres://trueup:s3cret@db/trueup")
	t.Setenv("TRUEUP_LISTEN", ":8080")
	t.Setenv("TRUEUP_OPERATION", "forged")
	for _, inherit := range []bool{false, true} {
		f := setup(t, config{InheritEnv: inherit})
		if _, err := f.action.Reconcile(t.Context(), request()); err != nil {
			t.Fatal(err)
		}
		env := strings.Split(f.read(t, "env.txt"), "\n")
		var trueup []string
		for _, kv := range env {
			if strings.HasPrefix(kv, "TRUEUP_") {
				trueup = append(trueup, kv[:strings.Index(kv, "=")])
			}
		}
		want := []string{"TRUEUP_FALLBACK_REVISION", "TRUEUP_GENERATION", "TRUEUP_KIND", "TRUEUP_LOCK_FD", "TRUEUP_NAME", "TRUEUP_NAMESPACE", "TRUEUP_OPERATION", "TRUEUP_REVISION"}
		slices.Sort(trueup)
		if !slices.Equal(trueup, want) {
			t.Errorf("inheritEnv %v: TRUEUP_ variables %v; want only the protocol's %v", inherit, trueup, want)
		}
		if !contains(env, "TRUEUP_OPERATION=reconcile") {
			t.Errorf("inheritEnv %v: environment lacks TRUEUP_OPERATION=reconcile", inherit)
		}
	}
}

// TestHostEnvNotInherited runs alone (t.Setenv): a host variable that the config never
// names does not reach the command, which gets PATH, HOME, LANG and TMPDIR, its config env
// and the protocol's variables only; inheritEnv: true hands it the host's environment.
func TestHostEnvNotInherited(t *testing.T) {
	const hostSecret = "host-only-4b1d9e2f"
	t.Setenv("CLOUD_ADMIN_TOKEN", hostSecret)
	t.Setenv("HOME", "/home/trueup-test")
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("TMPDIR", os.TempDir())
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=/home/trueup-test", "LANG=C.UTF-8", "TMPDIR=" + os.TempDir(), "REGION=eu-west-1"}

	f := setup(t, config{Env: map[string]string{"REGION": "eu-west-1"}})
	if _, err := f.action.Reconcile(t.Context(), request()); err != nil {
		t.Fatal(err)
	}
	env := f.read(t, "env.txt")
	if strings.Contains(env, hostSecret) || strings.Contains(env, "CLOUD_ADMIN_TOKEN") {
		t.Errorf("the command saw a host variable the config never named:\n%s", env)
	}
	lines := strings.Split(env, "\n")
	for _, kv := range base {
		if !contains(lines, kv) {
			t.Errorf("environment lacks %s", kv)
		}
	}
	allowed := []string{"PATH", "HOME", "LANG", "TMPDIR", "PWD", "REGION", "OUT_DIR", "SHLVL", "_"}
	for _, kv := range lines {
		name, _, _ := strings.Cut(kv, "=")
		if name != "" && !strings.HasPrefix(name, "TRUEUP_") && !slices.Contains(allowed, name) {
			t.Errorf("unexpected variable %s in the minimal environment", name)
		}
	}

	f = setup(t, config{InheritEnv: true, Env: map[string]string{"REGION": "eu-west-1"}})
	if _, err := f.action.Reconcile(t.Context(), request()); err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(f.read(t, "env.txt"), "\n")
	for _, kv := range append(base, "CLOUD_ADMIN_TOKEN="+hostSecret) {
		if !contains(lines, kv) {
			t.Errorf("inheritEnv: environment lacks %s", kv)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ cfg, want string }{
		{`{}`, "command is required"},
		{`{"command": []}`, "command is required"},
		{`{"command": [""]}`, "command is required"},
		{`{"command": "./x.sh"}`, "command"},
		{`{"command": ["./x.sh"], "timeout": "soon"}`, "timeout"},
		{`{"command": ["./x.sh"], "timeout": "-1s"}`, "negative"},
		{`{"command": ["./x.sh"], "env": {"A=B": "v"}}`, "invalid variable name"},
		{`{"command": ["./x.sh"], "env": {"TRUEUP_NAME": "v"}}`, "TRUEUP_NAME"},
		{`{"command": ["./x.sh"], "workdir": "."}`, "workdir"},
	} {
		_, err := execaction.New(json.RawMessage(tc.cfg), actions.Env{BaseDir: "."})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%s) err = %v; want one containing %q", tc.cfg, err, tc.want)
		}
	}
}

func TestValidateWith(t *testing.T) {
	t.Parallel()
	f := setup(t, config{})
	v := f.action.(actions.WithValidator)
	for _, tc := range []struct {
		with string
		ok   bool
	}{
		{"", true},
		{"null", true},
		{`{"region": "eu"}`, true},
		{` {} `, true},
		{`["eu"]`, false},
		{`"eu"`, false},
		{`{"region":`, false},
	} {
		var with json.RawMessage
		if tc.with != "" {
			with = json.RawMessage(tc.with)
		}
		if err := v.ValidateWith(with); (err == nil) != tc.ok {
			t.Errorf("ValidateWith(%s) = %v; want ok %v", tc.with, err, tc.ok)
		}
	}

	req := request()
	req.With = json.RawMessage(`["eu"]`)
	if _, err := f.action.Reconcile(t.Context(), req); !actions.IsTerminal(err) {
		t.Fatalf("Reconcile with a non-object with: err = %v; want a terminal error", err)
	}
}

func TestCloseCancelsCalls(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	a, err := execaction.New(actiontest.MustJSON(t, config{
		Command: []string{"./testdata/slow.sh"},
		Env:     map[string]string{"PID_FILE": pidFile},
		LockDir: t.TempDir(),
	}), actions.Env{BaseDir: "."})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := a.Reconcile(t.Context(), request())
		errc <- err
	}()
	// Close once the command is running.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(pidFile); err == nil {
			break
		}
		<-tick.C
	}
	if err := actions.Close(a); err != nil {
		t.Fatal(err)
	}
	// Close waited for the call: it has returned (its goroutine may still be about to send).
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "closed") {
			t.Fatalf("call in flight: err = %v; want it cancelled by Close", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call in flight did not return after Close")
	}
	waitGone(t, pidFile)
	if _, err := a.Reconcile(t.Context(), request()); err == nil {
		t.Fatal("Reconcile after Close: err = nil")
	}
	if err := actions.Close(a); err != nil {
		t.Fatal(err)
	}
}
