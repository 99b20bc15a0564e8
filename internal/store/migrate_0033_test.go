package store

import (
	"context"
	"testing"
	"time"
)

// Migration 0033 moves each resource's last reconcile time between resources and
// resource_queue, both ways, a NULL staying NULL.
func TestMigration0033ReconcileTime(t *testing.T) {
	st := openTest(t, "s")
	ctx := context.Background()
	applyRefreshed(t, st, "s", "r1", chainSet())
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	if _, err := st.pool.Exec(ctx, `UPDATE resource_queue q SET last_reconcile_time = $1 FROM resources r WHERE r.id = q.id AND r.kind = 'Network'`, at); err != nil {
		t.Fatal(err)
	}
	times := func(table string) map[string]*time.Time {
		t.Helper()
		rows, err := st.pool.Query(ctx, `SELECT r.kind, x.last_reconcile_time FROM resources r JOIN `+table+` x USING (id)`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]*time.Time{}
		for rows.Next() {
			var kind string
			var when *time.Time
			if err := rows.Scan(&kind, &when); err != nil {
				t.Fatal(err)
			}
			out[kind] = when
		}
		return out
	}
	check := func(step, table string) {
		t.Helper()
		got := times(table)
		if len(got) != 3 || got["Network"] == nil || !got["Network"].Equal(at) || got["Database"] != nil || got["App"] != nil {
			t.Fatalf("%s: times in %s %v", step, table, got)
		}
	}
	hasColumn := func(table string) bool {
		t.Helper()
		var ok bool
		if err := st.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_name = $1 AND column_name = 'last_reconcile_time')`,
			table).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	check("up", "resource_queue")
	runMigrationFile(t, st, "0033_reconcile_time_queue.down.sql")
	if hasColumn("resource_queue") {
		t.Fatal("down: resource_queue keeps the column")
	}
	check("down", "(SELECT id, last_reconcile_time FROM resources)")
	runMigrationFile(t, st, "0033_reconcile_time_queue.up.sql")
	if hasColumn("resources") {
		t.Fatal("up again: resources keeps the column")
	}
	check("up again", "resource_queue")
}
