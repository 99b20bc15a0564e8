package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/redact"
	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/internal/server"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
)

// fakeSource is a sources.Source that counts its Close calls.
type fakeSource struct{ closed int }

func (f *fakeSource) Head(context.Context) (string, error)                     { return "", nil }
func (f *fakeSource) Fetch(context.Context, string) (*sources.Snapshot, error) { return nil, nil }
func (f *fakeSource) Close() error                                             { f.closed++; return nil }

// TestSwapIn: a changed source whose new copy fails to start runs its previous copy again;
// an added one that fails is not running; both say so.
func TestSwapIn(t *testing.T) {
	t.Parallel()
	boom, again := errors.New("source a: boom"), errors.New("source a: again")
	cases := []struct {
		name       string
		startErr   error
		changed    bool  // a previous copy exists
		rebuildErr error // of the previous copy
		want       string
		wantErr    string
	}{
		{name: "added, starts", want: "next"},
		{name: "changed, starts", changed: true, want: "next"},
		{name: "added, fails", startErr: boom, wantErr: "source a: boom (not running on this replica until the next reload or restart)"},
		{name: "changed, fails, previous runs again", startErr: boom, changed: true, want: "previous",
			wantErr: "source a: boom (its previous config runs again)"},
		{name: "changed, fails, previous fails too", startErr: boom, changed: true, rebuildErr: again,
			wantErr: "source a: boom; its previous config failed to start again too (not running on this replica until the next reload or restart): source a: again"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			nextSrc, prevSrc := &fakeSource{}, &fakeSource{}
			next := &runningSource{cfg: config.Source{Name: "a"}, src: nextSrc}
			prev := &runningSource{cfg: config.Source{Name: "a"}, src: prevSrc}
			var rebuild func() (*runningSource, error)
			if tc.changed {
				rebuild = func() (*runningSource, error) { return prev, tc.rebuildErr }
			}
			run, err := swapIn(next, func(*runningSource) error { return tc.startErr }, rebuild)
			got := ""
			switch run {
			case next:
				got = "next"
			case prev:
				got = "previous"
			}
			if got != tc.want {
				t.Errorf("running %q, want %q", got, tc.want)
			}
			if msg := ""; err != nil || tc.wantErr != "" {
				if err != nil {
					msg = err.Error()
				}
				if msg != tc.wantErr {
					t.Errorf("error %q, want %q", msg, tc.wantErr)
				}
			}
			if wantClosed := tc.startErr != nil; (nextSrc.closed > 0) != wantClosed {
				t.Errorf("the new copy closed %d times", nextSrc.closed)
			}
			if wantClosed := tc.rebuildErr != nil; (prevSrc.closed > 0) != wantClosed {
				t.Errorf("the previous copy closed %d times", prevSrc.closed)
			}
		})
	}
}

// TestReplicaConfigs: what a reload's result writes to the replica's config status.
func TestReplicaConfigs(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC)
	running := store.ReplicaConfig{Hash: "abc", LoadedAt: at}
	cases := []struct {
		name string
		res  server.ReloadResult
		want []store.ReplicaConfig
	}{
		{name: "applied", res: server.ReloadResult{OK: true}, want: []store.ReplicaConfig{running}},
		{name: "refused: the hash running stays", res: server.ReloadResult{Errors: []string{"e1", "e2"}},
			want: []store.ReplicaConfig{{Error: "e1\ne2", ErrorAt: at}}},
		{name: "applied in part", res: server.ReloadResult{Partial: true, Errors: []string{"source a: boom (its previous config runs again)"}},
			want: []store.ReplicaConfig{running, {Error: "source a: boom (its previous config runs again)", ErrorAt: at}}},
		{name: "applied, restart required", res: server.ReloadResult{OK: true, RestartRequired: []string{"log", "server"}},
			want: []store.ReplicaConfig{running, {Error: restartLine([]string{"log", "server"}), ErrorAt: at}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.res.At = at
			if got := replicaConfigs("abc", tc.res); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if l := restartLine([]string{"auth"}); !strings.HasPrefix(l, "restart required: auth") {
		t.Errorf("restartLine = %q", l)
	}
}

// TestRefuseRestartOnly: a reload that changes auth is refused whole (a revoked token must not
// look revoked); other restart-only blocks are kept running and reported.
func TestRefuseRestartOnly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pending []string
		refused bool
	}{
		{nil, false},
		{[]string{"log", "server"}, false},
		{[]string{"auth"}, true},
		{[]string{"dataDir", "auth", "secrets"}, true},
	} {
		if err := refuseRestartOnly(tc.pending); (err != nil) != tc.refused {
			t.Errorf("%v: %v, refused %v", tc.pending, err, tc.refused)
		}
	}
}

// TestRevealKeys: Reveal decrypts a source's resources with the keys of its running copy (the
// one whose syncer opened them), or, with none running, with those it had.
func TestRevealKeys(t *testing.T) {
	t.Parallel()
	oldK, newK := &sealed.Keys{}, &sealed.Keys{}
	had := map[string]*sealed.Keys{"kept": oldK, "rotated": oldK, "failed": oldK, "removed": oldK}
	running := map[string]*runningSource{
		"kept":    {keys: oldK},
		"rotated": {keys: newK},
		"added":   {keys: newK},
		"plain":   {},
	}
	got := revealKeys([]string{"kept", "rotated", "failed", "added", "plain"}, running, had)
	want := map[string]*sealed.Keys{"kept": oldK, "rotated": newK, "failed": oldK, "added": newK}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for name, k := range want {
		if got[name] != k {
			t.Errorf("%s: got %p, want %p", name, got[name], k)
		}
	}
}

// sourceReader is an action instance that reads the sources it names.
type sourceReader struct {
	actions.Action
	srcs []string
}

func (r sourceReader) SourcesRead() []string { return r.srcs }

// TestModuleWarnings: an action instance that reads a source the config no longer has is
// named.
func TestModuleWarnings(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte(`
sources:
  - {name: infra, dir: {path: ./infra}}
actions:
  - {name: kept, type: terraform}
  - {name: orphan, type: terraform}
  - {name: local, type: terraform}
  - {name: nop, type: noop}
`), t.TempDir(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	got := moduleWarnings(cfg, map[string]actions.Action{"kept": sourceReader{srcs: []string{"infra"}},
		"orphan": sourceReader{srcs: []string{"gone"}}, "local": sourceReader{}, "nop": nil})
	if len(got) != 1 || !strings.HasPrefix(got[0], "action orphan reads its module from source gone") {
		t.Errorf("moduleWarnings = %q", got)
	}
}

// TestRequestWaitsOnItsContext: an API request stops waiting when its context ends, whether
// the loop has not picked it up or has not answered yet.
func TestRequestWaitsOnItsContext(t *testing.T) {
	t.Parallel()
	rt := &Daemon{ctx: context.Background(), requests: make(chan reloadRequest)}
	rt.started.Store(&rt.ctx)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if res := rt.request(ctx); res.OK || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "did not start") {
		t.Errorf("not picked up: %+v", res)
	}
	taken := make(chan reloadRequest, 1)
	go func() { taken <- <-rt.requests }() // picked up, never answered
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if res := rt.request(ctx); res.OK || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "the reload goes on") {
		t.Errorf("not answered: %+v", res)
	}
	(<-taken).reply <- server.ReloadResult{OK: true} // the late answer does not block the loop
}

// TestLoopStopsAtShutdown: a SIGHUP or an API request pending when the daemon's context ends
// is not served (select may pick either): no reload runs while it stops.
func TestLoopStopsAtShutdown(t *testing.T) {
	t.Parallel()
	for range 50 {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		hup := make(chan os.Signal, 1)
		hup <- syscall.SIGHUP
		rt := &Daemon{ctx: ctx, requests: make(chan reloadRequest, 1), deps: Deps{Reloads: hup}} // a reload would panic: no log, no store
		reply := make(chan server.ReloadResult, 1)
		rt.requests <- reloadRequest{reply: reply}
		rt.loop(ctx)
		select {
		case res := <-reply:
			if res.OK || !strings.Contains(strings.Join(res.Errors, " "), "shutting down") {
				t.Fatalf("answer at shutdown: %+v", res)
			}
		default:
		}
	}
}

// setUnderTest is a source set on e's database, running cfg.
type setUnderTest struct {
	*sourceSet
	cfg  *config.Config
	stop func() // as the daemon's Stop: the set's context ends, the syncers return, the sources stop
}

// startSet builds and starts cfg's sources as a set whose syncers run; startHook (nil: none)
// runs before each copy starts. The set stops at the end of the test.
func startSet(t *testing.T, e *daemonEnv, cfg *config.Config, startHook func(name string) error) *setUnderTest {
	t.Helper()
	reg, err := Registry()
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	acts, err := NewActions(cfg, reg, logger, e.dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	set := actions.NewSet(acts)
	t.Cleanup(set.Close)
	ctx, cancel := context.WithCancel(context.Background())
	kinds, err := SourceRegistry()
	if err != nil {
		t.Fatal(err)
	}
	s := newSourceSet(ctx, sourceEnv{store: e.st, kinds: kinds, log: logger, replica: "r1", acts: set, redact: redact.New(),
		checkAction: func(name string, with json.RawMessage) error { return CheckAction(set.Current())(name, with) }, startHook: startHook})
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); s.Wait(); s.Stop() }) }
	t.Cleanup(stop)
	p, err := s.Build(cfg, nil, acts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(p); err != nil {
		t.Fatal(err)
	}
	s.Run()
	return &setUnderTest{sourceSet: s, cfg: cfg, stop: stop}
}

// swap builds cfg's sources and swaps them in; it returns what failed to start.
func (s *setUnderTest) swap(t *testing.T, cfg *config.Config) []string {
	t.Helper()
	p, err := s.Build(cfg, nil, s.env.acts.Current())
	if err != nil {
		t.Fatal(err)
	}
	replaced := false
	failed := s.Swap(s.cfg, p, config.Diff(s.cfg, cfg), func() { replaced = true })
	if !replaced {
		t.Error("Swap did not replace the action instances")
	}
	s.cfg = cfg
	return failed
}

func (s *setUnderTest) names() []string { return slices.Sorted(maps.Keys(s.All())) }

// stopped reports whether rs's syncer has returned.
func stopped(rs *runningSource) bool {
	select {
	case <-rs.done:
		return true
	default:
		return false
	}
}

// TestSourceSet: a set starts its sources; a swap keeps the unchanged one, stops the removed
// one (its lease freed at once), replaces the changed one (its new copy syncs its new folder)
// and starts the added one; Stop stops all of them and frees their leases.
func TestSourceSet(t *testing.T) {
	e := newDaemonEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	keep := e.folder("k", "kept")
	s := startSet(t, e, e.config(map[string]string{"a": e.folder("a1", "first"), "b": e.folder("b", "b"), "k": keep}), nil)
	waitFor(t, "a, b and k synced", func() bool {
		return e.revision(ctx, "a") != "" && e.revision(ctx, "b") != "" && e.revision(ctx, "k") != ""
	})
	if got := s.names(); !slices.Equal(got, []string{"a", "b", "k"}) {
		t.Fatalf("running %v", got)
	}
	revA, before := e.revision(ctx, "a"), s.All()

	if failed := s.swap(t, e.config(map[string]string{"a": e.folder("a2", "second"), "c": e.folder("c", "c"), "k": keep})); len(failed) > 0 {
		t.Fatalf("swap: %v", failed)
	}
	after := s.All()
	if got := s.names(); !slices.Equal(got, []string{"a", "c", "k"}) {
		t.Fatalf("running after the swap %v", got)
	}
	if after["k"] != before["k"] || stopped(after["k"]) {
		t.Error("the unchanged source k did not keep running its copy")
	}
	if after["a"] == before["a"] || !stopped(before["a"]) || !stopped(before["b"]) {
		t.Error("the changed source a's previous copy or the removed b still runs")
	}
	waitFor(t, "c synced, a at its new folder's revision, b's lease free", func() bool {
		r := e.revision(ctx, "a")
		return e.revision(ctx, "c") != "" && r != "" && r != revA && e.free(ctx, "source:b")
	})

	running := s.All()
	s.stop()
	for name, rs := range running {
		if !stopped(rs) {
			t.Errorf("source %s: its syncer runs after Stop", name)
		}
		if !e.free(ctx, "source:"+name) {
			t.Errorf("source %s: its lease is held after Stop", name)
		}
	}
}

// TestSourceSetRollback: a swap whose copies fail to start. A changed source whose new copy
// fails runs its previous copy again (which syncs its previous folder); one whose previous
// copy fails again too, and an added one, are not running, and ReadTree retries them (they
// are configured, between two copies) instead of refusing them as unknown.
func TestSourceSetRollback(t *testing.T) {
	e := newDaemonEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	starts := map[string]int{}
	hook := func(name string) error {
		mu.Lock()
		defer mu.Unlock()
		starts[name]++
		switch n := starts[name]; {
		case name == "a" && n == 2, // the new copy fails, the previous one starts again
			name == "b" && n > 1, // every copy after the first fails
			name == "c":          // added, fails
			return errInjected
		}
		return nil
	}
	a1 := e.folder("a1", "first")
	s := startSet(t, e, e.config(map[string]string{"a": a1, "b": e.folder("b1", "first")}), hook)
	waitFor(t, "a and b synced", func() bool { return e.revision(ctx, "a") != "" && e.revision(ctx, "b") != "" })
	revA, oldA := e.revision(ctx, "a"), s.All()["a"]

	failed := s.swap(t, e.config(map[string]string{"a": e.folder("a2", "second"), "b": e.folder("b2", "second"), "c": e.folder("c", "c")}))
	want := []string{
		"source a: injected failure (its previous config runs again)",
		"source b: injected failure; its previous config failed to start again too (not running on this replica until the next reload or restart): source b: injected failure",
		"source c: injected failure (not running on this replica until the next reload or restart)",
	}
	if !slices.Equal(failed, want) {
		t.Errorf("failed\n%q\nwant\n%q", failed, want)
	}
	if got := s.names(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("running %v, want a alone", got)
	}
	back := s.All()["a"]
	if back == oldA || back.cfg.Dir.Path != a1 || stopped(back) {
		t.Fatalf("a runs %+v, want a new copy of its previous config", back.cfg)
	}
	for _, name := range []string{"b", "c"} {
		if _, err := s.ReadTree(ctx, name, "abc", "m"); err == nil || actions.IsTerminal(err) {
			t.Errorf("ReadTree of %s, configured and not running: %v, want a retried error", name, err)
		}
	}
	if _, err := s.ReadTree(ctx, "gone", "abc", "m"); !actions.IsTerminal(err) {
		t.Errorf("ReadTree of an unknown source: %v, want terminal", err)
	}
	writeType(t, a1, "u.yaml", "Other")
	waitFor(t, "a synced its previous folder's change", func() bool { r := e.revision(ctx, "a"); return r != "" && r != revA })
}

// TestSourceSetConcurrentReaders: readers of the set (the running sources, their syncers,
// ReadTree) during swaps see whole published sets: never a nil entry, never a configured
// source refused as unknown. Each swap changes a and waits, while a is between its two
// copies, for the readers to read: every swap is read through. Run with -race.
func TestSourceSetConcurrentReaders(t *testing.T) {
	e := newDaemonEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a1, a2, b := e.folder("a1", "first"), e.folder("a2", "second"), e.folder("b", "b")
	var reads atomic.Int64
	var swapping atomic.Bool
	s := startSet(t, e, e.config(map[string]string{"a": a1}), func(name string) error {
		if swapping.Load() && name == "a" {
			from := reads.Load()
			waitFor(t, "a read between its two copies", func() bool { return reads.Load() > from })
		}
		return nil
	})
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for name, rs := range s.All() {
					if rs == nil || rs.syncer == nil || rs.cfg.Name != name {
						t.Errorf("published entry %s: %+v", name, rs)
						return
					}
				}
				// a is in every config: between two copies it is retried, never unknown.
				if _, err := s.ReadTree(ctx, "a", "abc", "m"); err == nil ||
					(actions.IsTerminal(err) && !strings.Contains(err.Error(), "a Git or an OCI source has")) {
					t.Errorf("ReadTree of a: %v", err)
					return
				}
				reads.Add(1)
			}
		})
	}
	waitFor(t, "the readers read", func() bool { return reads.Load() > 0 })
	before := reads.Load()
	swapping.Store(true)
	for i := range 6 {
		srcs := map[string]string{"a": a1}
		if i%2 == 0 {
			srcs = map[string]string{"a": a2, "b": b}
		}
		if failed := s.swap(t, e.config(srcs)); len(failed) > 0 {
			t.Errorf("swap %d: %v", i, failed)
		}
	}
	if during := reads.Load() - before; during <= 0 {
		t.Errorf("%d reads during the swaps", during)
	}
	close(stop)
	readers.Wait()
}

var errInjected = errors.New("injected failure")

// writeType writes a ResourceType named name into folder dir as file.
func writeType(t *testing.T, dir, file, name string) {
	t.Helper()
	doc := "apiVersion: trueup.dev/v1\nkind: ResourceType\nmetadata:\n  name: " + name + "\n" +
		"spec:\n  group: example.com\n  versions:\n    - name: v1\n      schema:\n        type: object\n  action:\n    name: act\n"
	if err := os.WriteFile(filepath.Join(dir, file), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}
