package syncer

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
)

// fakeSource is a sources.Source whose Head and Fetch are the test's functions; it counts
// calls.
type fakeSource struct {
	head    func(ctx context.Context) (string, error)
	fetch   func(ctx context.Context, rev string) (*sources.Snapshot, error)
	heads   atomic.Int32
	fetches atomic.Int32
}

func (f *fakeSource) Head(ctx context.Context) (string, error) {
	f.heads.Add(1)
	return f.head(ctx)
}

func (f *fakeSource) Fetch(ctx context.Context, rev string) (*sources.Snapshot, error) {
	f.fetches.Add(1)
	return f.fetch(ctx, rev)
}

func (f *fakeSource) Close() error { return nil }

var _ sources.Source = (*fakeSource)(nil)

// repo is an in-memory source: a head and the files of each revision.
type repo struct {
	mu    sync.Mutex
	head  string
	files map[string]map[string]string
}

func (r *repo) set(rev string, files map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.files == nil {
		r.files = map[string]map[string]string{}
	}
	r.head, r.files[rev] = rev, files
}

func (r *repo) source() *fakeSource {
	return &fakeSource{
		head: func(context.Context) (string, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			return r.head, nil
		},
		fetch: func(_ context.Context, rev string) (*sources.Snapshot, error) { return r.snapshot(rev), nil },
	}
}

func (r *repo) snapshot(rev string) *sources.Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	snap := &sources.Snapshot{Revision: rev}
	for p, d := range r.files[rev] {
		snap.Files = append(snap.Files, sources.File{Path: p, Hash: fmt.Sprintf("%s:%x", p, d), Data: []byte(d)})
	}
	return snap
}

var dbType = manifesttest.TypeDoc("Database", "infra.example.com",
	"{type: object, required: [size], properties: {size: {type: integer, minimum: 1, maximum: 100}}}", "provision")

func dbFiles(size int) map[string]string {
	return map[string]string{"t.yaml": dbType, "a.yaml": fmt.Sprintf(`apiVersion: infra.example.com/v1
kind: Database
metadata:
  name: a
spec:
  size: %d
`, size)}
}

// rev makes a 40-hex revision from n (0-9): rev(2) is "2222…".
func rev(n int) string { return strings.Repeat(fmt.Sprint(n%10), 40) }

type bundle struct {
	t     *testing.T
	ctx   context.Context
	store *store.Store
	db    *pgx.Conn // reads the leases table
}

func setup(t *testing.T) *bundle {
	t.Helper()
	// The tests of sources of 50,500 resources take up to a minute under -race on two busy
	// cores.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	url := pgtest.NewDatabase(t, store.MigrateURL)
	st, err := store.Open(ctx, url, store.Options{MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if err := st.RegisterSource(ctx, store.SourceConfig{Name: "infra", URL: "test"}); err != nil {
		t.Fatal(err)
	}
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close(context.Background()) })
	return &bundle{t: t, ctx: ctx, store: st, db: db}
}

func (b *bundle) syncer(src sources.Source, replica string, ttl time.Duration) *Syncer {
	return New(b.store, Options{Name: "infra", Source: src, Interval: time.Hour, Prune: true, Replica: replica, LeaseTTL: ttl},
		slog.New(slog.DiscardHandler))
}

// run runs s until the test ends.
func (b *bundle) run(s *Syncer) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	b.t.Cleanup(func() { cancel(); <-done })
}

type leaseRow struct {
	holder  string
	term    int64
	expires time.Time
	valid   bool
}

func (b *bundle) lease() leaseRow {
	b.t.Helper()
	var l leaseRow
	err := b.db.QueryRow(b.ctx, `SELECT holder, term, expires_at, expires_at > now() FROM leases WHERE name = 'source:infra'`).
		Scan(&l.holder, &l.term, &l.expires, &l.valid)
	if err != nil && err != pgx.ErrNoRows {
		b.t.Fatal(err)
	}
	return l
}

func (b *bundle) source() store.Source {
	b.t.Helper()
	src, err := b.store.GetSource(b.ctx, "infra")
	if err != nil {
		b.t.Fatal(err)
	}
	return src
}

// eventually polls cond until it holds or the deadline passes.
func (b *bundle) eventually(within time.Duration, what string, cond func() (bool, string)) {
	b.t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, got := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("%s: not within %s (last: %s)", what, within, got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (b *bundle) applied(want string) {
	b.t.Helper()
	b.eventually(10*time.Second, "revision "+clip.Rev(want)+" applied", func() (bool, string) {
		r := b.source().Revision
		return r == want, r
	})
}

// TestSyncLeaseTakenRenewedReleased: Run takes the free lease, syncs at once, renews the
// lease every TTL/3 under the same term, and releases it when stopped.
func TestSyncLeaseTakenRenewedReleased(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var r repo
	r.set(rev(1), dbFiles(1))
	s := b.syncer(r.source(), "r1", 600*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	b.applied(rev(1))
	first := b.lease()
	if first.holder != "r1" || !first.valid {
		t.Fatalf("lease %+v, want held by r1", first)
	}
	renewals := 0
	prev := first.expires
	b.eventually(5*time.Second, "three renewals", func() (bool, string) {
		l := b.lease()
		if l.holder != "r1" || l.term != first.term || !l.valid {
			t.Fatalf("lease %+v, want r1 term %d", l, first.term)
		}
		if l.expires.After(prev) {
			renewals++
			prev = l.expires
		}
		return renewals >= 3, fmt.Sprint(renewals)
	})
	cancel()
	<-done
	if l := b.lease(); l.valid {
		t.Errorf("lease %+v still valid after Run returned", l)
	}
}

// TestSyncRenewalNotBlockedBySlowFetch: a Fetch that blocks for three lease TTLs does not
// stop the lease from being renewed, and the revision is applied when it returns.
func TestSyncRenewalNotBlockedBySlowFetch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const ttl = 600 * time.Millisecond
	var r repo
	r.set(rev(1), dbFiles(1))
	src := r.source()
	entered := make(chan struct{})
	release := make(chan struct{})
	src.fetch = func(ctx context.Context, rv string) (*sources.Snapshot, error) {
		close(entered)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return r.snapshot(rv), nil
	}
	s := b.syncer(src, "r1", ttl)
	b.run(s)
	<-entered
	start := time.Now()
	term := b.lease().term
	var renewals int
	prev := time.Time{}
	for time.Since(start) < 3*ttl {
		l := b.lease()
		if l.holder != "r1" || l.term != term || !l.valid {
			t.Fatalf("during a slow fetch the lease became %+v (after %s)", l, time.Since(start))
		}
		if l.expires.After(prev) {
			renewals++
			prev = l.expires
		}
		time.Sleep(20 * time.Millisecond) // sampling the table, not waiting for work
	}
	close(release)
	b.applied(rev(1))
	if renewals < 6 {
		t.Errorf("%d renewals seen in 3 TTLs, want ≥ 6 (every TTL/3)", renewals)
	}
	t.Logf("fetch blocked %s (3×TTL); lease renewed %d times meanwhile", time.Since(start).Round(time.Millisecond), renewals)
}

// TestSyncLeaseLost: when the lease runs out unrenewed (as after a network partition) and
// another replica takes it, the in-flight sync is cancelled, nothing is written, and no
// further sync happens while the other replica holds the lease.
func TestSyncLeaseLost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const ttl = 600 * time.Millisecond
	var r repo
	r.set(rev(1), dbFiles(1))
	src := r.source()
	s := b.syncer(src, "r1", ttl)
	b.run(s)
	b.applied(rev(1))

	// r1 is fetching rev 2, slowly, when its lease runs out and r2 takes it.
	r.set(rev(2), dbFiles(2))
	entered := make(chan struct{})
	canceled := make(chan error, 1)
	src.fetch = func(ctx context.Context, rv string) (*sources.Snapshot, error) {
		close(entered)
		<-ctx.Done()
		canceled <- ctx.Err()
		return r.snapshot(rv), nil // as if the fetch finished regardless: it must not be applied
	}
	s.Trigger()
	<-entered
	var other store.Lease
	b.eventually(5*time.Second, "r2 takes the lease", func() (bool, string) {
		l := b.lease()
		_ = b.store.ReleaseLease(b.ctx, store.Lease{Name: "source:infra", Holder: "r1", Term: l.term}) // r1 partitioned
		var ok bool
		var err error
		other, ok, err = b.store.AcquireLease(b.ctx, "source:infra", "r2", time.Minute)
		return err == nil && ok, fmt.Sprint(err)
	})
	start := time.Now()
	select {
	case err := <-canceled:
		t.Logf("r1's sync cancelled %s after r2 took the lease: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(5 * time.Second):
		t.Fatal("r1's in-flight sync was not cancelled after it lost the lease")
	}
	b.eventually(5*time.Second, "r1 no longer holder", func() (bool, string) {
		_, ok := s.Runtime()
		return !ok, "still holder"
	})
	heads := src.heads.Load()
	s.Trigger()
	s.TriggerCommit(rev(2))
	s.LeasesFreed()
	// r1 keeps trying the lease every TTL/3; give it two TTLs to misbehave.
	deadline := time.Now().Add(2 * ttl)
	for time.Now().Before(deadline) {
		if l := b.lease(); l.holder != "r2" || l.term != other.Term {
			t.Fatalf("lease %+v, want r2's", l)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := src.heads.Load(); got != heads {
		t.Errorf("r1 read the head %d times without the lease", got-heads)
	}
	if got := b.source().Revision; got != rev(1) {
		t.Errorf("revision %s applied by a replica that lost the lease", clip.Rev(got))
	}
}

// TestSyncLeasesFreedTakesAtOnce: a replica waiting for a lease held by another takes it
// within milliseconds of LeasesFreed once the other releases it, and syncs at once, instead
// of waiting for its next TTL/3 tick.
func TestSyncLeasesFreedTakesAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const ttl = 30 * time.Second // next tick in 10 s: only LeasesFreed can explain a quick takeover
	other, ok, err := b.store.AcquireLease(b.ctx, "source:infra", "r2", ttl)
	if err != nil || !ok {
		t.Fatalf("r2 acquire: %v %v", ok, err)
	}
	var r repo
	r.set(rev(1), dbFiles(1))
	src := r.source()
	s := b.syncer(src, "r1", ttl)
	b.run(s)
	b.eventually(5*time.Second, "r1's first attempt", func() (bool, string) {
		return b.lease().holder == "r2", ""
	})
	// Calls while another replica holds the lease cost at most one query each minRetry.
	for range 100 {
		s.LeasesFreed()
	}
	if err := b.store.ReleaseLease(b.ctx, other); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s.LeasesFreed()
	b.eventually(2*time.Second, "r1 holds the lease", func() (bool, string) {
		l := b.lease()
		return l.holder == "r1" && l.valid, l.holder
	})
	took := time.Since(start)
	b.applied(rev(1))
	synced := time.Since(start)
	t.Logf("freed lease taken %s after LeasesFreed, revision applied after %s", took.Round(time.Millisecond), synced.Round(time.Millisecond))
	if took > time.Second {
		t.Errorf("took %s to take a freed lease", took)
	}
}

// TestSyncNoLeaseWithoutLiveness: a replica without its liveness session (PostgreSQL just
// restarted, its session not yet back) neither takes the source's lease nor syncs, since
// peers and its own next session would release that lease at once; it takes it as soon as
// the session is back, and stops renewing it when the session ends.
func TestSyncNoLeaseWithoutLiveness(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const ttl = 600 * time.Millisecond
	var live atomic.Bool
	var r repo
	r.set(rev(1), dbFiles(1))
	src := r.source()
	s := New(b.store, Options{Name: "infra", Source: src, Interval: time.Hour, Prune: true, Replica: "r1", LeaseTTL: ttl, Live: live.Load},
		slog.New(slog.DiscardHandler))
	b.run(s)
	// Its attempts come every TTL/3 and on LeasesFreed: give it two TTLs to misbehave.
	deadline := time.Now().Add(2 * ttl)
	for time.Now().Before(deadline) {
		s.LeasesFreed()
		if l := b.lease(); l.holder != "" {
			t.Fatalf("lease %+v taken without a liveness session", l)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := src.heads.Load(); n != 0 {
		t.Errorf("head read %d times without the lease", n)
	}

	live.Store(true)
	s.LeasesFreed() // what the liveness component's OnRegained does
	b.eventually(2*time.Second, "r1 holds the lease", func() (bool, string) {
		l := b.lease()
		return l.holder == "r1" && l.valid, fmt.Sprintf("%+v", l)
	})
	b.applied(rev(1))

	live.Store(false)
	b.eventually(2*time.Second, "r1 no longer holder", func() (bool, string) {
		_, ok := s.Runtime()
		return !ok, "still holder"
	})
}

// TestSyncInvalidRevisionRecordedOnce: a revision whose manifests are invalid is recorded
// once (Ready=False, errors with file:line), not fetched again while it stays the head, and
// the next good head is applied and clears the failure.
func TestSyncInvalidRevisionRecordedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var r repo
	r.set(rev(1), dbFiles(1))
	src := r.source()
	s := b.syncer(src, "r1", 15*time.Second)
	if _, err := s.SyncOnce(b.ctx); err != nil {
		t.Fatal(err)
	}
	r.set(rev(2), dbFiles(500)) // size above the schema's maximum
	if _, err := s.SyncOnce(b.ctx); err == nil || !strings.Contains(err.Error(), "a.yaml:6") {
		t.Fatalf("SyncOnce error = %v, want the rejection naming a.yaml:6", err)
	}
	got := b.source()
	c, _ := status.Get(got.Conditions, status.Ready)
	if got.Revision != rev(1) || c.Status != status.False || len(got.Errors) != 1 || got.Errors[0].File != "a.yaml" {
		t.Fatalf("after the rejection: revision %s, ready %+v, errors %+v", clip.Rev(got.Revision), c, got.Errors)
	}
	fetches := src.fetches.Load()
	for range 3 {
		out, err := s.SyncOnce(b.ctx)
		if err != nil || !out.Unchanged {
			t.Fatalf("rejected head synced again: %+v, %v", out, err)
		}
	}
	if n := src.fetches.Load() - fetches; n != 0 {
		t.Errorf("the rejected head was fetched %d more times", n)
	}
	r.set(rev(3), dbFiles(3))
	if _, err := s.SyncOnce(b.ctx); err != nil {
		t.Fatal(err)
	}
	got = b.source()
	c, _ = status.Get(got.Conditions, status.Ready)
	if got.Revision != rev(3) || c.Status != status.True || len(got.Errors) != 0 {
		t.Errorf("after a good head: revision %s, ready %+v, errors %+v", clip.Rev(got.Revision), c, got.Errors)
	}
}

// TestSyncRecovers: a failing head read is recorded once (Ready=False, FetchFailed); when
// the head answers again with the applied revision the recovery is recorded without a fetch.
func TestSyncRecovers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var r repo
	r.set(rev(1), dbFiles(1))
	src := r.source()
	var down atomic.Bool
	head := src.head
	src.head = func(ctx context.Context) (string, error) {
		if down.Load() {
			return "", fmt.Errorf("ls-remote at https://git.example/infra.git: no answer within 10s: %w", context.DeadlineExceeded)
		}
		return head(ctx)
	}
	s := b.syncer(src, "r1", 15*time.Second)
	if _, err := s.SyncOnce(b.ctx); err != nil {
		t.Fatal(err)
	}
	down.Store(true)
	for range 3 {
		if _, err := s.SyncOnce(b.ctx); err == nil {
			t.Fatal("a failing head read synced")
		}
	}
	got := b.source()
	c, _ := status.Get(got.Conditions, status.Ready)
	if c.Status != status.False || c.Reason != "FetchFailed" || !strings.Contains(c.Message, "no answer within 10s") {
		t.Fatalf("ready %+v, want False/FetchFailed", c)
	}
	failedAt := c.LastTransitionTime
	down.Store(false)
	fetches := src.fetches.Load()
	out, err := s.SyncOnce(b.ctx)
	if err != nil || !out.Unchanged {
		t.Fatalf("recovery sync: %+v, %v", out, err)
	}
	got = b.source()
	c, _ = status.Get(got.Conditions, status.Ready)
	if c.Status != status.True || got.Revision != rev(1) || src.fetches.Load() != fetches {
		t.Errorf("after recovery: ready %+v (failed at %s), revision %s, %d fetches", c, failedAt, clip.Rev(got.Revision), src.fetches.Load()-fetches)
	}
}

// TestSyncTriggerIfHolder: only the holder takes a webhook's trigger; a replica without the
// lease says so, so that the receiver asks the holder instead.
func TestSyncTriggerIfHolder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var r repo
	r.set(rev(1), dbFiles(1))
	holder := b.syncer(r.source(), "r1", 15*time.Second)
	b.run(holder)
	b.applied(rev(1))
	other := r.source()
	follower := b.syncer(other, "r2", 15*time.Second)
	b.run(follower)
	b.eventually(5*time.Second, "r1 holds, r2 knows it does not", func() (bool, string) {
		_, ok := holder.Runtime()
		return ok && !follower.TriggerIfHolder(rev(2)), ""
	})
	r.set(rev(2), dbFiles(2))
	if !holder.TriggerIfHolder(rev(2)) {
		t.Fatal("the holder refused the trigger")
	}
	b.applied(rev(2))
	if n := other.heads.Load(); n != 0 {
		t.Errorf("the replica without the lease read the head %d times", n)
	}
}
