package store

import (
	"context"
	"testing"
	"time"
)

// ClaimFrom takes the due rows from its floor up, oldest first, and says the run_at of the
// oldest it took; the zero floor takes every due row.
func TestClaimFrom(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r1", Set: widgets(4, func(int) int { return 1 }), Prune: true}); err != nil {
		t.Fatal(err)
	}
	// w00 due ten minutes ago, w01 five, w02 one, w03 not due for an hour.
	var base time.Time
	if err := st.pool.QueryRow(ctx, `SELECT date_trunc('second', now())`).Scan(&base); err != nil {
		t.Fatal(err)
	}
	at := map[string]time.Time{"w00": base.Add(-10 * time.Minute), "w01": base.Add(-5 * time.Minute),
		"w02": base.Add(-time.Minute), "w03": base.Add(time.Hour)}
	for name, when := range at {
		if _, err := st.pool.Exec(ctx, `UPDATE resource_queue q SET run_at = $2 FROM resources r WHERE r.id = q.id AND r.name = $1`, name, when); err != nil {
			t.Fatal(err)
		}
	}
	names := func(cs []Claimed) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}

	got, oldest, err := st.ClaimFrom(ctx, "a", 10, time.Minute, at["w01"])
	if err != nil || len(got) != 2 || got[0].Name != "w01" || got[1].Name != "w02" || !oldest.Equal(at["w01"]) {
		t.Fatalf("from w01's run_at: %v, oldest %v, %v", names(got), oldest, err)
	}
	got, oldest, err = st.ClaimFrom(ctx, "a", 10, time.Minute, at["w01"])
	if err != nil || len(got) != 0 || !oldest.IsZero() {
		t.Fatalf("again from w01's run_at (w00 below it): %v, oldest %v, %v", names(got), oldest, err)
	}
	got, oldest, err = st.ClaimFrom(ctx, "a", 10, time.Minute, time.Time{})
	if err != nil || len(got) != 1 || got[0].Name != "w00" || !oldest.Equal(at["w00"]) {
		t.Fatalf("from the start: %v, oldest %v, %v", names(got), oldest, err)
	}
	if got, err := st.Claim(ctx, "a", 10, time.Minute); err != nil || len(got) != 0 {
		t.Fatalf("nothing left due: %v, %v", names(got), err)
	}
}

// A result that puts its row due at once (the row changed during its call, or its RunAt is
// now) announces due work once it commits: the row's run_at is the write's, which claims scanning from a floor
// may already have passed.
func TestResultDueAtOnceNotifies(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r1", Set: widgets(1, func(int) int { return 1 }), Prune: true}); err != nil {
		t.Fatal(err)
	}
	conn, err := st.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+WorkChannel); err != nil {
		t.Fatal(err)
	}
	notified := func() bool {
		wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		_, err := conn.Conn().WaitForNotification(wctx)
		return err == nil
	}
	for _, tc := range []struct{ dirty, runNow, want bool }{{false, false, false}, {true, false, true}, {false, true, true}} {
		dirty := tc.dirty
		got, err := st.Claim(ctx, "a", 1, time.Minute)
		if err != nil || len(got) != 1 {
			t.Fatalf("claim: %d, %v", len(got), err)
		}
		c := got[0]
		if dirty {
			if _, err := st.pool.Exec(ctx, `UPDATE resource_queue SET dirty = true WHERE id = $1`, c.ID); err != nil {
				t.Fatal(err)
			}
		}
		later := time.Now().Add(time.Hour)
		if _, err := st.CompleteBatch(ctx, []Completion{{ID: c.ID, Token: c.LeaseToken, Namespace: c.Namespace, Kind: c.Kind, Name: c.Name,
			Fn: func(cur Current) Update {
				at := later
				if tc.runNow {
					at = time.Now() // as the reconciler reads its clock for a run now
				}
				return Update{Phase: "Ready", Conditions: cur.Conditions, ObservedGeneration: cur.Generation, RunAt: &at}
			}}}); err != nil {
			t.Fatal(err)
		}
		if got := notified(); got != tc.want {
			t.Errorf("result of a row changed during its call %v, due now %v: notified %v", dirty, tc.runNow, got)
		}
		// Due again for the next round.
		if _, err := st.pool.Exec(ctx, `UPDATE resource_queue SET run_at = now() WHERE id = $1`, c.ID); err != nil {
			t.Fatal(err)
		}
	}
}
