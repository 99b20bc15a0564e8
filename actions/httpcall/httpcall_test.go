package httpcall

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/actiontest"
	"github.com/trueup-dev/trueup/internal/logbuf"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	f := newFakeProvisioner(t)
	f.sync = true
	slow := actiontest.HangingServer(t)
	actiontest.Run(t, actiontest.Suite{
		Factory:    New,
		Config:     f.config(nil),
		SlowConfig: actiontest.MustJSON(t, map[string]any{"url": slow.URL, "retry": map[string]any{"attempts": 5}}),
		With:       json.RawMessage(`{"path": "", "body": {"plan": "gold"}}`),
		Env:        actions.Env{Name: "conformance"},
	})
}

// logBuffer collects log lines from concurrent calls.
type logBuffer = logbuf.Buffer

// fixture is a fake provisioner and an instance calling it, whose in-call waits are
// recorded instead of slept.
type fixture struct {
	f      *fakeProvisioner
	a      *Action
	logs   *logBuffer
	mu     *sync.Mutex
	sleeps *[]time.Duration
}

func setup(t *testing.T, extra map[string]any) fixture {
	t.Helper()
	f := newFakeProvisioner(t)
	logs := &logBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	act, err := New(f.config(extra), actions.Env{Name: "hook", Logger: logger})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	a := act.(*Action)
	fx := fixture{f: f, a: a, logs: logs, mu: &sync.Mutex{}, sleeps: &[]time.Duration{}}
	a.sleep = func(ctx context.Context, d time.Duration) error {
		fx.mu.Lock()
		*fx.sleeps = append(*fx.sleeps, d)
		fx.mu.Unlock()
		return ctx.Err()
	}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		for _, s := range fx.secrets() {
			if strings.Contains(logs.String(), s) {
				t.Errorf("secret %q appears in the logs:\n%s", s, logs)
			}
		}
	})
	return fx
}

func (fx fixture) slept() []time.Duration {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	return append([]time.Duration(nil), *fx.sleeps...)
}

func (fx fixture) secrets() []string {
	return []string{fx.f.token, fx.f.secret}
}

// driver calls the instance for one resource the way the reconciler does.
type driver struct {
	*actiontest.Driver
	fx fixture
}

func (fx fixture) driver(t *testing.T, name string) *driver {
	return &driver{fx: fx, Driver: &actiontest.Driver{T: t, Action: fx.a, Secrets: fx.secrets(), Resource: actions.Resource{
		APIVersion: "example.com/v1", Kind: "Database", Namespace: "team-a", Name: name, UID: "uid-" + name,
		Generation: 1, Spec: json.RawMessage(`{"engine": "postgres", "storage_gb": 500}`),
		Labels: map[string]string{"team": "data"}, Revision: "0123456789abcdef0123456789abcdef01234567",
	}}}
}

func (d *driver) st() state {
	d.T.Helper()
	var s state
	d.DecodeState(&s)
	return s
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	f := fx.f
	d := fx.driver(t, "orders")
	d.With = json.RawMessage(`{"body": {"plan": "gold"}}`)

	// Create: accepted, then followed at its Location.
	res := d.Must(opReconcile)
	if res.Done || res.RequeueAfter != 10*time.Millisecond || d.st().Location != f.jobURL(1) {
		t.Fatalf("create: Done %v, RequeueAfter %s, state %s", res.Done, res.RequeueAfter, d.State)
	}
	req := f.last()
	if req.Method != http.MethodPost || req.Path != "/api/resources" {
		t.Errorf("request %s %s", req.Method, req.Path)
	}
	for k, v := range map[string]string{"Content-Type": "application/json", "X-Trueup-Operation": "reconcile",
		"Idempotency-Key": "uid-orders-1-reconcile", "X-Team": "db"} {
		if got := req.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	var body map[string]any
	if err := json.Unmarshal(req.Body, &body); err != nil {
		t.Fatal(err)
	}
	wantBody := `{"operation":"reconcile","resource":{"annotations":{},"apiVersion":"example.com/v1","generation":1,` +
		`"kind":"Database","labels":{"team":"data"},"name":"orders","namespace":"team-a",` +
		`"revision":"0123456789abcdef0123456789abcdef01234567","spec":{"engine":"postgres","storage_gb":500},"uid":"uid-orders"},` +
		`"with":{"plan":"gold"}}`
	if got, _ := json.Marshal(body); string(got) != wantBody {
		t.Errorf("body = %s\nwant   %s", got, wantBody)
	}

	// Pending, then running (the status answer asks for 1s), then done.
	if res := d.Must(opReconcile); res.Done || res.RequeueAfter != time.Second {
		t.Fatalf("pending: Done %v, RequeueAfter %s", res.Done, res.RequeueAfter)
	}
	if r := f.last(); r.Method != http.MethodGet || r.Path != "/api/jobs/1" || len(r.Body) != 0 {
		t.Fatalf("poll request %s %s (%d bytes)", r.Method, r.Path, len(r.Body))
	}
	f.setJob(1, "running", "")
	if res := d.Must(opReconcile); res.Done || !strings.Contains(res.Message, "running") {
		t.Fatalf("running: Done %v, message %q", res.Done, res.Message)
	}
	f.setJob(1, "done", "")
	res = d.Must(opReconcile)
	if got, _ := json.Marshal(res.Outputs); !res.Done || string(got) != `{"endpoint":"orders.db.internal","port":5432}` {
		t.Fatalf("done: Done %v, outputs %s", res.Done, got)
	}

	// Update: a new generation is a new request under a new key.
	d.Resource.Generation = 2
	d.Must(opReconcile)
	if k := f.last().Header.Get("Idempotency-Key"); k != "uid-orders-2-reconcile" || f.jobCount() != 2 {
		t.Fatalf("generation 2: key %q, %d jobs", k, f.jobCount())
	}
	f.setJob(2, "done", "")
	if res := d.Must(opReconcile); !res.Done {
		t.Fatalf("generation 2 not done: %q", res.Message)
	}

	// A failing attempt: the provisioner reports the job failed.
	d.Resource.Generation = 3
	d.Must(opReconcile)
	f.setJob(3, "failed", "quota exceeded in eu-west-1")
	_, err := d.Call(opReconcile)
	if err == nil || actions.IsTerminal(err) || !strings.Contains(err.Error(), "quota exceeded in eu-west-1") {
		t.Fatalf("failed job: err = %v, want a retryable error with the provisioner's message", err)
	}
	if s := d.st(); s.Location != "" || s.Failures != 1 {
		t.Fatalf("state after the failure = %s", d.State)
	}

	// Recovery: the retry sends the request again, under a new key, and succeeds.
	d.Must(opReconcile)
	if k := f.last().Header.Get("Idempotency-Key"); k != "uid-orders-3-reconcile-1" || f.jobCount() != 4 {
		t.Fatalf("retry: key %q, %d jobs", k, f.jobCount())
	}
	f.setJob(4, "done", "")
	if res := d.Must(opReconcile); !res.Done {
		t.Fatalf("recovery not done: %q", res.Message)
	}

	// Delete: DELETE with the same body shape, and the revision to fall back to, followed to
	// the end.
	d.Resource.FallbackRevision = "fedcba9876543210fedcba9876543210fedcba98"
	if res := d.Must(opDelete); res.Done {
		t.Fatal("delete done before its job ran")
	}
	del := f.recorded()[len(f.recorded())-1]
	if del.Method != http.MethodDelete || del.Header.Get("Idempotency-Key") != "uid-orders-3-delete" ||
		!bytes.Contains(del.Body, []byte(`"operation":"delete"`)) || !bytes.Contains(del.Body, []byte(`"fallbackRevision":"fedcba98`)) {
		t.Fatalf("delete request %s, key %q, body %s", del.Method, del.Header.Get("Idempotency-Key"), del.Body)
	}
	f.setJob(5, "done", "")
	if res := d.Must(opDelete); !res.Done {
		t.Fatalf("delete not done: %q", res.Message)
	}
	// Deleting again: the provisioner answers 404, which is done too.
	d.State = nil
	if res := d.Must(opDelete); !res.Done || !strings.Contains(res.Message, "404") {
		t.Fatalf("second delete: Done %v, %q", res.Done, res.Message)
	}
	if n := f.badSignatures(); n != 0 {
		t.Fatalf("%d requests with a bad signature", n)
	}
}

func TestSignature(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	fx.f.sync = true
	fx.driver(t, "orders").Must(opReconcile)
	r := fx.f.last()
	// Recomputed independently of sign().
	want := "sha256=" + hmacHex(fx.f.secret, r.Body)
	if got := r.Header.Get("X-Trueup-Signature-256"); got != want {
		t.Fatalf("signature %q, want %q", got, want)
	}
	// A wrong secret is refused by the provisioner (401: terminal).
	bad := setup(t, map[string]any{"signingSecret": "some-other-secret"})
	bad.f.sync = true
	_, err := bad.driver(t, "orders").Call(opReconcile)
	if err == nil || !actions.IsTerminal(err) || !strings.Contains(err.Error(), "401") || bad.f.badSignatures() != 1 {
		t.Fatalf("wrong secret: err = %v, %d bad signatures", err, bad.f.badSignatures())
	}
}

func TestClientErrorIsTerminal(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	// A provisioner that echoes the request headers in its error: the excerpt is scrubbed.
	fx.f.push(scripted{status: http.StatusUnprocessableEntity,
		body: `{"error": "storage_gb too large", "authorization": "Bearer ` + fx.f.token + `"}`})
	_, err := fx.driver(t, "orders").Call(opReconcile)
	if err == nil || !actions.IsTerminal(err) {
		t.Fatalf("err = %v, want terminal", err)
	}
	for _, s := range []string{"422", "storage_gb too large", `"***"`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
	if n := len(fx.f.recorded()); n != 1 {
		t.Errorf("%d requests; a 4xx is not retried", n)
	}
}

func TestServerErrorsRetriedWithSameKey(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	fx.f.sync = true
	fx.f.push(scripted{status: http.StatusServiceUnavailable, body: "upstream down"},
		scripted{status: http.StatusBadGateway, body: "bad gateway"})
	res := fx.driver(t, "orders").Must(opReconcile)
	if !res.Done {
		t.Fatalf("not done after the retries: %q", res.Message)
	}
	reqs := fx.f.recorded()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for _, r := range reqs[1:] {
		if r.Header.Get("Idempotency-Key") != reqs[0].Header.Get("Idempotency-Key") || !bytes.Equal(r.Body, reqs[0].Body) {
			t.Fatalf("a retry changed the key or body: %q vs %q", r.Header.Get("Idempotency-Key"), reqs[0].Header.Get("Idempotency-Key"))
		}
	}
	sleeps := fx.slept()
	if len(sleeps) != 2 || sleeps[0] < 50*time.Millisecond || sleeps[0] > 100*time.Millisecond ||
		sleeps[1] < 100*time.Millisecond || sleeps[1] > 200*time.Millisecond {
		t.Fatalf("backoff = %v, want ~100ms then ~200ms", sleeps)
	}
}

func TestServerErrorsExhausted(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	for range 3 {
		fx.f.push(scripted{status: http.StatusInternalServerError, body: `{"error": "boom"}`})
	}
	_, err := fx.driver(t, "orders").Call(opReconcile)
	if err == nil || actions.IsTerminal(err) || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "3 tries") {
		t.Fatalf("err = %v, want a retryable error after 3 tries", err)
	}
	if n := len(fx.f.recorded()); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	fx.f.sync = true
	fx.f.push(scripted{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": "2"}, body: `{"error": "slow down"}`})
	if res := fx.driver(t, "orders").Must(opReconcile); !res.Done {
		t.Fatal("not done")
	}
	if s := fx.slept(); len(s) != 1 || s[0] != 2*time.Second {
		t.Fatalf("waits = %v, want [2s]", s)
	}
	r := fx.f.recorded()
	if len(r) != 2 || r[0].Header.Get("Idempotency-Key") != r[1].Header.Get("Idempotency-Key") {
		t.Fatalf("%d requests", len(r))
	}

	// A long Retry-After ends the call with a requeue at that time, without an error.
	fx.f.push(scripted{status: http.StatusServiceUnavailable, header: map[string]string{"Retry-After": "120"}})
	res, err := fx.driver(t, "other").Call(opReconcile)
	if err != nil || res.Done || res.RequeueAfter != 2*time.Minute {
		t.Fatalf("long Retry-After: err %v, Done %v, RequeueAfter %s", err, res.Done, res.RequeueAfter)
	}
	if len(fx.slept()) != 1 {
		t.Fatalf("waited in the call: %v", fx.slept())
	}
}

func TestConnectionErrorsRetried(t *testing.T) {
	t.Parallel()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	act, err := New(actiontest.MustJSON(t, map[string]any{"url": dead.URL + "/hook?key=query-SECRET-123",
		"retry": map[string]any{"attempts": 2, "initial": "1ms"}}), actions.Env{})
	if err != nil {
		t.Fatal(err)
	}
	defer actions.Close(act)
	_, err = act.Reconcile(t.Context(), actions.Request{Resource: actions.Resource{Name: "n", Generation: 1}})
	if err == nil || actions.IsTerminal(err) {
		t.Fatalf("err = %v, want a retryable error", err)
	}
	if strings.Contains(err.Error(), "query-SECRET") {
		t.Fatalf("the URL query appears in %q", err)
	}
}

func TestPollLostJobSendsAgain(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	d := fx.driver(t, "orders")
	d.State = state{Operation: opReconcile, Generation: 1, Location: fx.f.jobURL(99)}.encode()
	if _, err := d.Call(opReconcile); err == nil || actions.IsTerminal(err) {
		t.Fatalf("lost job: err = %v", err)
	}
	d.Must(opReconcile)
	if k := fx.f.last().Header.Get("Idempotency-Key"); k != "uid-orders-1-reconcile-1" {
		t.Fatalf("key after a lost job = %q", k)
	}
}

func TestLocationOnAnotherOriginRefused(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	fx.f.push(scripted{status: http.StatusAccepted, header: map[string]string{"Location": "https://evil.example.com/jobs/1"}})
	_, err := fx.driver(t, "orders").Call(opReconcile)
	if err == nil || !actions.IsTerminal(err) || !strings.Contains(err.Error(), "another origin") {
		t.Fatalf("err = %v", err)
	}
}

func TestWithPath(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	fx.f.sync = true
	d := fx.driver(t, "orders")
	d.With = json.RawMessage(`{"path": "/databases/pg main"}`)
	d.Must(opReconcile)
	if p := fx.f.last().Path; p != "/api/resources/databases/pg%20main" {
		t.Fatalf("path = %q", p)
	}
}

func TestReplyShapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		reply       scripted
		done        bool
		outputs     string // JSON; "" for nil
		message     string
		errContains string
	}{
		{name: "empty", reply: scripted{status: 204}, done: true, message: "reconciled"},
		{name: "outputs member", reply: scripted{status: 200, body: `{"outputs": {"id": 12345678901234567890}, "message": "created"}`},
			done: true, outputs: `{"id":12345678901234567890}`, message: "created"},
		{name: "whole object", reply: scripted{status: 201, body: `{"id": "db-1", "status": "done", "message": "ok"}`},
			done: true, outputs: `{"id":"db-1"}`, message: "ok"},
		{name: "text", reply: scripted{status: 200, header: map[string]string{"Content-Type": "text/plain"}, body: "OK"}, done: true, message: "reconciled"},
		{name: "accepted without location", reply: scripted{status: 202}, done: true, message: "reconciled"},
		{name: "running without location", reply: scripted{status: 200, body: `{"status": "running"}`}, done: false, message: "running"},
		{name: "failed", reply: scripted{status: 200, body: `{"status": "failed", "message": "no capacity"}`}, errContains: "no capacity"},
		{name: "unknown status", reply: scripted{status: 200, body: `{"status": "exploded"}`}, errContains: "unknown status"},
		{name: "bad outputs", reply: scripted{status: 200, body: `{"outputs": [1]}`}, errContains: "outputs is not a JSON object"},
		{name: "invalid JSON", reply: scripted{status: 200, body: `{"a": `}, errContains: "invalid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := setup(t, nil)
			fx.f.push(tc.reply)
			res, err := fx.driver(t, "orders").Call(opReconcile)
			if tc.errContains != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errContains) {
					t.Fatalf("err = %v, want %q", err, tc.errContains)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out := ""
			if res.Outputs != nil {
				b, _ := json.Marshal(res.Outputs)
				out = string(b)
			}
			if res.Done != tc.done || out != tc.outputs || !strings.Contains(res.Message, tc.message) {
				t.Fatalf("Done %v, outputs %s, message %q; want %v, %s, %q", res.Done, out, res.Message, tc.done, tc.outputs, tc.message)
			}
		})
	}
}

func TestRunningWithoutLocationSendsSameKeyAgain(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	fx.f.sync = true
	fx.f.push(scripted{status: 200, body: `{"status": "running"}`})
	d := fx.driver(t, "orders")
	if res := d.Must(opReconcile); res.Done {
		t.Fatal("done while running")
	}
	if res := d.Must(opReconcile); !res.Done {
		t.Fatal("not done")
	}
	r := fx.f.recorded()
	if len(r) != 2 || r[0].Method != http.MethodPost || r[1].Method != http.MethodPost ||
		r[0].Header.Get("Idempotency-Key") != r[1].Header.Get("Idempotency-Key") {
		t.Fatalf("requests %+v", r)
	}
}

func TestConfigRejected(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  map[string]any
		want string
	}{
		{"no url", map[string]any{}, "url is required"},
		{"relative url", map[string]any{"url": "/hook"}, "absolute"},
		{"GET", map[string]any{"url": "https://p/x", "method": "GET"}, "POST, PUT or PATCH"},
		{"reserved header", map[string]any{"url": "https://p/x", "headers": map[string]string{"Idempotency-Key": "x"}}, "set by trueup"},
		{"trueup header", map[string]any{"url": "https://p/x", "headers": map[string]string{"x-trueup-foo": "x"}}, "set by trueup"},
		{"bad header name", map[string]any{"url": "https://p/x", "headers": map[string]string{"a b": "x"}}, "not a valid header name"},
		{"header newline", map[string]any{"url": "https://p/x", "headers": map[string]string{"X-A": "secret-value\nX-B: 1"}}, "control character"},
		{"negative attempts", map[string]any{"url": "https://p/x", "retry": map[string]any{"attempts": -1}}, "negative"},
		{"bad initial", map[string]any{"url": "https://p/x", "retry": map[string]any{"initial": "soon"}}, "retry.initial"},
		{"unknown retry field", map[string]any{"url": "https://p/x", "retry": map[string]any{"max": "1s"}}, "max"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(actiontest.MustJSON(t, tc.cfg), actions.Env{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "secret-value") {
				t.Fatalf("a header value appears in %q", err)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	s, err := parseConfig(json.RawMessage(`{"url": "https://p.internal/api"}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.method != "POST" || s.timeout != 30*time.Second || s.pollInterval != 10*time.Second ||
		s.attempts != 3 || s.initial != 500*time.Millisecond || s.secret != nil {
		t.Fatalf("settings = %+v", s)
	}
}

func TestValidateWith(t *testing.T) {
	t.Parallel()
	a := &Action{}
	for _, tc := range []struct {
		with string
		want string
	}{
		{`{"path": "/databases", "body": {"plan": "gold"}}`, ""},
		{`{"path": "a/b-c_d.e"}`, ""},
		{`{"unknown": 1}`, "unknown"},
		{`{"body": [1]}`, "JSON object"},
		{`{"path": "/../admin"}`, ".."},
		{`{"path": "/a//b"}`, "empty"},
		{`{"path": "/a?x=1"}`, "plain path"},
		{`{"path": "/a%2e%2e"}`, "plain path"},
	} {
		err := a.ValidateWith(json.RawMessage(tc.with))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("ValidateWith(%s): %v", tc.with, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("ValidateWith(%s) = %v, want %q", tc.with, err, tc.want)
		}
	}
}

func hmacHex(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}
