package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/status"
)

// byPlace updates each locked row once: by its place when the row is still there, by key
// when an earlier write of the transaction moved it.
func TestByPlace(t *testing.T) {
	st := openTest(t, "s")
	ctx := context.Background()
	applyRefreshed(t, st, "s", "r1", chainSet())
	tx, err := st.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	rows, err := tx.Query(ctx, "SELECT id, ctid::text FROM resource_queue ORDER BY id FOR UPDATE")
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	var places []string
	for rows.Next() {
		var id int64
		var at string
		if err := rows.Scan(&id, &at); err != nil {
			t.Fatal(err)
		}
		ids, places = append(ids, id), append(places, at)
	}
	if rows.Err() != nil || len(ids) != 3 {
		t.Fatalf("locked %d rows: %v", len(ids), rows.Err())
	}
	// The first row moves: its locked place no longer holds it.
	if _, err := tx.Exec(ctx, "UPDATE resource_queue SET claimed_at = now() WHERE id = $1", ids[0]); err != nil {
		t.Fatal(err)
	}
	// The update leaves out the last row by a condition of its own: not found by key either.
	flip := `UPDATE resource_queue q SET dirty = NOT q.dirty FROM unnest($1::bigint[], ` + placesParam(3) + `) AS x(id, at)
		WHERE q.id = x.id AND %s AND q.id <> $2::bigint`
	if err := byPlace(ctx, tx, flip, "resource_queue", "q", ids, ids[2], places); err != nil {
		t.Fatal(err)
	}
	var flipped []int64
	rows, err = tx.Query(ctx, "SELECT id FROM resource_queue WHERE dirty ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	if flipped, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(flipped, ids[:2]) {
		t.Fatalf("rows %v updated once, want %v", flipped, ids[:2])
	}
	// Found by place: a TID scan, not the key.
	for _, sql := range []string{resultQueueSQL, resultResourcesSQL} {
		alias := map[bool]string{true: "q", false: "r"}[sql == resultQueueSQL]
		n := strings.Count(sql, "[]") - strings.Count(sql, "[]::") // the parameters, the places last
		plan := explain(t, tx, strings.Replace(sql, "%s", alias+".ctid = ANY("+placesParam(n)+")", 1), make([]any, n)...)
		if !strings.Contains(plan, "Tid Scan") {
			t.Fatalf("plan without a TID scan:\n%s", plan)
		}
	}
}

// A result that leaves the resource as it was (a resync that finds nothing to do) writes no
// version of the resources row; the time of the reconcile, kept in the queue row, moves on.
func TestUnchangedResultWritesNoResourcesVersion(t *testing.T) {
	st := openTest(t, "s")
	ctx := context.Background()
	applyRefreshed(t, st, "s", "r1", chainSet("Database", "App"))
	version := func() (xmin string, statusAt, reconciled time.Time) {
		t.Helper()
		if err := st.pool.QueryRow(ctx, `SELECT r.xmin::text, r.status_updated_at, q.last_reconcile_time
			FROM resources r JOIN resource_queue q USING (id) WHERE r.kind = 'Network'`).Scan(&xmin, &statusAt, &reconciled); err != nil {
			t.Fatal(err)
		}
		res, err := st.GetResource(ctx, "prod", "Network", "network")
		if err != nil || res.Status.LastReconcileTime == nil || !res.Status.LastReconcileTime.Equal(reconciled) {
			t.Fatalf("the API's lastReconcileTime %v, the queue's %s (%v)", res.Status.LastReconcileTime, reconciled, err)
		}
		return xmin, statusAt, reconciled
	}
	complete := func(message string) {
		t.Helper()
		if _, err := st.pool.Exec(ctx, "UPDATE resource_queue SET run_at = now()"); err != nil {
			t.Fatal(err)
		}
		_, cs := claimNames(t, st)
		if len(cs) != 1 {
			t.Fatalf("claimed %d", len(cs))
		}
		c := cs[0]
		later := time.Now().Add(time.Hour)
		if _, err := st.CompleteBatch(ctx, []Completion{{ID: c.ID, Token: c.LeaseToken, Namespace: c.Namespace, Kind: c.Kind, Name: c.Name, Quiet: true,
			Fn: func(cur Current) Update {
				return Update{Phase: status.PhaseReady, Conditions: cur.Conditions, ObservedGeneration: c.Generation, Message: message, KeepActionState: true,
					RunAt: &later, AppliedRevision: c.Revision, AppliedSpec: c.Spec}
			}}}); err != nil {
			t.Fatal(err)
		}
	}
	complete("in sync")
	xmin1, status1, reconciled1 := version()
	complete("in sync")
	xmin2, status2, reconciled2 := version()
	if xmin2 != xmin1 || !status2.Equal(status1) || !reconciled2.After(reconciled1) {
		t.Fatalf("an unchanged result: xmin %s -> %s, status at %s -> %s, reconciled %s -> %s", xmin1, xmin2, status1, status2, reconciled1, reconciled2)
	}
	complete("in sync, said otherwise")
	xmin3, status3, reconciled3 := version()
	if xmin3 == xmin2 || !status3.After(status2) || !reconciled3.After(reconciled2) {
		t.Fatalf("a changed message: xmin %s -> %s, status at %s -> %s, reconciled %s -> %s", xmin2, xmin3, status2, status3, reconciled2, reconciled3)
	}
}

// A result batch's locking read finds each queue row at the place its claim leased it, or
// where a start or a renewal since left it (a TID scan), and by key when the row moved since
// (a write marking it dirty, a start or a renewal whose place is not passed) or the place
// holds no version of it; an item whose lease moved on is lost either way. A batch whose
// moved row lies below one found at its place is locked by key whole, in id order.
func TestResultLockFindsLeasedPlace(t *testing.T) {
	st := openTest(t, "s")
	ctx := context.Background()
	set := &manifest.Set{}
	for i, kind := range []string{"Alpha", "Beta", "Gamma"} {
		set.Resources = append(set.Resources, depResource("prod", kind, `{}`, i+1))
	}
	applyRefreshed(t, st, "s", "r1", set)
	const stranger = "00000000-0000-4000-8000-000000000000"
	start := func(cs []Claimed) map[string]string {
		starts := make([]Start, len(cs))
		for i, c := range cs {
			starts[i] = Start{ID: c.ID, Token: c.LeaseToken, Generation: c.Generation, Namespace: c.Namespace, Kind: c.Kind, Name: c.Name, Source: c.Source}
		}
		moved, err := st.Started(ctx, starts)
		if err != nil {
			t.Fatal(err)
		}
		return moved
	}
	renew := func(cs []Claimed) map[string]string {
		ids, toks := make([]int64, len(cs)), make([]string, len(cs))
		for i, c := range cs {
			ids[i], toks[i] = c.ID, c.LeaseToken
		}
		moved, lost, err := st.RenewLeases(ctx, "r1", ids, toks, time.Minute) // claimNames claims as r1
		if err != nil || len(lost) != 0 {
			t.Fatalf("renew: lost %v, %v", lost, err)
		}
		return moved
	}
	cases := []struct {
		name    string
		move    string                            // run between the claim and the result
		moveBy  func([]Claimed) map[string]string // a start or a renewal that moves the rows and says where to
		place   func(Claimed) string
		token   func(Claimed) string
		byPlace int // rows the first statement locks
		lost    int
		dirty   int
	}{
		{name: "at their places", place: func(c Claimed) string { return c.QueueAt }, byPlace: 3},
		{name: "no place known", place: func(Claimed) string { return "" }},
		{name: "the highest moved since its claim", move: "UPDATE resource_queue SET dirty = true WHERE id = (SELECT max(id) FROM resource_queue)",
			place: func(c Claimed) string { return c.QueueAt }, byPlace: 2, dirty: 1},
		{name: "the lowest moved since its claim: all by key", move: "UPDATE resource_queue SET dirty = true WHERE id = (SELECT min(id) FROM resource_queue)",
			place: func(c Claimed) string { return c.QueueAt }, byPlace: 0, dirty: 1},
		{name: "started since the claim, at the places the start returned", moveBy: start, byPlace: 3},
		{name: "renewed since the claim, at the places the renewal returned", moveBy: renew, byPlace: 3},
		{name: "started since the claim, at the claim's places: all by key", moveBy: start,
			place: func(c Claimed) string { return c.QueueAt }},
		{name: "places that hold no version it sees", place: func(Claimed) string { return "(0,1)" }},
		{name: "leases moved on", place: func(c Claimed) string { return c.QueueAt },
			token: func(Claimed) string { return stranger }, lost: 3},
	}
	for _, tc := range cases {
		if _, err := st.pool.Exec(ctx, "UPDATE resource_queue SET run_at = now(), lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, dirty = false"); err != nil {
			t.Fatal(err)
		}
		_, cs := claimNames(t, st)
		if len(cs) != 3 {
			t.Fatalf("%s: claimed %d, want 3", tc.name, len(cs))
		}
		if tc.move != "" {
			if _, err := st.pool.Exec(ctx, tc.move); err != nil {
				t.Fatal(err)
			}
		}
		var moved map[string]string
		if tc.moveBy != nil {
			moved = tc.moveBy(cs)
			for _, c := range cs {
				if moved[c.LeaseToken] == "" || moved[c.LeaseToken] == c.QueueAt {
					t.Fatalf("%s: %s moved from %s to %q", tc.name, c.Name, c.QueueAt, moved[c.LeaseToken])
				}
			}
		}
		place := tc.place
		if place == nil {
			place = func(c Claimed) string { return moved[c.LeaseToken] }
		}
		items := make([]Completion, len(cs))
		ids, toks := make([]int64, len(cs)), make([]string, len(cs))
		for i, c := range cs {
			if c.QueueAt == "" {
				t.Fatalf("%s: no place for %s", tc.name, c.Name)
			}
			token := c.LeaseToken
			if tc.token != nil {
				token = tc.token(c)
			}
			items[i] = Completion{ID: c.ID, Token: token, QueueAt: place(c), Namespace: c.Namespace, Kind: c.Kind, Name: c.Name,
				Fn: func(cur Current) Update {
					return Update{Phase: status.PhaseReady, Conditions: cur.Conditions, ObservedGeneration: c.Generation, Message: tc.name, KeepActionState: true,
						AppliedRevision: c.Revision, AppliedSpec: c.Spec}
				}}
			ids[i], toks[i] = c.ID, token
		}
		// The locking read alone, rolled back.
		tx, err := st.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cur, byPlace, err := lockResultRows(ctx, tx, items, ids, toks)
		_ = tx.Rollback(ctx)
		dirty := 0
		for _, c := range cur {
			if c.Dirty {
				dirty++
			}
		}
		if err != nil || byPlace != tc.byPlace || len(cur) != 3-tc.lost || dirty != tc.dirty {
			t.Fatalf("%s: %d locked, %d by place, %d dirty, %v; want %d, %d, %d", tc.name, len(cur), byPlace, dirty, err, 3-tc.lost, tc.byPlace, tc.dirty)
		}
		// The whole result.
		lost, err := st.CompleteBatch(ctx, items)
		if err != nil || len(lost) != tc.lost {
			t.Fatalf("%s: lost %v, %v; want %d lost", tc.name, lost, err, tc.lost)
		}
		var leased int
		if err := st.pool.QueryRow(ctx, "SELECT count(*) FROM resource_queue WHERE lease_owner IS NOT NULL").Scan(&leased); err != nil || leased != tc.lost {
			t.Fatalf("%s: %d rows still leased (%v), want %d", tc.name, leased, err, tc.lost)
		}
	}
	// Found by place: a TID scan, not the key.
	plan := explain(t, st.pool, fmt.Sprintf(resultLockSQL, resultLockByPlace), []int64{1}, []string{stranger}, []string{"(0,1)"})
	if !strings.Contains(plan, "Tid Scan") {
		t.Fatalf("plan without a TID scan:\n%s", plan)
	}
}

// leftToLock decides which items a second locking read takes and whether it may follow the
// first in id order.
func TestLeftToLock(t *testing.T) {
	t.Parallel()
	item := func(id int64, tok string) Completion { return Completion{ID: id, Token: tok} }
	found := func(rows ...leasedRow) map[leasedRow]Current {
		m := map[leasedRow]Current{}
		for _, r := range rows {
			m[r] = Current{}
		}
		return m
	}
	cases := []struct {
		name    string
		items   []Completion
		found   map[leasedRow]Current
		rest    []int
		inOrder bool
	}{
		{"an empty batch", nil, found(), nil, true},
		{"all found", []Completion{item(1, "a"), item(2, "b")}, found(leasedRow{1, "a"}, leasedRow{2, "b"}), nil, true},
		{"none found", []Completion{item(1, "a"), item(2, "b")}, found(), []int{0, 1}, true},
		{"the highest left", []Completion{item(1, "a"), item(2, "b"), item(3, "c")}, found(leasedRow{1, "a"}, leasedRow{2, "b"}), []int{2}, true},
		{"the lowest left", []Completion{item(1, "a"), item(2, "b"), item(3, "c")}, found(leasedRow{2, "b"}, leasedRow{3, "c"}), []int{0}, false},
		{"one in the middle left", []Completion{item(1, "a"), item(2, "b"), item(3, "c")}, found(leasedRow{1, "a"}, leasedRow{3, "c"}), []int{1}, false},
		{"a row found under its other token", []Completion{item(1, "old"), item(1, "a"), item(2, "b")}, found(leasedRow{1, "a"}, leasedRow{2, "b"}), []int{0}, true},
		{"out of order in the batch, left above", []Completion{item(5, "e"), item(2, "b")}, found(leasedRow{2, "b"}), []int{0}, true},
	}
	for _, tc := range cases {
		rest, inOrder := leftToLock(tc.items, tc.found)
		if !slices.Equal(rest, tc.rest) || inOrder != tc.inOrder {
			t.Errorf("%s: rest %v, in order %t; want %v, %t", tc.name, rest, inOrder, tc.rest, tc.inOrder)
		}
	}
}
