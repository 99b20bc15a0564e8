package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// gateApplies makes every statement inserting into resources wait until the returned open
// is called: an apply as long as the test wants, without sleeping. It returns once the gate
// is shut.
func gateApplies(t *testing.T, st *Store) (waiting func() bool, open func()) {
	t.Helper()
	ctx := context.Background()
	if _, err := st.pool.Exec(ctx, `
		CREATE FUNCTION test_gate() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_advisory_lock(7001); PERFORM pg_advisory_unlock(7001); RETURN NULL; END $$;
		CREATE TRIGGER test_gate AFTER INSERT ON resources FOR EACH STATEMENT EXECUTE FUNCTION test_gate();`); err != nil {
		t.Fatal(err)
	}
	gate, err := st.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gate.Exec(ctx, "SELECT pg_advisory_lock(7001)"); err != nil {
		t.Fatal(err)
	}
	opened := false
	open = func() {
		if !opened {
			opened = true
			_, _ = gate.Exec(ctx, "SELECT pg_advisory_unlock(7001)")
			gate.Release()
		}
	}
	t.Cleanup(open)
	waiting = func() bool {
		var n int
		if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 7001 AND NOT granted`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
	return waiting, open
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startGatedApply opens a store with source "s", takes the source's lease as r1 and starts
// an apply of revision rev fenced by it; it returns once the apply waits at the gate (see
// gateApplies), with the lease, the gate's open and the apply's result.
func startGatedApply(t *testing.T, rev string) (st *Store, ctx context.Context, r1 Lease, open func(), done <-chan error) {
	t.Helper()
	st = openTest(t, "s")
	ctx = context.Background()
	waiting, open := gateApplies(t, st)
	r1, ok, err := st.AcquireLease(ctx, "source:s", "r1", time.Minute)
	if err != nil || !ok {
		t.Fatalf("r1 takes the lease: %v %v", ok, err)
	}
	result := make(chan error, 1)
	go func() {
		_, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: rev, Set: widgets(3, func(int) int { return 1 }), Lease: &r1})
		result <- err
	}()
	waitFor(t, "the apply reaches the gate", waiting)
	return st, ctx, r1, open, result
}

// fencedTx takes the lease of source "s" as r1 and begins a transaction that passed r1's
// fence (checkLease); the transaction is rolled back at the end of the test unless committed.
func fencedTx(ctx context.Context, t *testing.T, st *Store) (Lease, pgx.Tx) {
	t.Helper()
	r1, ok, err := st.AcquireLease(ctx, "source:s", "r1", time.Minute)
	if err != nil || !ok {
		t.Fatalf("r1 takes the lease: %v %v", ok, err)
	}
	tx, err := st.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.WithoutCancel(ctx)) })
	if err := checkLease(ctx, tx, &r1); err != nil {
		t.Fatalf("the fence of the live holder: %v", err)
	}
	return r1, tx
}

// TestLeaseRenewedDuringFencedApply: while an apply fenced by the source's lease is in its
// transaction, the holder renews the lease without waiting (the apply must not cost the
// holder its lease), and another replica is refused the valid lease without waiting.
func TestLeaseRenewedDuringFencedApply(t *testing.T) {
	t.Parallel()
	st, ctx, r1, open, done := startGatedApply(t, "r1")

	// Each attempt gets 5 s: a lease loop gives up after leaseTTL/3.
	for i := range 3 {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		l, ok, err := st.AcquireLease(actx, "source:s", "r1", time.Minute)
		cancel()
		if err != nil || !ok || l.Term != r1.Term {
			t.Fatalf("renewal %d during the apply: %+v ok=%v err=%v, want term %d renewed", i, l, ok, err, r1.Term)
		}
		actx, cancel = context.WithTimeout(ctx, 5*time.Second)
		_, ok, err = st.AcquireLease(actx, "source:s", "r2", time.Minute)
		cancel()
		if err != nil || ok {
			t.Fatalf("r2 during r1's apply: ok=%v err=%v, want refused at once", ok, err)
		}
	}
	open()
	if err := <-done; err != nil {
		t.Fatalf("apply of the live holder: %v", err)
	}
	if got := readApplied(t, st, "s"); got.Revision != "r1" || len(got.Specs) != 3 {
		t.Errorf("after the apply: %+v", got)
	}
}

// TestLeaseRenewedWhileFenceHeld: the fence itself (checkLease's FOR KEY SHARE, held until
// the transaction ends) never blocks the holder's renewal; a takeover is refused at once
// until the transaction ends, and is possible once the lease is released after it.
func TestLeaseRenewedWhileFenceHeld(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	r1, tx := fencedTx(ctx, t, st)
	for i := range 3 {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		l, ok, err := st.AcquireLease(actx, "source:s", "r1", time.Minute)
		cancel()
		if err != nil || !ok || l.Term != r1.Term {
			t.Fatalf("renewal %d while the fence is held: %+v ok=%v err=%v, want term %d renewed", i, l, ok, err, r1.Term)
		}
	}
	if err := st.ReleaseLease(ctx, r1); err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, ok, err := st.AcquireLease(actx, "source:s", "r2", time.Minute)
	cancel()
	if err != nil || ok {
		t.Fatalf("r2 while the fence is held: ok=%v err=%v, want refused at once", ok, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r2, ok, err := st.AcquireLease(ctx, "source:s", "r2", time.Minute)
	if err != nil || !ok || r2.Term != r1.Term+1 {
		t.Fatalf("r2 after the fenced transaction: %+v ok=%v err=%v", r2, ok, err)
	}
}

// TestLeaseTakeoverFencesLongApply: a holder whose lease ran out and was taken over by
// another replica while its apply was running does not commit it; nothing of the revision is
// written.
func TestLeaseTakeoverFencesLongApply(t *testing.T) {
	t.Parallel()
	st, ctx, r1, open, done := startGatedApply(t, "stale")

	// r1 stops renewing (partitioned, or found dead): its lease is expired, r2 takes it.
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := st.ReleaseLease(actx, r1); err != nil {
		t.Fatal(err)
	}
	r2, ok, err := st.AcquireLease(actx, "source:s", "r2", time.Minute)
	if err != nil || !ok || r2.Term != r1.Term+1 {
		t.Fatalf("r2 takes the expired lease during r1's apply: %+v ok=%v err=%v", r2, ok, err)
	}
	open()
	if err := <-done; !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("stale holder's apply: %v, want ErrLeaseLost", err)
	}
	if got := readApplied(t, st, "s"); got.Revision != "" || len(got.Specs) != 0 || got.Changes != 0 {
		t.Errorf("the stale holder's revision was written: %+v", got)
	}
	// The new holder applies.
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "new", Set: widgets(1, func(int) int { return 1 }), Lease: &r2}); err != nil {
		t.Fatal(err)
	}
}

// TestLeaseTakeoverOrderedAfterFence: a fenced transaction that passed its check commits
// before any takeover: the takeover is refused (not waited for) until the transaction ends,
// and a fenced transaction that checks after the takeover fails.
func TestLeaseTakeoverOrderedAfterFence(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r1, tx := fencedTx(ctx, t, st)
	if err := st.ReleaseLease(ctx, r1); err != nil { // expired now; r1's transaction is committing
		t.Fatal(err)
	}
	if _, ok, err := st.AcquireLease(ctx, "source:s", "r2", time.Minute); err != nil || ok {
		t.Fatalf("takeover while r1's fenced transaction commits: ok=%v err=%v, want refused", ok, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r2, ok, err := st.AcquireLease(ctx, "source:s", "r2", time.Minute)
	if err != nil || !ok || r2.Term != r1.Term+1 {
		t.Fatalf("takeover after the commit: %+v ok=%v err=%v", r2, ok, err)
	}
	err = pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error { return checkLease(ctx, tx, &r1) })
	if !errors.Is(err, ErrLeaseLost) {
		t.Errorf("r1's fence after the takeover: %v, want ErrLeaseLost", err)
	}
}
