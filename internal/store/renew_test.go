package store

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestRenewLeases: a renewal extends the leases of the given rows held by owner with their
// tokens, and returns as lost the tokens whose lease is gone (given back, or a token that is
// not the row's); a lease of another owner is neither renewed nor touched.
func TestRenewLeases(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	seedDue(t, st, "l1", "l2", "l3", "l4")
	mine, err := st.Claim(ctx, "a", 3, time.Second)
	if err != nil || len(mine) != 3 {
		t.Fatalf("claim: %d, %v", len(mine), err)
	}
	theirs, err := st.Claim(ctx, "b", 1, time.Second)
	if err != nil || len(theirs) != 1 {
		t.Fatalf("claim: %d, %v", len(theirs), err)
	}
	expires := func(id int64) time.Duration {
		t.Helper()
		var left time.Duration
		if err := st.pool.QueryRow(ctx, "SELECT lease_expires_at - now() FROM resource_queue WHERE id = $1", id).Scan(&left); err != nil {
			t.Fatal(err)
		}
		return left
	}
	// mine[2] is given back; the token of theirs is given with mine[1]'s row.
	if err := st.Release(ctx, "a", []int64{mine[2].ID}, []string{mine[2].LeaseToken}); err != nil {
		t.Fatal(err)
	}
	ids := []int64{mine[0].ID, mine[1].ID, mine[2].ID, mine[1].ID}
	toks := []string{mine[0].LeaseToken, mine[1].LeaseToken, mine[2].LeaseToken, theirs[0].LeaseToken}
	placed, lost, err := st.RenewLeases(ctx, "a", ids, toks, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range mine[:2] {
		var at string
		if err := st.pool.QueryRow(ctx, "SELECT ctid::text FROM resource_queue WHERE id = $1", c.ID).Scan(&at); err != nil || placed[c.LeaseToken] != at {
			t.Errorf("%s: renewal placed it at %q, it lies at %s (%v)", c.Name, placed[c.LeaseToken], at, err)
		}
	}
	if len(placed) != 2 {
		t.Errorf("renewal placed %v, want the two renewed", placed)
	}
	slices.Sort(lost)
	want := []string{mine[2].LeaseToken, theirs[0].LeaseToken}
	slices.Sort(want)
	if !slices.Equal(lost, want) {
		t.Errorf("lost %v, want %v (the released lease and a token not the row's)", lost, want)
	}
	for _, c := range mine[:2] {
		if left := expires(c.ID); left < 50*time.Minute {
			t.Errorf("%s: lease expires in %s, want about an hour (renewed)", c.Name, left)
		}
	}
	if left := expires(theirs[0].ID); left > time.Minute {
		t.Errorf("another owner's lease was renewed: expires in %s", left)
	}
	if placed, lost, err := st.RenewLeases(ctx, "a", nil, nil, time.Hour); err != nil || lost != nil || placed != nil {
		t.Errorf("renewing nothing: %v, %v, %v", placed, lost, err)
	}
}
