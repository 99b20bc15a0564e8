package daemon

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/config"
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

// A source between two copies (restarting, or failed to start) is retried by a terraform
// module read, not refused as unknown (which stalls the resource).
func TestLateTreesRestarting(t *testing.T) {
	t.Parallel()
	var l sourceTrees
	l.set(map[string]sources.Source{"restarting": nil})
	_, err := l.read(context.Background(), "restarting", "abc", "m")
	if err == nil || actions.IsTerminal(err) {
		t.Errorf("restarting source: %v, want a retried error", err)
	}
	if _, err := l.read(context.Background(), "gone", "abc", "m"); !actions.IsTerminal(err) {
		t.Errorf("unknown source: %v, want terminal", err)
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
