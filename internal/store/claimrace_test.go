package store

import (
	"context"
	"testing"
	"time"
)

// TestClaimSeesCommittedDeletionMark (review of issue 26, H1): an apply that marks a row for deletion (and asks for
// a run in resource_queue) commits while a claim statement is running, after the claim's
// snapshot. The claim locks the newest queue row (EvalPlanQual) but returns the resources row
// of its snapshot: a claim of a row being deleted that says Deleting=false, with dirty
// cleared. Before 0030 the claim locked and returned the newest resources row.
func TestClaimSeesCommittedDeletionMark(t *testing.T) {
	st := openTest(t, "infra")
	ctx := context.Background()
	// 60,000 rows due before x, locked by another transaction: the claim skips them one by
	// one, which gives the apply below time to commit after the claim's snapshot.
	if _, err := st.pool.Exec(ctx, `INSERT INTO resources (namespace, kind, name, api_version, source, revision, spec_hash, meta_hash, phase, generation, conditions)
		SELECT 'default', 'Queue', 'f' || g, 'mq.example.com/v1', 'infra', 'r1', 'h', 'm', 'Ready', 1, '[]'::jsonb FROM generate_series(1, 60000) g`); err != nil {
		t.Fatal(err)
	}
	var x int64
	if err := st.pool.QueryRow(ctx, `INSERT INTO resources (namespace, kind, name, api_version, source, revision, spec_hash, meta_hash, phase, generation, conditions)
		VALUES ('default', 'Queue', 'x', 'mq.example.com/v1', 'infra', 'r1', 'h', 'm', 'Ready', 1, '[]'::jsonb) RETURNING id`).Scan(&x); err != nil {
		t.Fatal(err)
	}
	if _, err := st.pool.Exec(ctx, `UPDATE resource_queue SET run_at = CASE WHEN id = $1 THEN now() - interval '1 minute' ELSE now() - interval '1 hour' END`, x); err != nil {
		t.Fatal(err)
	}
	if _, err := st.pool.Exec(ctx, "ANALYZE resource_queue"); err != nil {
		t.Fatal(err)
	}
	holder, err := st.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := holder.Exec(ctx, "SELECT 1 FROM resource_queue WHERE id <> $1 FOR UPDATE", x); err != nil {
		t.Fatal(err)
	}
	type res struct {
		c   []Claimed
		err error
		d   time.Duration
	}
	// The apply's transaction begins before the claim (as a real apply does: it reads and
	// compares first), so its now() is earlier than the claim's.
	tx, err := st.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT now()"); err != nil {
		t.Fatal(err)
	}
	done := make(chan res, 1)
	go func() {
		t0 := time.Now()
		c, err := st.Claim(ctx, "w1", 1, time.Minute)
		done <- res{c, err, time.Since(t0)}
	}()
	// Wait until the claim's statement shows as active, then for it to be planned and under
	// way (it skips the locked rows for half a second or more; x is the last due row).
	for deadline := time.Now().Add(10 * time.Second); ; {
		var n int
		if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE state = 'active'
			AND backend_xmin IS NOT NULL AND query LIKE '%FOR UPDATE OF q SKIP LOCKED%' AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			time.Sleep(100 * time.Millisecond)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the claim's statement never showed as active")
		}
		time.Sleep(time.Millisecond)
	}
	// The apply's markGone, as apply.go writes it: resources first, then the queue row.
	t1 := time.Now()
	if _, err := tx.Exec(ctx, `UPDATE resources SET deletion_timestamp = now(), attempt = 0, revision = 'r2' WHERE id = $1`, x); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE resource_queue q SET run_at = now(), dirty = q.lease_owner IS NOT NULL WHERE id = $1`, x); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	committed := time.Since(t1)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Logf("claim took %v, the apply committed in %v after its statement began", r.d, committed)
	if len(r.c) != 1 || r.c[0].ID != x {
		t.Fatalf("claimed %v, want x", r.c)
	}
	var deleting, dirty bool
	if err := st.pool.QueryRow(ctx, `SELECT deletion_timestamp IS NOT NULL, dirty FROM resources JOIN resource_queue USING (id) WHERE id = $1`, x).Scan(&deleting, &dirty); err != nil {
		t.Fatal(err)
	}
	// When the claim locks x before the apply's write (the claim reached x within the
	// wait above), the apply finds x leased and marks it dirty: the worker runs it again and
	// reads the mark then. What must not happen is a lease of the unmarked row with dirty
	// cleared.
	if deleting && !r.c[0].Deleting && !dirty {
		t.Errorf("the claim holds x's lease (dirty=%v) but says Deleting=false while the committed row is marked for deletion (revision %q): the worker applies what the apply removed", dirty, r.c[0].Revision)
	}
}
