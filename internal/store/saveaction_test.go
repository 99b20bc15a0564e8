package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestSaveActionStateAfterRelease (review of issue 26, H2): a worker's checkpoint waits on the resources row while the
// lease is being released (the reaper or a dead replica's release holds the row); once the
// release commits, the checkpoint must fail with ErrLeaseLost and write nothing. The token
// check is a join with resource_queue, which the update re-checks with the queue row of its
// snapshot (the one holding the old token).
func TestSaveActionStateAfterRelease(t *testing.T) {
	st := openTest(t, "infra")
	ctx := context.Background()
	x := claimOne(t, st)
	rel, err := st.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rel.Rollback(ctx)
	// What releaseLeased does: lock both rows, write the status, clear the lease.
	if _, err := rel.Exec(ctx, `SELECT 1 FROM resources r JOIN resource_queue q ON q.id = r.id WHERE r.id = $1 FOR UPDATE OF r, q`, x.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := rel.Exec(ctx, `UPDATE resources SET phase = 'Pending' WHERE id = $1`, x.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := rel.Exec(ctx, `UPDATE resource_queue SET lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, run_at = now() WHERE id = $1`, x.ID); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- st.SaveActionState(ctx, x.ID, x.LeaseToken, []byte(`{"by":"A"}`)) }()
	time.Sleep(300 * time.Millisecond)
	if err := rel.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	err = <-done
	var state *string
	if err := st.pool.QueryRow(ctx, "SELECT action_state::text FROM resources WHERE id = $1", x.ID).Scan(&state); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, ErrLeaseLost) || state != nil {
		s := "<nil>"
		if state != nil {
			s = *state
		}
		t.Errorf("SaveActionState after the release: err %v, action_state %s; want ErrLeaseLost and nothing written", err, s)
	}
}

// TestSaveActionStateNUL: a checkpoint whose JSON holds the \u0000 escape, which jsonb
// refuses, is stored with U+FFFD in its place; the text \u0000 stays as written.
func TestSaveActionStateNUL(t *testing.T) {
	st := openTest(t, "infra")
	ctx := context.Background()
	x := claimOne(t, st)
	if err := st.SaveActionState(ctx, x.ID, x.LeaseToken, []byte(`{"nul":"a\u0000b","text":"\\u0000"}`)); err != nil {
		t.Fatal(err)
	}
	var nul, text string
	if err := st.pool.QueryRow(ctx, "SELECT action_state->>'nul', action_state->>'text' FROM resources WHERE id = $1", x.ID).Scan(&nul, &text); err != nil {
		t.Fatal(err)
	}
	if nul != "a\ufffdb" || text != `\u0000` {
		t.Errorf("stored %q and %q, want %q and %q", nul, text, "a\ufffdb", `\u0000`)
	}
}

// TestSaveActionStateNumber: a checkpoint holding a number jsonb cannot hold is refused saying
// why (not quoting the number, which may hold a secret's digits); the stored state stays.
func TestSaveActionStateNumber(t *testing.T) {
	st := openTest(t, "infra")
	ctx := context.Background()
	x := claimOne(t, st)
	if err := st.SaveActionState(ctx, x.ID, x.LeaseToken, []byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	err := st.SaveActionState(ctx, x.ID, x.LeaseToken, []byte(`{"n":1e-16384}`))
	if err == nil || !strings.Contains(err.Error(), "a number beyond PostgreSQL's numeric (more than 16383 digits after the decimal point)") || strings.Contains(err.Error(), "16384") {
		t.Fatalf("SaveActionState: %v, want why, without the number", err)
	}
	var s string
	if err := st.pool.QueryRow(ctx, "SELECT action_state::text FROM resources WHERE id = $1", x.ID).Scan(&s); err != nil || s != `{"n": 1}` {
		t.Errorf("action_state %s (%v), want the last checkpoint's", s, err)
	}
}

// claimOne seeds resource x of source infra, due, and claims it as replica A.
func claimOne(t *testing.T, st *Store) Claimed {
	t.Helper()
	seedDue(t, st, "x")
	cs, err := st.Claim(context.Background(), "A", 1, time.Minute)
	if err != nil || len(cs) != 1 {
		t.Fatalf("claim: %v %v", cs, err)
	}
	return cs[0]
}
