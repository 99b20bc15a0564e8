package store

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
