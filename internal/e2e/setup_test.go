package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/execaction"
	"github.com/trueup-dev/trueup/internal/liveness"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/reconciler"
	"github.com/trueup-dev/trueup/internal/server"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/syncer"
	"github.com/trueup-dev/trueup/internal/wire"
	"github.com/trueup-dev/trueup/sources/gitsource"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// env is one test's world: a Git repository, a database, an exec action, a syncer, and
// reconcilers started on demand.
type env struct {
	t       *testing.T
	repo    string
	store   *store.Store
	src     *gitsource.Source
	sync    *syncer.Syncer
	acts    map[string]actions.Action
	callLog string
	failFlg string
	api     *httptest.Server
	log     *slog.Logger
}

type options struct {
	sleep string // seconds the action sleeps
}

func setup(t *testing.T, o options) *env {
	t.Helper()
	ctx := context.Background()
	url := pgtest.NewDatabase(t, store.MigrateURL)
	st, err := store.Open(ctx, url, store.Options{MaxConns: 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	dir := t.TempDir()
	e := &env{t: t, repo: filepath.Join(dir, "repo"), store: st, callLog: filepath.Join(dir, "calls.log"),
		failFlg: filepath.Join(dir, "fail"), log: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	git(t, "", "init", "-q", "-b", "main", e.repo)

	script, _ := filepath.Abs("testdata/action.sh")
	cfg, _ := json.Marshal(map[string]any{"command": []string{script}, "timeout": "30s",
		"env": map[string]string{"CALL_LOG": e.callLog, "FAIL_FLAG": e.failFlg, "SLEEP": o.sleep}})
	act, err := execaction.New(cfg, actions.Env{Name: "provision", BaseDir: dir, Logger: e.log})
	if err != nil {
		t.Fatal(err)
	}
	e.acts = map[string]actions.Action{"provision": act}

	e.src, err = gitsource.New(gitsource.Config{Name: "infra", URL: "file://" + e.repo, Branch: "main", Path: "manifests",
		Dir: filepath.Join(dir, "mirror")}, e.log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.src.Close() })
	if err := st.RegisterSource(ctx, store.SourceConfig{Name: "infra", URL: e.repo, Branch: "main", Path: "manifests"}); err != nil {
		t.Fatal(err)
	}
	e.sync = syncer.New(st, syncer.Options{Name: "infra", Source: e.src, Interval: time.Hour, Prune: true, Replica: "test",
		CheckAction: func(name string, _ json.RawMessage) error {
			if _, ok := e.acts[name]; !ok {
				return fmt.Errorf("action %q is not configured", name)
			}
			return nil
		}}, e.log)
	e.api = httptest.NewServer(server.New(st, server.Options{Replica: "test"}, e.log).Handler())
	t.Cleanup(e.api.Close)
	return e
}

// startReconciler runs a reconciler until the test ends (or stop is called).
func (e *env) startReconciler(name string, o reconciler.Options) (stop func()) {
	o.Replica = name
	if o.Workers == 0 {
		o.Workers = 4
	}
	if o.BackoffInitial == 0 {
		o.BackoffInitial = 200 * time.Millisecond
		o.BackoffMax = 2 * time.Second
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = 5 * time.Second
	}
	r := reconciler.New(e.store, e.acts, o, e.log.With("replica", name))
	// As in serve: the maintenance loop releases expired leases (on its lease holder), and
	// liveness releases the work of replicas whose database session ended.
	m := reconciler.NewMaintenance(e.store, reconciler.MaintenanceOptions{Replica: name, LeaseTTL: o.LeaseTTL}, e.log.With("replica", name))
	live := liveness.New(e.store, liveness.Options{Replica: store.Replica{Name: name}, OnLost: r.Suspend, OnRegained: r.Resume,
		OnReleased: func() { r.Wake(); m.Wake() }}, e.log.With("replica", name))
	if err := live.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(4)
	go func() { defer wg.Done(); _ = m.Run(ctx) }()
	go func() { defer wg.Done(); live.Run(ctx) }()
	go func() { defer wg.Done(); _ = r.Run(ctx) }()
	go func() {
		defer wg.Done()
		e.store.Listen(ctx, []string{store.WorkChannel}, func(string, string) { r.Wake() }, e.log)
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	e.t.Cleanup(stop)
	return stop
}

// commit writes files (path → content; "" deletes) under the repository and commits them.
func (e *env) commit(files map[string]string, msg string) string {
	e.t.Helper()
	for p, content := range files {
		full := filepath.Join(e.repo, p)
		if content == "" {
			if err := os.Remove(full); err != nil {
				e.t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			e.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			e.t.Fatal(err)
		}
	}
	git(e.t, e.repo, "add", "-A")
	git(e.t, e.repo, "commit", "-q", "--allow-empty", "-m", msg)
	return strings.TrimSpace(git(e.t, e.repo, "rev-parse", "HEAD"))
}

// resetTree makes the work tree's manifests what they were at rev (files added since go).
func (e *env) resetTree(rev string) {
	e.t.Helper()
	git(e.t, e.repo, "rm", "-r", "-q", "manifests")
	git(e.t, e.repo, "checkout", "-q", rev, "--", "manifests")
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// get fetches an API path and decodes JSON into v; it returns the status code.
func (e *env) get(path string, v any) int {
	e.t.Helper()
	resp, err := http.Get(e.api.URL + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			e.t.Fatalf("GET %s: %v\n%s", path, err, body)
		}
	}
	return resp.StatusCode
}

func (e *env) resource(ns, kind, name string) (wire.Resource, int) {
	var r wire.Resource
	code := e.get(fmt.Sprintf("/api/v1/resources/%s/%s/%s", ns, kind, name), &r)
	return r, code
}

// eventually polls cond until it holds or the deadline passes.
func (e *env) eventually(d time.Duration, what string, cond func() (bool, string)) {
	e.t.Helper()
	deadline := time.Now().Add(d)
	last := ""
	for time.Now().Before(deadline) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("timed out after %s waiting for %s; last: %s", d, what, last)
}

// waitPhase waits until every named resource (ns/name of kind Database) has phase and generation.
func (e *env) waitPhase(phase string, gen int64, names ...string) {
	e.t.Helper()
	e.eventually(20*time.Second, "phase "+phase, func() (bool, string) {
		for _, n := range names {
			ns, name, _ := strings.Cut(n, "/")
			r, code := e.resource(ns, "Database", name)
			if code != 200 || r.Status.Phase != phase || r.Status.ObservedGeneration != gen {
				return false, fmt.Sprintf("%s: code %d phase %s observed %d/%d msg %q", n, code, r.Status.Phase, r.Status.ObservedGeneration, r.Metadata.Generation, r.Status.Message)
			}
		}
		return true, ""
	})
}

// calls parses the action's call log.
type call struct {
	id, op     string
	start, end int64
	gen        string
	failed     bool
}

func (e *env) calls() []call {
	b, err := os.ReadFile(e.callLog)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	var out []call
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 7 && f[0] == "call":
			var c call
			c.id, c.op, c.gen = f[1], f[4], f[5]
			fmt.Sscan(f[2], &c.start)
			fmt.Sscan(f[3], &c.end)
			out = append(out, c)
		case len(f) >= 6 && f[0] == "start":
			c := call{id: f[1], op: f[3], gen: f[4], failed: true}
			fmt.Sscan(f[2], &c.start)
			c.end = c.start
			out = append(out, c)
		}
	}
	return out
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

const dbType = `apiVersion: trueup.dev/v1
kind: ResourceType
metadata:
  name: Database
spec:
  group: infra.example.com
  versions:
    - name: v1
      schema:
        type: object
        required: [size]
        properties:
          size: {type: integer, minimum: 1, maximum: 100}
          engine: {type: string, default: postgres}
  action:
    name: provision
`

func dbResource(ns, name string, size int) string {
	return fmt.Sprintf(`apiVersion: infra.example.com/v1
kind: Database
metadata:
  name: %s
  namespace: %s
spec:
  size: %d
`, name, ns, size)
}
