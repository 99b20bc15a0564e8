package daemon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/actions/proc"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/logbuf"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

// daemonEnv is one database and the folders of a daemon's sources.
type daemonEnv struct {
	t      *testing.T
	dir    string
	dbURL  string
	listen string
	st     *store.Store
}

func newDaemonEnv(t *testing.T) *daemonEnv {
	t.Helper()
	ctx := context.Background()
	url := pgtest.NewDatabase(t, store.MigrateURL)
	st, err := store.Open(ctx, url, store.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()
	return &daemonEnv{t: t, dir: t.TempDir(), dbURL: url, listen: listen, st: st}
}

// folder writes a source folder holding one ResourceType (named after the folder's first
// letter, the source's name) described as desc.
func (e *daemonEnv) folder(name, desc string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	doc := "apiVersion: trueup.dev/v1\nkind: ResourceType\nmetadata:\n  name: Thing" + strings.ToUpper(name[:1]) + "\nspec:\n  group: example.com\n" +
		"  description: " + desc + "\n  versions:\n    - name: v1\n      schema:\n        type: object\n  action:\n    name: act\n"
	if err := os.MkdirAll(p, 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "t.yaml"), []byte(doc), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// config is a controller config with one dir source per name → folder.
func (e *daemonEnv) config(srcs map[string]string) *config.Config {
	e.t.Helper()
	return e.configActions("", srcs)
}

// configActions is config with the actions list's items actions (YAML lines) after act's.
func (e *daemonEnv) configActions(actions string, srcs map[string]string) *config.Config {
	e.t.Helper()
	return e.parse(e.configText(actions, srcs))
}

// parse parses a config's text.
func (e *daemonEnv) parse(text string) *config.Config {
	e.t.Helper()
	cfg, err := config.Parse([]byte(text), e.dir, func(string) string { return "" })
	if err != nil {
		e.t.Fatal(err)
	}
	return cfg
}

// configText is the text of configActions.
func (e *daemonEnv) configText(actions string, srcs map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "dataDir: %s\ndatabase: {url: %q}\nserver: {listen: %q}\nactions:\n  - {name: act, type: noop}\n%s"+
		"reconcile: {workers: 2, leaseTTL: 5s}\nlog: {level: debug}\nsources:\n", filepath.Join(e.dir, "data"), e.dbURL, e.listen, actions)
	for _, name := range slices.Sorted(maps.Keys(srcs)) {
		fmt.Fprintf(&b, "  - name: %s\n    dir: {path: %s, interval: 1h}\n", name, srcs[name])
	}
	return b.String()
}

// revision is the revision source name applied ("": none yet).
func (e *daemonEnv) revision(ctx context.Context, name string) string {
	src, err := e.st.GetSource(ctx, name)
	if err != nil {
		return ""
	}
	return src.Revision
}

// free reports whether another replica can take lease name now (its holder released it).
func (e *daemonEnv) free(ctx context.Context, name string) bool {
	l, ok, err := e.st.AcquireLease(ctx, name, "other-replica", time.Minute)
	if err != nil || !ok {
		return false
	}
	_ = e.st.ReleaseLease(ctx, l)
	return true
}

func names(d *Daemon) []string { return slices.Sorted(maps.Keys(d.sources())) }

// TestDaemonLifecycle: a daemon starts its sources; a reload adds, changes and removes
// sources (a removed source's syncer stops and gives its lease up); a config with a source
// that fails to build is refused whole and the running sources keep running; Stop stops
// everything and releases every lease.
func TestDaemonLifecycle(t *testing.T) {
	e := newDaemonEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var logs logbuf.Buffer
	cfg1 := e.config(map[string]string{"a": e.folder("a1", "first"), "b": e.folder("b", "b")})
	d, err := New(cfg1, Deps{Stderr: &logs, Version: "test", Replica: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx); err != nil {
		t.Fatalf("start: %v\n%s", err, logs.String())
	}
	stopped := false
	defer func() {
		if !stopped {
			d.Stop()
		}
	}()
	waitFor(t, "a and b synced", func() bool { return e.revision(ctx, "a") != "" && e.revision(ctx, "b") != "" })
	if got := names(d); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("running %v", got)
	}
	revA, oldA, oldB := e.revision(ctx, "a"), d.sources()["a"], d.sources()["b"]

	// Reload: a changed, b removed, c added.
	cfg2 := e.config(map[string]string{"a": e.folder("a2", "second"), "c": e.folder("c", "c")})
	res := d.Reload(cfg2)
	if !res.OK || !slices.Equal(res.SourcesAdded, []string{"c"}) || !slices.Equal(res.SourcesRemoved, []string{"b"}) ||
		!slices.Equal(res.SourcesChanged, []string{"a"}) {
		t.Fatalf("reload: %+v\n%s", res, logs.String())
	}
	if got := names(d); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("running after the reload %v", got)
	}
	if d.sources()["a"] == oldA {
		t.Error("the changed source a still runs its previous copy")
	}
	for name, rs := range map[string]*runningSource{"a (previous copy)": oldA, "b (removed)": oldB} {
		select {
		case <-rs.done:
		default:
			t.Errorf("%s: its syncer still runs", name)
		}
	}
	waitFor(t, "c synced and a at its new folder's revision", func() bool {
		r := e.revision(ctx, "a")
		return e.revision(ctx, "c") != "" && r != "" && r != revA
	})
	waitFor(t, "b's lease released", func() bool { return e.free(ctx, "source:b") })

	// A source that fails to build refuses the whole config: the running ones stay.
	running := maps.Clone(d.sources())
	runningCfg := d.cfg.Load()
	cfg3 := e.config(map[string]string{"a": e.folder("a3", "third"), "c": e.folder("c", "c"), "bad": filepath.Join(e.dir, "missing")})
	res = d.Reload(cfg3)
	if res.OK || res.Partial || !strings.Contains(strings.Join(res.Errors, "\n"), "bad") {
		t.Fatalf("reload of a config with a bad source: %+v", res)
	}
	if !maps.Equal(d.sources(), running) {
		t.Errorf("running after a refused reload %v, want %v", names(d), slices.Sorted(maps.Keys(running)))
	}
	if d.cfg.Load() != runningCfg {
		t.Error("a refused config became the running one")
	}
	if last, ok := d.lastReload(); !ok || last.OK {
		t.Errorf("last reload %+v", last)
	}

	// Stop: every syncer returned, every lease released at once (no TTL to wait out); the
	// sources stop before the database closes (a preview runner finishing its publication
	// still writes its row).
	var steps []string
	d.test.stopped = func(step string) { steps = append(steps, step) }
	d.Stop()
	stopped = true
	if want := []string{"loops", "syncers", "sender", "server", "liveness", "sources", "database", "actions", "tracing", "memory limit"}; !slices.Equal(steps, want) {
		t.Errorf("Stop ran %v, want %v", steps, want)
	}
	for name, rs := range d.sources() {
		select {
		case <-rs.done:
		default:
			t.Errorf("source %s: its syncer still runs after Stop", name)
		}
	}
	for _, lease := range []string{"source:a", "source:c", "maintenance"} {
		if !e.free(ctx, lease) {
			t.Errorf("lease %s still held after Stop", lease)
		}
	}
	if res := d.Reload(cfg2); res.OK || !strings.Contains(strings.Join(res.Errors, " "), "shutting down") {
		t.Errorf("reload after Stop: %+v", res)
	}
}

// TestDaemonStartFails: a config whose source fails to build does not start.
func TestDaemonStartFails(t *testing.T) {
	e := newDaemonEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var logs logbuf.Buffer
	cfg := e.config(map[string]string{"a": e.folder("a", "a"), "bad": filepath.Join(e.dir, "missing")})
	d, err := New(cfg, Deps{Stderr: &logs, Version: "test", Replica: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx); err == nil || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("start: %v", err)
	}
	d.Stop() // a second Stop is a no-op
	if !e.free(ctx, "source:a") {
		t.Error("source a's lease held after a failed start")
	}
}

// TestDaemonStartRefusesBeforeTheDatabase: a config whose action instance, source or commit
// status cannot be built fails the start before the database opens: no private cluster is
// started for it.
func TestDaemonStartRefusesBeforeTheDatabase(t *testing.T) {
	for _, c := range []struct{ name, yaml, want string }{
		{"action", "actions:\n  - name: gh\n    type: github-actions\n" +
			"    config: {token: t0k3n, owner: \"bad owner\", repo: infra, workflow: deploy.yml}\n", "owner"},
		{"source", "sources: [{name: g, git: {url: \"gopher://example.com/x\"}}]\n", "source g: "},
		{"commit status", "sources:\n  - name: d\n    dir: {path: .}\n    commitStatus: {provider: github, token: t0k3n, repo: norepo}\n",
			"source d: commitStatus: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg, err := config.Parse([]byte("dataDir: "+filepath.Join(dir, "data")+"\n"+c.yaml), dir, func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			var logs logbuf.Buffer
			d, err := New(cfg, Deps{Stderr: &logs, Version: "test", Replica: "r1"})
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Start(context.Background()); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("start: %v, want %q", err, c.want)
			}
			d.Stop()
			if _, err := os.Stat(filepath.Join(dir, "data", "postgres")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the private cluster's folder: %v, want none", err)
			}
			if strings.Contains(logs.String(), "starting private PostgreSQL") {
				t.Errorf("a private cluster was started:\n%s", logs.String())
			}
		})
	}
}

// TestDaemonContainmentWarnedOnce: the warning that commands' processes may outlive a
// killed trueup is logged once, at the start, not again by a reload that rebuilds the action
// instances.
func TestDaemonContainmentWarnedOnce(t *testing.T) {
	e := newDaemonEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exec := func(cmd string) string { return "  - {name: run, type: exec, config: {command: [" + cmd + "]}}\n" }
	srcs := map[string]string{"a": e.folder("a", "a")}
	var logs logbuf.Buffer
	d, err := New(e.configActions(exec(`"true"`), srcs), Deps{Stderr: &logs, Version: "test", Replica: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	d.test.mode = func() (string, error) { return proc.TreeProcessGroup, errors.New("no PID namespaces here") }
	if err := d.Start(ctx); err != nil {
		t.Fatalf("start: %v\n%s", err, logs.String())
	}
	defer d.Stop()
	if res := d.Reload(e.configActions(exec(`"false"`), srcs)); !res.OK {
		t.Fatalf("reload: %+v\n%s", res, logs.String())
	}
	if n := strings.Count(logs.String(), "may outlive trueup"); n != 1 {
		t.Errorf("the containment warning logged %d times, want once:\n%s", n, logs.String())
	}
}

// TestDaemonStartFailsLate: a start that fails once everything runs (listener, liveness,
// sender, syncers, loops) stops all of it again: the listener is free, the liveness session
// and the leases are released (another replica takes them), no goroutine is left.
func TestDaemonStartFailsLate(t *testing.T) {
	e := newDaemonEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before := runtime.NumGoroutine()
	var logs logbuf.Buffer
	d, err := New(e.config(map[string]string{"a": e.folder("a", "a")}), Deps{Stderr: &logs, Version: "test", Replica: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	d.test.started = func() error {
		// Every lease this replica takes is held before the start fails.
		waitFor(t, "r1 holds the leases", func() bool { return !e.free(ctx, "maintenance") && !e.free(ctx, "source:a") })
		return errors.New("injected failure")
	}
	if err := d.Start(ctx); err == nil || !strings.Contains(err.Error(), "injected failure") {
		t.Fatalf("start: %v\n%s", err, logs.String())
	}
	for _, lease := range []string{"source:a", "maintenance"} {
		if !e.free(ctx, lease) {
			t.Errorf("lease %s held after a failed start", lease)
		}
	}
	conn, err := pgx.Connect(ctx, e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var locks int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&locks); err != nil {
		t.Fatal(err)
	}
	if locks != 0 {
		t.Errorf("%d advisory locks (the liveness session) held after a failed start", locks)
	}
	ln, err := net.Listen("tcp", e.listen)
	if err != nil {
		t.Errorf("the listener was not closed: %v", err)
	} else {
		ln.Close()
	}
	// A few goroutines of the runtime and the test's own connections may come and go.
	waitFor(t, "the daemon's goroutines returned", func() bool { return runtime.NumGoroutine() <= before+3 })
}

// TestDaemonReloadSourceFailsToStart: a changed source whose new copy fails to start runs its
// previous config again (its syncer syncs the previous folder); the reload is partial.
func TestDaemonReloadSourceFailsToStart(t *testing.T) {
	e := newDaemonEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var logs logbuf.Buffer
	a1 := e.folder("a1", "first")
	d, err := New(e.config(map[string]string{"a": a1}), Deps{Stderr: &logs, Version: "test", Replica: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx); err != nil {
		t.Fatalf("start: %v\n%s", err, logs.String())
	}
	defer d.Stop()
	waitFor(t, "a synced", func() bool { return e.revision(ctx, "a") != "" })
	revA, oldA := e.revision(ctx, "a"), d.sources()["a"]

	failed := false
	d.test.startSource = func(name string) error { // the reload's copy fails, the rebuilt one starts
		if name == "a" && !failed {
			failed = true
			return errors.New("injected failure")
		}
		return nil
	}
	res := d.Reload(e.config(map[string]string{"a": e.folder("a2", "second")}))
	if res.OK || !res.Partial || !strings.Contains(strings.Join(res.Errors, "\n"), "its previous config runs again") {
		t.Fatalf("reload: %+v\n%s", res, logs.String())
	}
	back := d.sources()["a"]
	if back == nil || back == oldA || back.cfg.Dir == nil || back.cfg.Dir.Path != a1 {
		t.Fatalf("running after the reload: %+v", back)
	}
	// The previous folder changes: the copy running again syncs it.
	if err := os.WriteFile(filepath.Join(a1, "u.yaml"), []byte("apiVersion: trueup.dev/v1\nkind: ResourceType\nmetadata:\n  name: Other\n"+
		"spec:\n  group: example.com\n  versions:\n    - name: v1\n      schema:\n        type: object\n  action:\n    name: act\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a synced its previous folder's change", func() bool { r := e.revision(ctx, "a"); return r != "" && r != revA })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDaemonLifecycleGuards: a Reload before Start is refused, a daemon starts once, a
// Reload and a Stop that come while Start runs wait for it (the reload is applied by the
// started daemon, the Stop then undoes everything), and a Reload after Stop is refused.
func TestDaemonLifecycleGuards(t *testing.T) {
	e := newDaemonEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var logs logbuf.Buffer
	cfg := e.config(map[string]string{"a": e.folder("a", "a")})
	d, err := New(cfg, Deps{Stderr: &logs, Version: "test", Replica: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if res := d.Reload(cfg); res.OK || !strings.Contains(strings.Join(res.Errors, " "), "not started") {
		t.Fatalf("reload before Start: %+v", res)
	}
	// A reload and a stop asked for while Start runs: the hook holds Start at its end until
	// both have been asked.
	asked := make(chan struct{})
	reloaded := make(chan ReloadResult, 1)
	stopped := make(chan struct{})
	d.test.started = func() error {
		go func() {
			reloaded <- d.Reload(e.config(map[string]string{"a": e.folder("a", "a"), "c": e.folder("c", "c")}))
		}()
		go func() { <-asked; d.Stop(); close(stopped) }()
		close(asked)
		return nil
	}
	if err := d.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	if err := d.Start(ctx); err == nil || !strings.Contains(err.Error(), "starts once") {
		t.Errorf("second Start: %v", err)
	}
	select {
	case <-stopped:
	case <-ctx.Done():
		t.Fatal("Stop asked during Start never returned")
	}
	res := <-reloaded
	if !res.OK && !strings.Contains(strings.Join(res.Errors, " "), "shutting down") {
		t.Errorf("reload asked during Start: %+v", res)
	}
	if !e.free(ctx, "source:a") {
		t.Error("source a's lease held after the Stop asked during Start")
	}
	if res := d.Reload(cfg); res.OK || !strings.Contains(strings.Join(res.Errors, " "), "shutting down") {
		t.Errorf("reload after Stop: %+v", res)
	}
}
