package commitstatus

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/forge/ratelimit"
	"github.com/trueup-dev/trueup/internal/logbuf"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
)

const (
	token = "ghp_TopSecretToken0123456789"
	rev1  = "1111111111111111111111111111111111111111"
	rev2  = "2222222222222222222222222222222222222222"
	rev3  = "3333333333333333333333333333333333333333"
)

const typeDoc = `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Queue}
spec:
  group: mq.example.com
  versions:
    - name: v1
      schema: {type: object, properties: {size: {type: integer}}}
  action: {name: noop}
`

// status is one request the fake forge received.
type status struct {
	path, state, description, context, targetURL string
	header                                       http.Header
}

// fakeForge answers like the forge's statuses endpoint; respond, when set, may fail a call.
type fakeForge struct {
	gitlab bool
	mu     sync.Mutex
	got    []status
	calls  int
	// respond may set headers of the answer in h.
	respond func(call int, h http.Header) (code int, body string)
	arrived chan struct{}
}

func (f *fakeForge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.calls++
	call := f.calls
	f.mu.Unlock()
	if f.respond != nil {
		if code, body := f.respond(call, w.Header()); code != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = io.WriteString(w, body)
			return
		}
	}
	s := status{path: r.URL.EscapedPath(), header: r.Header.Clone()}
	if f.gitlab {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.state, s.description, s.context, s.targetURL = r.PostForm.Get("state"), r.PostForm.Get("description"), r.PostForm.Get("name"), r.PostForm.Get("target_url")
	} else {
		var b struct {
			State       string `json:"state"`
			TargetURL   string `json:"target_url"`
			Description string `json:"description"`
			Context     string `json:"context"`
		}
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.state, s.description, s.context, s.targetURL = b.State, b.Description, b.Context, b.TargetURL
	}
	f.mu.Lock()
	f.got = append(f.got, s)
	f.mu.Unlock()
	select {
	case f.arrived <- struct{}{}:
	default:
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, `{"id":1}`)
}

func (f *fakeForge) statuses() []status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]status(nil), f.got...)
}

// waitFor waits until the forge holds n statuses.
func (f *fakeForge) waitFor(t *testing.T, n int) []status {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if got := f.statuses(); len(got) >= n {
			return got
		}
		select {
		case <-f.arrived:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("waited for %d statuses, got %+v", n, f.statuses())
		}
	}
}

// syncBuffer is a log sink safe for the reporter's goroutine.
type syncBuffer = logbuf.Buffer

type fixture struct {
	st    *store.Store
	forge *fakeForge
	rep   *Reporter
	logs  *syncBuffer
}

// setup applies rev1 (queues a and b) to source infra and returns a reporter posting to a
// fake forge, polling fast.
func setup(t *testing.T, provider string) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, pgtest.NewDatabase(t, store.MigrateURL), store.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if err := st.RegisterSource(ctx, store.SourceConfig{Name: "infra", URL: "https://example.com/acme/infra.git", Branch: "main"}); err != nil {
		t.Fatal(err)
	}
	f := &fixture{st: st, forge: &fakeForge{gitlab: provider == ProviderGitLab, arrived: make(chan struct{}, 1)}, logs: &syncBuffer{}}
	apply(t, st, rev1, map[string]int{"a": 1, "b": 1})

	srv := httptest.NewServer(f.forge)
	t.Cleanup(srv.Close)
	repo := "acme/infra"
	rep, err := New(Config{Provider: provider, Token: token, BaseURL: srv.URL + "/", Repo: repo, TargetURL: "http://127.0.0.1:8080/", Pauses: new(ratelimit.Registry)},
		"infra", st, slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	rep.poll, rep.recheck = 20*time.Millisecond, 50*time.Millisecond
	rep.retryDelays = []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}
	f.rep = rep
	t.Cleanup(func() {
		if err := rep.Close(); err != nil {
			t.Error(err)
		}
		if strings.Contains(f.logs.String(), token) {
			t.Errorf("the token reached the logs:\n%s", f.logs.String())
		}
	})
	return f
}

// apply writes a revision declaring queues with the given sizes through the real apply path.
func apply(t *testing.T, st *store.Store, rev string, queues map[string]int) {
	t.Helper()
	var b strings.Builder
	b.WriteString(typeDoc)
	for name, size := range queues {
		fmt.Fprintf(&b, "---\napiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: %s}\nspec: {size: %d}\n", name, size)
	}
	set, err := manifest.NewLoader().Load([]sources.File{{Path: "queues.yaml", Data: []byte(b.String())}}, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyRevision(context.Background(), store.ApplyParams{Source: "infra", Revision: rev, Set: set, Prune: true, MaxPruneFraction: 1}); err != nil {
		t.Fatal(err)
	}
}

// reconcile sets the named resources as the reconciler would leave them.
func (f *fixture) reconcile(t *testing.T, phase, message string, stalled bool, names ...string) {
	t.Helper()
	conds := `[{"type":"Ready","status":"True","reason":"Reconciled"}]`
	if stalled {
		conds = `[{"type":"Ready","status":"False","reason":"Stalled"},{"type":"Stalled","status":"True","reason":"ActionRejected"}]`
	}
	_, err := f.st.Pool().Exec(context.Background(), `UPDATE resources SET phase = $1, message = $2, conditions = $3::jsonb,
		observed_generation = CASE WHEN $1 = 'Ready' OR $4 THEN generation ELSE observed_generation END,
		attempt = CASE WHEN $1 = 'Failed' THEN 1 ELSE 0 END
		WHERE source = 'infra' AND name = ANY($5)`, phase, message, conds, stalled, names)
	if err != nil {
		t.Fatal(err)
	}
}

func states(ss []status) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.state + ": " + s.description
	}
	return out
}

func TestGitHubSuccess(t *testing.T) {
	t.Parallel()
	f := setup(t, ProviderGitHub)
	ctx := context.Background()
	f.rep.Picked(ctx, rev1)
	f.rep.Applied(ctx, rev1)
	f.forge.waitFor(t, 2)
	f.reconcile(t, "Ready", "", false, "a")
	f.reconcile(t, "Ready", "", false, "b")
	got := f.forge.waitFor(t, 3)
	want := []string{"pending: applying revision", "pending: reconciling 2 resources", "success: 2 resources Ready"}
	if strings.Join(states(got), "\n") != strings.Join(want, "\n") {
		t.Errorf("statuses:\n%s\nwant:\n%s", strings.Join(states(got), "\n"), strings.Join(want, "\n"))
	}
	for _, s := range got {
		if s.path != "/repos/acme/infra/statuses/"+rev1 {
			t.Errorf("path %s", s.path)
		}
		if s.context != "trueup/infra" || s.targetURL != "http://127.0.0.1:8080/" {
			t.Errorf("context %q, target %q", s.context, s.targetURL)
		}
		if s.header.Get("Authorization") != "Bearer "+token || s.header.Get("Accept") != "application/vnd.github+json" {
			t.Errorf("headers %v", s.header)
		}
	}
	// Applied again (a replica re-applying) posts nothing new, and a finished revision is
	// not superseded by the next.
	f.rep.Applied(ctx, rev1)
	apply(t, f.st, rev2, map[string]int{"a": 1, "b": 1}) // a commit that changes no manifest
	f.rep.Applied(ctx, rev2)
	got = f.forge.waitFor(t, 4)
	if len(got) != 4 || got[3].state != "success" || !strings.HasSuffix(got[3].path, rev2) {
		t.Errorf("statuses %v", states(got))
	}
	// Picked again (a revision tried anew) reopens it.
	f.rep.Picked(ctx, rev2)
	f.rep.Applied(ctx, rev2)
	got = f.forge.waitFor(t, 6)
	if s := strings.Join(states(got[4:]), "|"); s != "pending: applying revision|success: applied; the revision changed no resources" {
		t.Errorf("statuses %s", s)
	}
}

func TestGitHubFailure(t *testing.T) {
	t.Parallel()
	f := setup(t, ProviderGitHub)
	ctx := context.Background()
	f.rep.Applied(ctx, rev1)
	f.forge.waitFor(t, 1)
	f.reconcile(t, "Ready", "", false, "a")
	f.reconcile(t, "Failed", "workflow database.yml rejected input engine=oracle", true, "b")
	got := f.forge.waitFor(t, 2)
	last := got[len(got)-1]
	if last.state != "failure" || !strings.Contains(last.description, "1 of 2 failed: Queue default/b: workflow database.yml") {
		t.Errorf("final status %+v", last)
	}
	if n := utf8.RuneCountInString(last.description); n > maxDescription {
		t.Errorf("description of %d characters", n)
	}
}

// A retried failure that heals turns the status into success.
func TestFailureHeals(t *testing.T) {
	t.Parallel()
	f := setup(t, ProviderGitHub)
	ctx := context.Background()
	f.rep.Applied(ctx, rev1)
	f.forge.waitFor(t, 1)
	f.reconcile(t, "Ready", "", false, "a")
	f.reconcile(t, "Failed", "503 from provisioner", false, "b")
	if got := f.forge.waitFor(t, 2); got[1].state != "failure" {
		t.Fatalf("statuses %v", states(got))
	}
	f.reconcile(t, "Ready", "", false, "b")
	if got := f.forge.waitFor(t, 3); got[2].state != "success" {
		t.Errorf("statuses %v", states(got))
	}
}

func TestRejected(t *testing.T) {
	t.Parallel()
	f := setup(t, ProviderGitHub)
	ctx := context.Background()
	f.rep.Picked(ctx, rev2)
	f.rep.Rejected(ctx, rev2, []string{
		"manifests/queues.yaml:12: spec.size: expected integer, but got string; " + strings.Repeat("very long explanation ", 20),
		"manifests/other.yaml:3: metadata.name: required",
	})
	got := f.forge.waitFor(t, 2)
	last := got[1]
	if last.state != "failure" || !strings.HasPrefix(last.description, "rejected: manifests/queues.yaml:12: spec.size") ||
		!strings.HasSuffix(last.description, "(+1 more)") {
		t.Errorf("rejected status %+v", last)
	}
	if n := utf8.RuneCountInString(last.description); n > maxDescription {
		t.Errorf("description of %d characters", n)
	}
}

func TestNothingChanged(t *testing.T) {
	t.Parallel()
	f := setup(t, ProviderGitHub)
	apply(t, f.st, rev2, map[string]int{"a": 1, "b": 1}) // no row carries rev2: it changed nothing
	f.rep.Applied(context.Background(), rev2)
	got := f.forge.waitFor(t, 1)
	if got[0].state != "success" || got[0].path != "/repos/acme/infra/statuses/"+rev2 {
		t.Errorf("statuses %+v", got)
	}
}

func TestSuperseded(t *testing.T) {
	t.Parallel()
	f := setup(t, ProviderGitHub)
	ctx := context.Background()
	f.rep.Applied(ctx, rev1)
	f.forge.waitFor(t, 1)
	// rev2 changes a and removes b: b's deletion counts for rev2 until the row is gone.
	apply(t, f.st, rev2, map[string]int{"a": 2})
	f.rep.Applied(ctx, rev2)
	got := f.forge.waitFor(t, 3)
	if got[1].state != "error" || !strings.Contains(got[1].description, "superseded by 222222222222") || !strings.HasSuffix(got[1].path, rev1) {
		t.Errorf("old revision: %+v", got[1])
	}
	if got[2].state != "pending" || got[2].description != "reconciling 2 resources" || !strings.HasSuffix(got[2].path, rev2) {
		t.Errorf("new revision: %+v", got[2])
	}
	f.reconcile(t, "Ready", "", false, "a")
	if _, err := f.st.Pool().Exec(ctx, `DELETE FROM resources WHERE name = 'b'`); err != nil {
		t.Fatal(err)
	}
	got = f.forge.waitFor(t, 4)
	if got[3].state != "success" || got[3].description != "1 resource Ready" || !strings.HasSuffix(got[3].path, rev2) {
		t.Errorf("final: %+v", got[3])
	}
}

func TestGitLab(t *testing.T) {
	t.Parallel()
	f := setup(t, ProviderGitLab)
	ctx := context.Background()
	f.rep.Picked(ctx, rev1)
	f.rep.Applied(ctx, rev1)
	f.forge.waitFor(t, 2)
	f.reconcile(t, "Ready", "", false, "a", "b")
	got := f.forge.waitFor(t, 3)
	if strings.Join(states(got), "|") != "pending: applying revision|running: reconciling 2 resources|success: 2 resources Ready" {
		t.Errorf("statuses %v", states(got))
	}
	for _, s := range got {
		if s.path != "/api/v4/projects/acme%2Finfra/statuses/"+rev1 {
			t.Errorf("path %s", s.path)
		}
		if s.header.Get("PRIVATE-TOKEN") != token || s.header.Get("Authorization") != "" {
			t.Errorf("headers %v", s.header)
		}
		if s.context != "trueup/infra" || s.targetURL != "http://127.0.0.1:8080/" {
			t.Errorf("name %q, target %q", s.context, s.targetURL)
		}
	}

	f.rep.Rejected(ctx, rev3, []string{"queues.yaml:4: spec.size: must be >= 0"})
	got = f.forge.waitFor(t, 4)
	if got[3].state != "failed" || got[3].description != "rejected: queues.yaml:4: spec.size: must be >= 0" {
		t.Errorf("rejected: %+v", got[3])
	}
}

func TestGitLabFailureAndSupersede(t *testing.T) {
	t.Parallel()
	f := setup(t, ProviderGitLab)
	ctx := context.Background()
	f.rep.Applied(ctx, rev1)
	f.forge.waitFor(t, 1)
	apply(t, f.st, rev2, map[string]int{"a": 5, "b": 5})
	f.rep.Applied(ctx, rev2)
	f.forge.waitFor(t, 3)
	f.reconcile(t, "Failed", "bad size", true, "a", "b")
	got := f.forge.waitFor(t, 4)
	want := "running: reconciling 2 resources|canceled: superseded by 222222222222 before its resources were Ready|" +
		"running: reconciling 2 resources|failed: 2 of 2 failed: Queue default/a: bad size; Queue default/b: bad size"
	if strings.Join(states(got), "|") != want {
		t.Errorf("statuses\n%v\nwant\n%v", strings.Join(states(got), "|"), want)
	}
}

func TestRetries(t *testing.T) {
	t.Parallel()
	f := setup(t, ProviderGitHub)
	f.forge.respond = func(call int, h http.Header) (int, string) {
		switch call {
		case 1:
			return http.StatusBadGateway, `{"message":"upstream hiccup"}`
		case 2:
			h.Set("Retry-After", "1")
			return http.StatusTooManyRequests, `{"message":"slow down"}`
		}
		return 0, ""
	}
	f.rep.Picked(context.Background(), rev1)
	if got := f.forge.waitFor(t, 1); got[0].state != "pending" {
		t.Errorf("statuses %v", states(got))
	}
	if n := strings.Count(f.logs.String(), "retrying"); n != 2 {
		t.Errorf("%d retry warnings:\n%s", n, f.logs.String())
	}
}

// TestRateLimitWithoutReset: a 429 naming no reset pauses the token a minute; the reporter
// waits its longest wait (not its retry delays) before another attempt, which the pause
// refuses unsent, and gives up after its retries: the forge sees the one request.
func TestRateLimitWithoutReset(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{ProviderGitHub, ProviderGitLab} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			f := setup(t, provider)
			f.rep.maxWait = 150 * time.Millisecond
			f.forge.respond = func(int, http.Header) (int, string) {
				return http.StatusTooManyRequests, `{"message":"slow down"}`
			}
			f.rep.Picked(context.Background(), rev1)
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(f.logs.String(), "could not post commit status") {
				if time.Now().After(deadline) {
					t.Fatalf("no outcome:\n%s", f.logs.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			logs := f.logs.String()
			if n := strings.Count(logs, "retrying"); n != len(f.rep.retryDelays) || strings.Count(logs, "in=150ms") != n {
				t.Errorf("want %d retries, each in=150ms:\n%s", len(f.rep.retryDelays), logs)
			}
			if !strings.Contains(logs, "rate limit") {
				t.Errorf("the failure does not name the rate limit:\n%s", logs)
			}
			f.forge.mu.Lock()
			calls := f.forge.calls
			f.forge.mu.Unlock()
			if calls != 1 {
				t.Errorf("%d requests reached the forge, want 1", calls)
			}
		})
	}
}

// A 401 is not retried, never blocks what follows, and the token it may echo is scrubbed.
func TestUnauthorizedNotRetried(t *testing.T) {
	t.Parallel()
	f := setup(t, ProviderGitHub)
	f.forge.respond = func(call int, _ http.Header) (int, string) {
		if call == 1 {
			return http.StatusUnauthorized, `{"message":"Bad credentials: ` + token + `"}`
		}
		return 0, ""
	}
	ctx := context.Background()
	f.rep.Picked(ctx, rev1)
	f.rep.Rejected(ctx, rev1, []string{"a.yaml:1: kind: required"})
	if got := f.forge.waitFor(t, 1); got[0].state != "failure" {
		t.Errorf("statuses %v", states(got))
	}
	logs := f.logs.String()
	if !strings.Contains(logs, "could not post commit status") || !strings.Contains(logs, "401 Unauthorized") || !strings.Contains(logs, "[redacted]") {
		t.Errorf("logs:\n%s", logs)
	}
	if strings.Contains(logs, "retrying") {
		t.Errorf("a 401 was retried:\n%s", logs)
	}
}

// A redirect is not followed, so the token never reaches another host: Go forwards custom
// headers such as PRIVATE-TOKEN on a redirect, whatever the host.
func TestRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{ProviderGitHub, ProviderGitLab} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			f := setup(t, provider)
			elsewhere := &fakeForge{gitlab: provider == ProviderGitLab, arrived: make(chan struct{}, 1)}
			other := httptest.NewServer(elsewhere)
			t.Cleanup(other.Close)
			redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
			}))
			t.Cleanup(redirect.Close)
			logs := &syncBuffer{}
			rep, err := New(Config{Provider: provider, Token: token, BaseURL: redirect.URL, Repo: "acme/infra", Pauses: new(ratelimit.Registry)}, "infra", f.st,
				slog.New(slog.NewTextHandler(logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = rep.Close() })
			rep.retryDelays = []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}
			rep.Picked(context.Background(), rev1)

			// Wait for the outcome either way: the failure logged, or the status posted elsewhere.
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(logs.String(), "could not post commit status") && len(elsewhere.statuses()) == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("no outcome:\n%s", logs.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := rep.Close(); err != nil {
				t.Fatal(err)
			}
			for _, s := range elsewhere.statuses() {
				for name, vs := range s.header {
					for _, v := range vs {
						if strings.Contains(v, token) {
							t.Errorf("the token reached the other host in %s", name)
						}
					}
				}
			}
			elsewhere.mu.Lock()
			calls := elsewhere.calls
			elsewhere.mu.Unlock()
			if calls != 0 {
				t.Errorf("%d requests reached the other host", calls)
			}
			if got := logs.String(); !strings.Contains(got, "307 Temporary Redirect") || strings.Contains(got, token) {
				t.Errorf("logs:\n%s", got)
			}
		})
	}
}

// A forge that does not answer delays statuses, never the caller; Close ends the wait.
func TestNeverBlocks(t *testing.T) {
	t.Parallel()
	f := setup(t, ProviderGitHub)
	hang := make(chan struct{})
	blocked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(blocked.Close)
	t.Cleanup(func() { close(hang) })
	rep, err := New(Config{Provider: ProviderGitHub, Token: token, BaseURL: blocked.URL, Repo: "acme/infra", Pauses: new(ratelimit.Registry)}, "infra", f.st, slog.New(slog.NewTextHandler(f.logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 100 {
		rep.Picked(context.Background(), rev1)
		rep.Applied(context.Background(), rev1)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("calls took %s", d)
	}
	if err := rep.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rep.Close(); err != nil {
		t.Fatal(err)
	}
	rep.Picked(context.Background(), rev2) // after Close: ignored
}

func TestConfig(t *testing.T) {
	t.Parallel()
	ok := Config{Provider: ProviderGitHub, Token: "t", Repo: "acme/infra"}
	if err := ok.Validate(); err != nil {
		t.Errorf("valid config: %v", err)
	}
	for name, c := range map[string]Config{
		"provider":     {Provider: "bitbucket", Token: "t", Repo: "a/b"},
		"no token":     {Provider: ProviderGitHub, Repo: "a/b"},
		"github repo":  {Provider: ProviderGitHub, Token: "t", Repo: "infra"},
		"github repo3": {Provider: ProviderGitHub, Token: "t", Repo: "a/b/c"},
		"gitlab repo":  {Provider: ProviderGitLab, Token: "t"},
		"base url":     {Provider: ProviderGitLab, Token: "t", Repo: "g/p", BaseURL: "gitlab.example.com"},
		"target url":   {Provider: ProviderGitLab, Token: "t", Repo: "g/p", TargetURL: "::"},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%s: no error", name)
		} else if strings.Contains(err.Error(), token) {
			t.Errorf("%s: token in error", name)
		}
		if _, err := New(c, "infra", nil, nil); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
	// Non-commit revisions (a folder source's content hash) get no status.
	if isCommit("dir:abc") || !isCommit(rev1) {
		t.Error("isCommit")
	}
	if got := clip.Runes(strings.Repeat("é", 200), maxDescription); utf8.RuneCountInString(got) != maxDescription || !strings.HasSuffix(got, "…") {
		t.Errorf("truncate: %q", got)
	}
}
