package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/daemon"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/syncer"
	"github.com/trueup-dev/trueup/internal/wire"
	"github.com/trueup-dev/trueup/sources/gitsource"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// env is one test's world: a Git repository, a database, and the trueup replicas the test
// starts, each a daemon (internal/daemon) of the config its options make.
type env struct {
	t        *testing.T
	dir      string
	repo     string
	dbURL    string
	store    *store.Store // the test's own connection: what it seeds and inspects
	o        options
	callLog  string
	failFlg  string
	api      string // the first replica's API
	replicas []*daemon.Daemon
	listens  map[string]string // each replica's API address, kept across its reloads
	log      *slog.Logger
}

// options are a test's controller settings: the config of every replica it starts.
type options struct {
	sleep       string                    // seconds the action sleeps
	script      string                    // the exec action's command (default testdata/action.sh)
	timeout     string                    // the exec action's timeout (default 30s)
	env         map[string]string         // more environment for the command
	action      actions.Action            // the action instance instead of the exec action
	workers     int                       // reconcile.workers (default 4)
	leaseTTL    time.Duration             // reconcile.leaseTTL (default 5s)
	backoff     [2]time.Duration          // reconcile.backoff initial and max (default 200ms, 2s)
	noPrune     bool                      // prune.enabled: false
	maxFraction float64                   // prune.maxFraction
	references  string                    // the references block (YAML)
	source      string                    // the source instead of infra on the test's repository (YAML flow mapping)
	more        map[string]actions.Action // more actions, by name
	hookSecret  string                    // the source's webhook secret ("": no webhook)
	stderr      io.Writer                 // also gets the replicas' log, beside the test's
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
	e := &env{t: t, dir: dir, repo: filepath.Join(dir, "repo"), dbURL: url, store: st, o: o, listens: map[string]string{}, callLog: filepath.Join(dir, "calls.log"),
		failFlg: filepath.Join(dir, "fail"), log: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	git(t, "", "init", "-q", "-b", "main", e.repo)
	return e
}

// config is replica name's controller config under o: the Git source infra on the test's
// repository (polled hourly: the test syncs), the action provision, the test's database.
func (e *env) config(name string, o options) *config.Config {
	e.t.Helper()
	listen, ok := e.listens[name]
	if !ok {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			e.t.Fatal(err)
		}
		listen = ln.Addr().String()
		ln.Close()
		e.listens[name] = listen
	}
	action := map[string]any{"name": "provision", "type": "test"}
	if o.action == nil {
		script := cmp.Or(o.script, "testdata/action.sh")
		script, _ = filepath.Abs(script)
		env := map[string]string{"CALL_LOG": e.callLog, "FAIL_FLAG": e.failFlg, "SLEEP": o.sleep}
		maps.Copy(env, o.env)
		action = map[string]any{"name": "provision", "type": "exec", "config": map[string]any{"command": []string{script},
			"timeout": cmp.Or(o.timeout, "30s"), "env": env}}
	}
	all := []any{action}
	for _, name := range slices.Sorted(maps.Keys(o.more)) {
		all = append(all, map[string]any{"name": name, "type": "test-" + name})
	}
	actionsJSON, _ := json.Marshal(all)
	prune := map[string]any{"enabled": !o.noPrune}
	if o.maxFraction > 0 {
		prune["maxFraction"] = o.maxFraction
	}
	pruneJSON, _ := json.Marshal(prune)
	source := fmt.Sprintf("name: infra, git: {url: %q, branch: main, path: manifests, interval: 1h}", "file://"+e.repo)
	if o.source != "" {
		source = o.source
	}
	if o.hookSecret != "" {
		source += fmt.Sprintf(", webhook: {secret: %q}", o.hookSecret)
	}
	text := fmt.Sprintf(`dataDir: %q
database: {url: %q}
server: {listen: %q}
log: {level: info}
auth: {anonymous: admin, tokens: [{name: ci-bot, sha256: %s, role: operator}]}
actions: %s
reconcile: {workers: %d, resyncInterval: 0s, leaseTTL: %s, backoff: {initial: %s, max: %s}}
sources:
  - {%s, prune: %s}
%s`, filepath.Join(e.dir, "data-"+name), e.dbURL, listen, operatorSHA256, actionsJSON, cmp.Or(o.workers, 4), cmp.Or(o.leaseTTL, 5*time.Second),
		cmp.Or(o.backoff[0], 200*time.Millisecond), cmp.Or(o.backoff[1], 2*time.Second), source, pruneJSON, o.references)
	cfg, err := config.Parse([]byte(text), e.dir, func(string) string { return "" })
	if err != nil {
		e.t.Fatalf("config: %v\n%s", err, text)
	}
	return cfg
}

// operatorToken is the bearer token of the operator ci-bot in every replica's config (callers
// without credentials are admins, as without an auth block).
const (
	operatorToken  = "ci-bot-token-8f2e"
	operatorSHA256 = "ebaaf107098e6819b2d8c52c058a901dac0a58904d86b163b6b41ca41bf768c8"
)

// start runs replica name, a daemon of o's config (o.action as the action kind "test"), until
// the test ends or it is stopped. The first replica started serves e.api.
func (e *env) start(name string, o options) *daemon.Daemon {
	e.t.Helper()
	reg, err := daemon.Registry()
	if err != nil {
		e.t.Fatal(err)
	}
	instances := map[string]actions.Action{}
	maps.Copy(instances, o.more)
	if o.action != nil {
		instances[""] = o.action
	}
	for name, act := range instances {
		_ = reg.Register(strings.TrimSuffix("test-"+name, "-"), func(json.RawMessage, actions.Env) (actions.Action, error) { return act, nil })
	}
	cfg := e.config(name, o)
	var stderr io.Writer = testWriter{e.t}
	if o.stderr != nil {
		stderr = io.MultiWriter(stderr, o.stderr)
	}
	d, err := daemon.New(cfg, daemon.Deps{Stderr: stderr, Registry: reg, Version: "test", Replica: name})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		e.t.Fatalf("start %s: %v", name, err)
	}
	e.t.Cleanup(d.Stop)
	if e.replicas = append(e.replicas, d); len(e.replicas) == 1 {
		e.api = "http://" + cfg.Server.Listen
	}
	return d
}

// handSyncer is a syncer of the source as replica "test", for the tests whose first sync
// must run while no replica reconciles: a daemon always runs its reconciler.
func (e *env) handSyncer() *syncer.Syncer {
	src, err := gitsource.New(gitsource.Config{Name: "infra", URL: "file://" + e.repo, Branch: "main", Path: "manifests",
		Dir: filepath.Join(e.dir, "mirror")}, e.log)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = src.Close() })
	if err := e.store.RegisterSource(context.Background(), store.SourceConfig{Name: "infra", URL: e.repo, Branch: "main", Path: "manifests"}); err != nil {
		e.t.Fatal(err)
	}
	return syncer.New(e.store, syncer.Options{Name: "infra", Source: src, Interval: time.Hour, Prune: true, Replica: "test",
		CheckAction: func(name string, _ json.RawMessage) error {
			if name != "provision" {
				return fmt.Errorf("action %q is not configured", name)
			}
			return nil
		}}, e.log)
}

// syncOnce syncs the source now on the first replica, which holds its lease, as a poll does.
// With no replica running it starts r1 of the test's options: its start takes the lease and
// syncs, which must apply the repository's head (as the first sync of a test must).
func (e *env) syncOnce(ctx context.Context) (syncer.Outcome, error) {
	e.t.Helper()
	if len(e.replicas) == 0 {
		d := e.start("r1", e.o)
		e.eventually(30*time.Second, "r1's first sync", func() (bool, string) {
			rt, ok := d.Syncer("infra").Runtime()
			return ok && rt.Completed != nil, fmt.Sprintf("holds the source: %v", ok)
		})
		if src, err := e.store.GetSource(ctx, "infra"); err != nil || len(src.Errors) > 0 {
			e.t.Fatalf("r1's first sync: %v %+v", err, src.Errors)
		}
	}
	return e.replicas[0].Syncer("infra").SyncOnce(ctx)
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
	resp, err := http.Get(e.api + path)
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
