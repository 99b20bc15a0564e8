package lease

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/logbuf"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// flaky is the real store with a switch that makes every attempt fail as an unreachable
// database does.
type flaky struct {
	*store.Store
	down     atomic.Bool
	attempts atomic.Int64
}

func (f *flaky) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (store.Lease, bool, error) {
	f.attempts.Add(1)
	if f.down.Load() {
		return store.Lease{}, false, errors.New("dial tcp 127.0.0.1:5432: connection refused")
	}
	return f.Store.AcquireLease(ctx, name, holder, ttl)
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), pgtest.NewDatabase(t, store.MigrateURL), store.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func start(t *testing.T, st Store, replica string, ttl time.Duration, l *logbuf.Buffer) *Holder {
	t.Helper()
	h := New(st, Options{Name: "maintenance", Replica: replica, TTL: ttl, Label: "maintenance"},
		slog.New(slog.NewTextHandler(l, nil)).With("replica", replica))
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	return h
}

// TestHandover: of two holders exactly one holds; when it stops, it releases the lease and the
// other, asked to try now, takes it under the next term at once (not at the lease's expiry);
// the first holder's context ends with its holding.
func TestHandover(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	var lg logbuf.Buffer
	const ttl = time.Minute // an expiry would take a minute: a handover within the test is a release
	a := start(t, st, "r1", ttl, &lg)
	eventually(t, 10*time.Second, "r1 holds", func() bool { l, _ := a.Held(); return l != nil })
	b := start(t, st, "r2", ttl, &lg)
	b.TryNow()
	la, actx := a.Held()
	if lb, _ := b.Held(); lb != nil {
		t.Fatalf("both hold the lease: %+v and %+v", la, lb)
	}
	select {
	case <-b.Gained():
		t.Fatal("r2 was told it gained a lease r1 holds")
	default:
	}
	a.Stop()
	if actx.Err() == nil {
		t.Error("r1's holding context did not end when it stopped")
	}
	if l, _ := a.Held(); l != nil {
		t.Errorf("r1 still says it holds %+v after Stop", l)
	}
	b.TryNow()
	select {
	case <-b.Gained():
	case <-time.After(10 * time.Second):
		t.Fatalf("r2 did not take the released lease:\n%s", lg.String())
	}
	lb, _ := b.Held()
	if lb == nil || lb.Term != la.Term+1 || lb.Holder != "r2" {
		t.Fatalf("r2 holds %+v, want r2 at term %d", lb, la.Term+1)
	}
	if !strings.Contains(lg.String(), "holding the maintenance lease") {
		t.Errorf("no line tells of the holding:\n%s", lg.String())
	}
}

// TestRenewFailureKeepsLease: while the database does not answer, a holder keeps its lease
// for as long as it is valid, retries before it runs out, and gives it up when it does; the
// work under its holding context is cancelled then. When the database answers again it takes
// the lease back (it expired unrenewed; nobody else took it: a new term).
func TestRenewFailureKeepsLease(t *testing.T) {
	t.Parallel()
	f := &flaky{Store: openStore(t)}
	var lg logbuf.Buffer
	const ttl = 1500 * time.Millisecond
	h := start(t, f, "r1", ttl, &lg)
	eventually(t, 10*time.Second, "r1 holds", func() bool { l, _ := h.Held(); return l != nil })
	_, hctx := h.Held()
	<-h.Gained()
	f.down.Store(true)
	before := f.attempts.Load()
	// Still held after a failed renewal (attempts come every ttl/3).
	eventually(t, 10*time.Second, "a failed renewal", func() bool {
		return strings.Contains(lg.String(), "renew the maintenance lease failed; still held")
	})
	if l, _ := h.Held(); l != nil && hctx.Err() != nil {
		t.Fatal("the holding context ended while the lease is still held")
	}
	// Held turns nil by the clock alone; the loop's attempt at the expiry is what drops the
	// holding and ends its context: wait for that, not for Held.
	eventually(t, 10*time.Second, "the holding ended when the lease ran out", func() bool { return hctx.Err() != nil })
	if l, _ := h.Held(); l != nil {
		t.Errorf("still held after the expiry: %+v", l)
	}
	if !strings.Contains(lg.String(), "maintenance lease expired unrenewed") {
		t.Errorf("no line tells the lease ran out:\n%s", lg.String())
	}
	if n := f.attempts.Load() - before; n < 2 {
		t.Errorf("%d attempts while the database was down, want retries", n)
	}
	f.down.Store(false)
	eventually(t, 10*time.Second, "r1 holds again", func() bool { l, _ := h.Held(); return l != nil })
	select {
	case <-h.Gained(): // a new holding: what the last one knew is stale
	default:
		t.Error("holding again after the expiry was not told as a new holding")
	}
}

// TestLossToAnotherHolder: a holder whose lease another replica took (it expired while the
// holder was cut off) learns so at its next attempt and drops it; Drop (a fenced write found
// the lease moved) ends the holding at once.
func TestLossToAnotherHolder(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	ctx := context.Background()
	var lg logbuf.Buffer
	const ttl = 600 * time.Millisecond
	h := New(st, Options{Name: "maintenance", Replica: "r1", TTL: ttl, Label: "maintenance"}, slog.New(slog.NewTextHandler(&lg, nil)))
	if c := h.Attempt(ctx); c != Taken {
		t.Fatalf("first attempt: %s", c)
	}
	if c := h.Attempt(ctx); c != Renewed {
		t.Fatalf("second attempt: %s", c)
	}
	l, hctx := h.Held()
	// r2 takes the lease once it has expired (r1 did not renew).
	var other store.Lease
	eventually(t, 10*time.Second, "r2 takes the expired lease", func() bool {
		var ok bool
		other, ok, _ = st.AcquireLease(ctx, "maintenance", "r2", time.Minute)
		return ok
	})
	if c := h.Attempt(ctx); c != Lost {
		t.Fatalf("attempt after r2 took it: %s", c)
	}
	if hctx.Err() == nil {
		t.Error("r1's holding context did not end")
	}
	if !strings.Contains(lg.String(), "lost the maintenance lease to another replica") {
		t.Errorf("no line tells of the loss:\n%s", lg.String())
	}
	if other.Term != l.Term+1 {
		t.Errorf("r2's term %d, want %d", other.Term, l.Term+1)
	}
	// Drop ends a holding at once, and only the holding of that term.
	if err := st.ReleaseLease(ctx, other); err != nil {
		t.Fatal(err)
	}
	if c := h.Attempt(ctx); c != Taken {
		t.Fatalf("retaking the released lease: %s", c)
	}
	cur, cctx := h.Held()
	h.Drop(cur.Term - 1)
	if l, _ := h.Held(); l == nil {
		t.Fatal("Drop of an older term ended the current holding")
	}
	h.Drop(cur.Term)
	if l, _ := h.Held(); l != nil || cctx.Err() == nil {
		t.Fatalf("Drop left the holding: %+v (context %v)", l, cctx.Err())
	}
}

// TestNotLiveNeverTakes: without a liveness session a holder neither takes nor renews.
func TestNotLiveNeverTakes(t *testing.T) {
	t.Parallel()
	f := &flaky{Store: openStore(t)}
	var live atomic.Bool
	h := New(f, Options{Name: "maintenance", Replica: "r1", TTL: time.Minute, Live: live.Load}, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	if c := h.Attempt(ctx); c != None || f.attempts.Load() != 0 {
		t.Fatalf("attempt without a session: %s, %d queries", c, f.attempts.Load())
	}
	live.Store(true)
	if c := h.Attempt(ctx); c != Taken {
		t.Fatalf("attempt with a session: %s", c)
	}
	live.Store(false)
	if c := h.Attempt(ctx); c != Lost {
		t.Fatalf("attempt after the session ended: %s", c)
	}
}

// late is the real store whose takings are answered only after the holder's loop was told to
// stop: the stop came between the database's commit and the driver reading the answer. Like
// pgx, it then reports a failure when the context it was given has ended by then.
type late struct {
	*store.Store
	stopped <-chan struct{} // the loop's context ended
	took    chan struct{}
}

func (l *late) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (store.Lease, bool, error) {
	lease, ok, err := l.Store.AcquireLease(context.WithoutCancel(ctx), name, holder, ttl)
	if ok && err == nil {
		select {
		case l.took <- struct{}{}:
		default:
		}
		<-l.stopped
		time.Sleep(10 * time.Millisecond) // the driver reads the answer a moment after the stop
		if ctx.Err() != nil {
			return store.Lease{}, false, ctx.Err()
		}
	}
	return lease, ok, err
}

// TestStopDuringTakeReleases: a lease the database gave as the holder stopped is released by
// Stop, not left held until it expires (another replica takes it at once).
func TestStopDuringTakeReleases(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	var lg logbuf.Buffer
	ctx, stop := context.WithCancel(context.Background())
	l := &late{Store: st, stopped: ctx.Done(), took: make(chan struct{}, 1)}
	h := New(l, Options{Name: "maintenance", Replica: "r1", TTL: time.Minute, Label: "maintenance"}, slog.New(slog.NewTextHandler(&lg, nil)))
	t.Cleanup(h.Stop)
	t.Cleanup(stop) // before h.Stop: the take waits for it
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.took:
	case <-time.After(10 * time.Second):
		t.Fatal("the lease was not taken")
	}
	stop() // the loop's context ends while the answer is on its way
	h.Stop()
	select {
	case <-h.Gained():
		t.Error("a take recorded during the stop announced a gain")
	default:
	}
	if _, ok, err := st.AcquireLease(context.Background(), "maintenance", "r2", time.Minute); err != nil || !ok {
		t.Fatalf("r2 cannot take the lease r1 stopped holding: %v, %v\n%s", ok, err, lg.String())
	}
}

// hung is a store whose takings answer only when their context ends (the database gone quiet).
type hung struct {
	*store.Store
	asked chan struct{}
}

func (h *hung) AcquireLease(ctx context.Context, _, _ string, _ time.Duration) (store.Lease, bool, error) {
	select {
	case h.asked <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return store.Lease{}, false, ctx.Err()
}

// TestStopCutsAHungTake: a take the database does not answer holds Stop up for stopGrace, not
// for the attempt's whole deadline (a third of the TTL).
func TestStopCutsAHungTake(t *testing.T) {
	t.Parallel()
	hs := &hung{Store: openStore(t), asked: make(chan struct{}, 1)}
	h := New(hs, Options{Name: "maintenance", Replica: "r1", TTL: 3 * time.Minute}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(h.Stop)
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hs.asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the lease was not asked for")
	}
	stopped := make(chan struct{})
	go func() { h.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second): // the attempt's deadline is a minute away
		t.Fatal("Stop waited for the hung take's deadline")
	}
}
