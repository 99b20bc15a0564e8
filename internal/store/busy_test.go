package store

import (
	"context"
	"testing"
	"time"
)

func TestEngineBusy(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	busy := func(want bool, when string) {
		t.Helper()
		got, err := st.EngineBusy(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%s: busy = %v, want %v", when, got, want)
		}
	}
	busy(false, "no resources")
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r1", Set: widgets(2, func(int) int { return 1 }), Prune: true}); err != nil {
		t.Fatal(err)
	}
	busy(true, "work due")
	claimed, err := st.Claim(ctx, "a", 10, time.Minute)
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claim: %d, %v", len(claimed), err)
	}
	busy(true, "leases held")
	ids, toks := []int64{claimed[0].ID, claimed[1].ID}, []string{claimed[0].LeaseToken, claimed[1].LeaseToken}
	if err := st.Release(ctx, "a", ids, toks); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, "UPDATE resource_queue SET run_at = now() + interval '1 hour'"); err != nil {
		t.Fatal(err)
	}
	busy(false, "nothing due until later, no lease")
}
