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
