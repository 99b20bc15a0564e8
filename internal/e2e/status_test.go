package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/noop"
	"github.com/trueup-dev/trueup/internal/liveness"
	"github.com/trueup-dev/trueup/internal/logbuf"
	"github.com/trueup-dev/trueup/internal/reconciler"
	"github.com/trueup-dev/trueup/internal/server"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// gateAction blocks every Reconcile until its gate closes (or, with ignoreCancel, until the
// gate closes even after its context ended: a slow plugin that finishes its work anyway),
// then reports Done with outputs naming who ran it.
type gateAction struct {
	who          string
	gate         chan struct{}
	ignoreCancel bool
	started      chan string // receives the resource name when a call starts (buffered)
	running      atomic.Int32
	maxRunning   atomic.Int32
	cancelled    atomic.Int32
}

func (a *gateAction) Reconcile(ctx context.Context, req actions.Request) (actions.Result, error) {
	n := a.running.Add(1)
	defer a.running.Add(-1)
	for {
		m := a.maxRunning.Load()
		if n <= m || a.maxRunning.CompareAndSwap(m, n) {
			break
		}
	}
	select {
	case a.started <- req.Resource.Name:
	default:
	}
	select {
	case <-a.gate:
	case <-ctx.Done():
		a.cancelled.Add(1)
		if !a.ignoreCancel {
			return actions.Result{}, ctx.Err()
		}
		<-a.gate
	}
	return actions.Result{Done: true, Outputs: map[string]any{"by": a.who}}, nil
}

func (a *gateAction) Delete(context.Context, actions.Request) (actions.Result, error) {
	return actions.Result{Done: true}, nil
}

func condition(r wire.Resource, typ string) status.Condition {
	c, _ := status.Get(r.Status.Conditions, typ)
	return c
}

// TestReconcilingDuringFirstReconcile: while a new resource's first reconcile runs, the API
// shows phase Reconciling with Reconciling=True (Progressing) and Ready Unknown; afterwards Ready=True and
// no Reconciling condition.
func TestReconcilingDuringFirstReconcile(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	e.commit(map[string]string{"manifests/t.yaml": dbType, "manifests/a.yaml": dbResource("prod", "a", 1)}, "one")
	// Synced, and read through an API on the database, while no replica reconciles.
	if _, err := e.handSyncer().SyncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := httptest.NewServer(server.New(e.store, server.Options{}, e.log).Handler())
	defer before.Close()
	e.api = before.URL
	r, _ := e.resource("prod", "Database", "a")
	if r.Status.Phase != status.PhasePending || condition(r, status.Reconciling).Status != status.True {
		t.Errorf("created: phase %s, Reconciling %+v; want Pending with Reconciling=True", r.Status.Phase, condition(r, status.Reconciling))
	}
	act := &gateAction{who: "r1", gate: make(chan struct{}), started: make(chan string, 1)}
	e.api = ""
	e.start("r1", options{action: act})
	select {
	case <-act.started:
	case <-time.After(20 * time.Second):
		t.Fatal("the first reconcile did not start")
	}
	// The start of the call is stored right after it starts (the reconciler's start writer).
	e.eventually(10*time.Second, "phase Reconciling during the first reconcile", func() (bool, string) {
		r, _ = e.resource("prod", "Database", "a")
		c := condition(r, status.Reconciling)
		return r.Status.Phase == status.PhaseReconciling && c.Status == status.True && c.Reason == status.ReasonProgressing,
			fmt.Sprintf("phase %s, Reconciling %+v", r.Status.Phase, c)
	})
	if c := condition(r, status.Ready); c.Status != status.Unknown {
		t.Errorf("during the first reconcile: Ready %+v, want Unknown", c)
	}
	close(act.gate)
	e.waitPhase("Ready", 1, "prod/a")
	r, _ = e.resource("prod", "Database", "a")
	if _, ok := status.Get(r.Status.Conditions, status.Reconciling); ok || condition(r, status.Ready).Status != status.True {
		t.Errorf("after: conditions %+v", r.Status.Conditions)
	}
}

// TestSyncedFalseWhileDeletesFail: Synced reflects the last action call of any operation, so
// a failing delete shows Synced=False (and Ready=False, Reconciling=True) until it succeeds.
func TestSyncedFalseWhileDeletesFail(t *testing.T) {
	t.Parallel()
	e := setup(t, options{backoff: [2]time.Duration{100 * time.Millisecond, 400 * time.Millisecond}})
	e.commit(map[string]string{"manifests/t.yaml": dbType, "manifests/a.yaml": dbResource("prod", "a", 1),
		"manifests/b.yaml": dbResource("prod", "b", 1)}, "two")
	if _, err := e.syncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("Ready", 1, "prod/a", "prod/b")
	if err := os.WriteFile(e.failFlg, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.commit(map[string]string{"manifests/a.yaml": ""}, "drop a")
	if _, err := e.syncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.eventually(20*time.Second, "Synced=False while the delete fails", func() (bool, string) {
		r, _ := e.resource("prod", "Database", "a")
		s := condition(r, status.Synced)
		return s.Status == status.False && s.Reason == status.ReasonActionFailed, fmt.Sprintf("phase %s conditions %+v", r.Status.Phase, r.Status.Conditions)
	})
	r, _ := e.resource("prod", "Database", "a")
	if r.Status.Phase != status.PhaseDeleting || condition(r, status.Ready).Status != status.False ||
		condition(r, status.Reconciling).Status != status.True {
		t.Errorf("while the delete fails: phase %s conditions %+v", r.Status.Phase, r.Status.Conditions)
	}
	if err := status.Check(status.State{Phase: r.Status.Phase, Conditions: r.Status.Conditions, ObservedGeneration: r.Status.ObservedGeneration},
		r.Metadata.Generation, true); err != nil {
		t.Errorf("invariant broken while the delete fails: %v", err)
	}
	if err := os.Remove(e.failFlg); err != nil {
		t.Fatal(err)
	}
	e.eventually(20*time.Second, "a deleted", func() (bool, string) {
		_, code := e.resource("prod", "Database", "a")
		return code == 404, fmt.Sprint(code)
	})
}

// TestSessionKilledReplicaNeverCommits: replica A's database session is killed
// (pg_terminate_backend) while its process lives and its action is in flight. A peer sees the
// session end, releases A's work (recorded as Interrupted) and runs it; A stops its call, and
// its late result — the plugin finishes anyway — is fenced out: nothing A writes commits.
func TestSessionKilledReplicaNeverCommits(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	ctx := context.Background()
	e.commit(map[string]string{"manifests/t.yaml": dbType, "manifests/a.yaml": dbResource("prod", "a", 1)}, "one")
	// Synced with no replica reconciling: A must be the first to claim.
	if _, err := e.handSyncer().SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	stA, err := store.Open(ctx, e.store.Pool().Config().ConnString(), store.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer stA.Close()
	actA := &gateAction{who: "a", gate: make(chan struct{}), ignoreCancel: true, started: make(chan string, 1)}
	var openA sync.Once
	// A long lease: only the session's end can hand A's work over within this test.
	a := reconciler.New(stA, map[string]actions.Action{"provision": actA}, reconciler.Options{Replica: "a", Workers: 1, LeaseTTL: time.Minute}, e.log)
	var lost atomic.Int32
	liveA := liveness.New(stA, liveness.Options{Replica: store.Replica{Name: "a"},
		OnLost: func(err error) { lost.Add(1); a.Suspend(err) }, OnRegained: a.Resume}, e.log)
	if err := liveA.Start(ctx); err != nil {
		t.Fatal(err)
	}
	actx, stopA := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = a.Run(actx) }()
	go func() { defer wg.Done(); liveA.Run(actx) }()
	defer func() { openA.Do(func() { close(actA.gate) }); stopA(); wg.Wait() }()
	select {
	case <-actA.started:
	case <-time.After(20 * time.Second):
		t.Fatal("A did not start the call")
	}
	// Its start is stored 10 ms after the call begins (the start writer); a release before
	// that is no interrupted attempt, so the session is killed once it is stored.
	e.eventually(10*time.Second, "A's start stored", func() (bool, string) {
		var started bool
		_ = e.store.Pool().QueryRow(ctx, "SELECT started_at IS NOT NULL FROM resources JOIN resource_queue USING (id) WHERE name = 'a'").Scan(&started)
		return started, "not stored"
	})

	actB := &gateAction{who: "b", gate: make(chan struct{}), started: make(chan string, 1)}
	close(actB.gate)
	e.start("b", options{action: actB, workers: 1, leaseTTL: time.Minute})

	var pid int
	if err := e.store.Pool().QueryRow(ctx, `SELECT l.pid FROM pg_locks l JOIN replicas r ON l.objid::int8 = r.liveness_key
		WHERE r.name = 'a' AND l.locktype = 'advisory' AND l.objsubid = 2 AND l.granted`).Scan(&pid); err != nil {
		t.Fatalf("A's liveness session: %v", err)
	}
	killed := time.Now()
	if _, err := e.store.Pool().Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("Ready", 1, "prod/a")
	t.Logf("B made prod/a Ready %s after A's session was killed", time.Since(killed).Round(time.Millisecond))
	// A's plugin finishes its call now, late: its result must not commit.
	openA.Do(func() { close(actA.gate) })
	e.eventually(10*time.Second, "A's call returned", func() (bool, string) { return actA.running.Load() == 0, "" })
	e.eventually(10*time.Second, "A back with a new session", func() (bool, string) {
		var key *int32
		_ = e.store.Pool().QueryRow(ctx, "SELECT liveness_key FROM replicas WHERE name = 'a'").Scan(&key)
		return key != nil, "no key"
	})
	time.Sleep(200 * time.Millisecond) // let a wrongly unfenced write land, if there were one

	r, _ := e.resource("prod", "Database", "a")
	if string(r.Status.Outputs) != `{"by":"b"}` {
		t.Errorf("outputs %s, want B's", r.Status.Outputs)
	}
	h, err := e.store.ListHistory(ctx, "prod", "Database", "a", 100)
	if err != nil {
		t.Fatal(err)
	}
	interrupted := 0
	for _, x := range h {
		switch {
		case x.Replica == "a" && x.Result == store.HistoryInterrupted:
			interrupted++
		case x.Replica == "a":
			t.Errorf("A committed after losing its session: %+v", x)
		}
	}
	if interrupted != 1 {
		t.Errorf("%d Interrupted history rows for A's attempt, want 1: %+v", interrupted, h)
	}
	if lost.Load() == 0 || actA.cancelled.Load() == 0 {
		t.Errorf("A was not told its session ended (lost %d) or its call was not cancelled (%d)", lost.Load(), actA.cancelled.Load())
	}
}

// TestNoLeaseLostWhileDraining: a single replica draining many quick resources, with leases
// renewed every 20 ms, never reports a lost lease — a result committed while a renewal ran
// is the normal end of a lease, not a loss — and every resource ends Ready exactly once.
func TestNoLeaseLostWhileDraining(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	ctx := context.Background()
	const n = 3000
	files := map[string]string{"manifests/t.yaml": dbType}
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString("---\n" + dbResource(fmt.Sprintf("ns%d", i%10), fmt.Sprintf("db%05d", i), 1+i%100))
	}
	files["manifests/all.yaml"] = b.String()
	e.commit(files, "many")
	// A lone reconciler with leases of 60 ms (a config's are 1 s at least), on a source
	// synced before it runs.
	if _, err := e.handSyncer().SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	act, err := noop.New(nil, actions.Env{Name: "provision"})
	if err != nil {
		t.Fatal(err)
	}
	var logs logbuf.Buffer
	r := reconciler.New(e.store, map[string]actions.Action{"provision": act},
		reconciler.Options{Replica: "solo", LeaseTTL: 60 * time.Millisecond}, slog.New(slog.NewTextHandler(&logs, nil)))
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(rctx) }()
	defer func() { stop(); <-done }()
	e.eventually(60*time.Second, "all Ready", func() (bool, string) {
		var ready int
		_ = e.store.Pool().QueryRow(ctx, "SELECT count(*) FROM resources WHERE phase = 'Ready'").Scan(&ready)
		return ready == n, fmt.Sprint(ready)
	})
	stop()
	<-done
	if strings.Contains(logs.String(), "lost") {
		t.Errorf("a lone replica reported lost leases:\n%s", logs.String())
	}
	var rows, results int
	if err := e.store.Pool().QueryRow(ctx, `SELECT count(DISTINCT resource_uid), count(*) FROM reconcile_history`).Scan(&rows, &results); err != nil {
		t.Fatal(err)
	}
	if rows != n || results != n {
		t.Errorf("history: %d resources, %d attempts; want %d each", rows, results, n)
	}
}
