package store

import (
	"context"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/status"
)

// The completion clears the window override it was claimed with, and only that one (stored by
// SQL or by Go: compared to the millisecond); RequeueWindowed makes due the resources a window
// holds.
func TestWindowOverrideAndRequeue(t *testing.T) {
	st := openTest(t, "s")
	ctx := context.Background()
	applyRefreshed(t, st, "s", "r1", chainSet("App", "Database"))
	setOverride := func(id int64, reason string) {
		t.Helper()
		if _, err := st.pool.Exec(ctx, `WITH r AS (UPDATE resources SET
			window_override = jsonb_build_object('actor', 'token:ops', 'reason', $2::text, 'at', clock_timestamp()) WHERE id = $1 RETURNING id)
			UPDATE resource_queue q SET run_at = now() FROM r WHERE q.id = r.id`, id, reason); err != nil {
			t.Fatal(err)
		}
	}
	override := func(id int64) string {
		t.Helper()
		var reason *string
		if err := st.pool.QueryRow(ctx, `SELECT window_override->>'reason' FROM resources WHERE id = $1`, id).Scan(&reason); err != nil {
			t.Fatal(err)
		}
		if reason == nil {
			return ""
		}
		return *reason
	}
	// write completes c, due again at once.
	write := func(c Claimed) {
		t.Helper()
		if _, err := st.CompleteBatch(ctx, []Completion{{ID: c.ID, Token: c.LeaseToken, Namespace: c.Namespace, Kind: c.Kind, Name: c.Name,
			Fn: func(cur Current) Update {
				return Update{Phase: cur.Phase, Conditions: cur.Conditions, ObservedGeneration: cur.ObservedGeneration, ClearWindowOverride: c.WindowOverride,
					RunAt: ptrTo(time.Now())}
			}}}); err != nil {
			t.Fatal(err)
		}
	}
	_, cs := claimNames(t, st)
	id := cs[0].ID
	setOverride(id, "first")
	if _, err := st.pool.Exec(ctx, `UPDATE resource_queue SET lease_owner = NULL, lease_token = NULL`); err != nil {
		t.Fatal(err)
	}
	_, cs = claimNames(t, st)
	var c Claimed
	for _, x := range cs {
		if x.ID == id {
			c = x
		}
	}
	if c.WindowOverride == nil || c.WindowOverride.Reason != "first" {
		t.Fatalf("claimed override %+v", c.WindowOverride)
	}
	// Another override asked for during the call survives its completion.
	setOverride(id, "second")
	write(c)
	if got := override(id); got != "second" {
		t.Fatalf("override after the completion: %q; want second", got)
	}
	_, cs = claimNames(t, st)
	for _, x := range cs {
		if x.ID == id {
			c = x
		}
	}
	write(c)
	if got := override(id); got != "" {
		t.Fatalf("override after its call: %q; want none", got)
	}

	// A resource a window holds alone is due again.
	if _, err := st.pool.Exec(ctx, `UPDATE resource_queue SET run_at = NULL`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.pool.Exec(ctx, `UPDATE resources SET conditions = $2 WHERE id = $1`, id,
		`[{"type":"Ready","status":"Unknown"},{"type":"Reconciling","status":"True","reason":"`+status.ReasonWindowClosed+`","message":"held"}]`); err != nil {
		t.Fatal(err)
	}
	if n, err := st.RequeueWindowed(ctx); err != nil || n != 1 {
		t.Fatalf("RequeueWindowed = %d, %v; want 1", n, err)
	}
	if _, cs = claimNames(t, st); len(cs) != 1 || cs[0].ID != id {
		t.Fatalf("claimed after RequeueWindowed: %+v", cs)
	}
}

func ptrTo[T any](v T) *T { return &v }
