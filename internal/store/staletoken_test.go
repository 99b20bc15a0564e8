package store

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestCompleteResultsStaleToken: a batch of results holding a retaken row's old token beside
// its current one reports the old one lost and writes the current one, whichever comes first.
func TestCompleteResultsStaleToken(t *testing.T) {
	t.Parallel()
	st, old, current := retaken(t)
	ctx := context.Background()
	oldOf := map[int64]Claimed{old[0].ID: old[0], old[1].ID: old[1]}
	stale := func(Current) Update {
		t.Error("the stale item's result was computed")
		return Update{Phase: "Failed", Message: "stale"}
	}
	fresh := func(Current) Update { return Update{Phase: "Ready", ObservedGeneration: 1, Message: "current"} }
	var items []Completion
	var want []int64 // lost: each row's old token, in the batch's order
	for _, c := range current {
		o := oldOf[c.ID]
		if o.LeaseToken == "" || o.LeaseToken == c.LeaseToken {
			t.Fatalf("%s: old token %q, current %q: want the row retaken with a new token", c.Name, o.LeaseToken, c.LeaseToken)
		}
		oldItem := Completion{ID: o.ID, Token: o.LeaseToken, Fn: stale, Namespace: o.Namespace, Kind: o.Kind, Name: o.Name, Source: o.Source}
		curItem := Completion{ID: c.ID, Token: c.LeaseToken, Fn: fresh, Namespace: c.Namespace, Kind: c.Kind, Name: c.Name, Source: c.Source}
		if c.Name == "old-first" {
			items = append(items, oldItem, curItem)
		} else {
			items = append(items, curItem, oldItem)
		}
		want = append(want, o.ID)
	}
	if lost, _, err := st.CompleteResults(ctx, items); err != nil || !slices.Equal(lost, want) {
		t.Errorf("lost %v (%v), want %v: each row's old token", lost, err, want)
	}
	for _, c := range current {
		var phase, msg string
		var owner *string
		if err := st.pool.QueryRow(ctx, "SELECT phase, message, lease_owner FROM resources JOIN resource_queue USING (id) WHERE id = $1", c.ID).Scan(&phase, &msg, &owner); err != nil {
			t.Fatal(err)
		}
		if phase != "Ready" || msg != "current" || owner != nil {
			t.Errorf("%s: phase %s, message %q, owner %v; want Ready, the current result, no lease", c.Name, phase, msg, owner)
		}
	}
}

// TestStartedStaleToken: a batch of starts holding a retaken row's old start beside its
// current one (in either order) records the start from the current one's claim: the change
// written names what the current claim says, never the stale item's.
func TestStartedStaleToken(t *testing.T) {
	t.Parallel()
	st, old, current := retaken(t)
	ctx := context.Background()
	after, err := st.LatestChange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	oldOf := map[int64]Claimed{old[0].ID: old[0], old[1].ID: old[1]}
	var items []Start
	for _, c := range current {
		o := oldOf[c.ID]
		stale := Start{ID: o.ID, Token: o.LeaseToken, Generation: o.Generation, Namespace: o.Namespace, Kind: o.Kind, Name: "stale-" + o.Name, Source: o.Source}
		cur := Start{ID: c.ID, Token: c.LeaseToken, Generation: c.Generation, Namespace: c.Namespace, Kind: c.Kind, Name: c.Name, Source: c.Source}
		if c.Name == "old-first" {
			items = append(items, stale, cur)
		} else {
			items = append(items, cur, stale)
		}
	}
	placed, err := st.Started(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	if len(placed) != len(current) {
		t.Errorf("places of %d started, want the %d current claims'", len(placed), len(current))
	}
	for _, c := range current {
		if placed[c.LeaseToken] == "" || placed[oldOf[c.ID].LeaseToken] != "" {
			t.Errorf("%s: placed %v, want its current token only", c.Name, placed)
		}
	}
	changes, err := st.ChangesSince(ctx, after, 100)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range changes {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	if want := []string{"current-first", "old-first"}; !slices.Equal(names, want) {
		t.Errorf("changes name %v, want %v (the current claims')", names, want)
	}
}

// retaken seeds two rows due ("old-first", "current-first"), claims them as replica a,
// releases them and claims them again as b: old holds the claims with tokens the rows no
// longer have, current those with the rows' tokens.
func retaken(t *testing.T) (st *Store, old, current []Claimed) {
	t.Helper()
	st = openTest(t)
	ctx := context.Background()
	seedDue(t, st, "old-first", "current-first")
	old, err := st.Claim(ctx, "a", 2, time.Minute)
	if err != nil || len(old) != 2 {
		t.Fatalf("claim: %d, %v", len(old), err)
	}
	if err := st.Release(ctx, "a", []int64{old[0].ID, old[1].ID}, []string{old[0].LeaseToken, old[1].LeaseToken}); err != nil {
		t.Fatal(err)
	}
	current, err = st.Claim(ctx, "b", 2, time.Minute)
	if err != nil || len(current) != 2 {
		t.Fatalf("claim again: %d, %v", len(current), err)
	}
	return st, old, current
}
