package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// Migration 0036 moves the phase's indexes to resource_phases, kept by statement triggers:
// every write of resources (an apply's inserts, status writes, a move to another source,
// deletes, a truncate) leaves resource_phases holding each row's id, source and phase, before
// and after a round trip through the down migration.
func TestMigration0036PhasesFollowResources(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	exec := func(sql string) { t.Helper(); execSQL(t, st, sql) }
	count := func(sql string) int { t.Helper(); return countOf(t, st, sql) }
	check := func(step string, resources int) {
		t.Helper()
		if got := count(`SELECT count(*) FROM resources`); got != resources {
			t.Fatalf("%s: %d resources, want %d", step, got, resources)
		}
		if got := count(`SELECT count(*) FROM resource_phases`); got != resources {
			t.Fatalf("%s: %d phase rows for %d resources", step, got, resources)
		}
		if off := count(`SELECT count(*) FROM resources r LEFT JOIN resource_phases p ON p.id = r.id
			WHERE p.id IS NULL OR (p.source, p.phase) IS DISTINCT FROM (r.source, r.phase)`); off != 0 {
			t.Fatalf("%s: %d resources whose phase row is missing or differs", step, off)
		}
	}
	tableExists := func() bool {
		return count(`SELECT count(*) FROM pg_class WHERE relname = 'resource_phases'`) == 1
	}
	for i, round := range []string{"up", "down", "up again"} {
		switch i {
		case 1:
			runMigrationFile(t, st, "0036_resource_phases.down.sql")
			if tableExists() || count(`SELECT count(*) FROM pg_class WHERE relname IN ('resources_ready', 'resources_unsettled')`) != 2 {
				t.Fatal("down: resource_phases still there, or the phase indexes of resources not back")
			}
			exec(`TRUNCATE resources CASCADE`)
			continue
		case 2:
			// Rows written while the migration was down get their phase rows from it.
			applyRefreshed(t, st, "s", "r-down", chainSet())
			exec(`UPDATE resources SET phase = 'Failed' WHERE kind = 'App'`)
			runMigrationFile(t, st, "0036_resource_phases.up.sql")
			check(round+": migrated", 3)
			exec(`TRUNCATE resources CASCADE`)
		}
		if !tableExists() {
			t.Fatalf("%s: no resource_phases", round)
		}
		applyRefreshed(t, st, "s", fmt.Sprintf("r%d", i+1), chainSet())
		check(round+": applied", 3)
		exec(`UPDATE resources SET phase = 'Ready' WHERE kind <> 'App'`)
		check(round+": two Ready", 3)
		exec(`UPDATE resources SET phase = 'Failed', message = 'x' WHERE kind = 'App'`)
		check(round+": one Failed", 3)
		exec(`UPDATE resources SET message = 'y'`) // no phase moves
		check(round+": a write leaving the phase", 3)
		exec(`UPDATE resources SET source = 't' WHERE kind = 'Network'`)
		check(round+": moved to another source", 3)
		exec(`DELETE FROM resources WHERE kind = 'App'`)
		check(round+": one deleted", 2)
		exec(`TRUNCATE resources CASCADE`)
		check(round+": truncated", 0)
		applyRefreshed(t, st, "s", fmt.Sprintf("r%d-again", i+1), chainSet())
		exec(`TRUNCATE resources, resource_phases, resource_queue, resource_counts CASCADE`)
		check(round+": truncated with the phases", 0)
		// A large write, then one-row writes on the same connection: each finds its rows.
		conn, err := st.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, sql := range []string{
			`INSERT INTO resources (namespace, kind, name, api_version, source, spec_hash, meta_hash, has_deps)
				SELECT 'ns', 'K', 'bulk-' || g, 'v1', 's', 'h', 'h', false FROM generate_series(1, 3000) g`,
			`UPDATE resources SET phase = 'Ready' WHERE name <> 'bulk-1'`,
			`UPDATE resources SET phase = 'Failed' WHERE name = 'bulk-1'`,
			`DELETE FROM resources WHERE name <> 'bulk-1'`,
		} {
			if _, err := conn.Exec(ctx, sql); err != nil {
				conn.Release()
				t.Fatal(err)
			}
		}
		conn.Release()
		check(round+": bulk written", 1)
		exec(`TRUNCATE resources CASCADE`)
	}
}

// With no index on the phase, a status write that moves the phase of every row of a page at
// once (a result batch after a first sync) is a HOT update: no index of resources takes an
// entry for it.
func TestStatusWriteOfEveryRowIsHOT(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r1", Set: widgets(2000, func(int) int { return 1 }), Prune: true}); err != nil {
		t.Fatal(err)
	}
	tx, err := st.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only check
	// The result writer's status columns, as a first reconcile leaves them.
	tag, err := tx.Exec(ctx, `UPDATE resources SET phase = 'Ready', observed_generation = 1, attempt = 0, message = '',
		conditions = '[{"type":"Ready","status":"True","reason":"Succeeded","message":"reconciled","observedGeneration":1,"lastTransitionTime":"2026-11-28T00:00:00Z"}]',
		outputs = '{"id":"w"}', applied_revision = revision, applied_spec = spec, status_updated_at = now()`)
	if err != nil {
		t.Fatal(err)
	}
	var hot int64
	if err := tx.QueryRow(ctx, `SELECT pg_stat_get_xact_tuples_hot_updated('resources'::regclass)`).Scan(&hot); err != nil {
		t.Fatal(err)
	}
	if hot != tag.RowsAffected() || hot != 2000 {
		t.Fatalf("%d of %d status writes HOT, want all 2000", hot, tag.RowsAffected())
	}
	var ready int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM resource_phases WHERE phase = 'Ready'`).Scan(&ready); err != nil || ready != 2000 {
		t.Fatalf("%d Ready in resource_phases, want 2000 (%v)", ready, err)
	}
}

// The recent failures and the counts read resource_phases' partial index of the phases other
// than Ready, never the whole of resources (the list's filters: TestListPhasePlansAllPending).
func TestPhaseReadsUseResourcePhases(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r1", Set: widgets(5000, func(int) int { return 1 }), Prune: true}); err != nil {
		t.Fatal(err)
	}
	// Most rows Ready and a few not, as after the first reconciles.
	if _, err := st.pool.Exec(ctx, `UPDATE resources SET phase = CASE WHEN id % 1000 = 0 THEN 'Failed' ELSE 'Ready' END`); err != nil {
		t.Fatal(err)
	}
	if err := st.SettleAfterBulk(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ what, plan string }{
		{"recent failures", explain(t, st.pool, recentFailuresSQL(""), 10)},
		{"counts", explain(t, st.pool, countAllSQL)},
		{"a source's counts", explain(t, st.pool, sourceTotalsSQL, "s")},
	} {
		if !strings.Contains(c.plan, "resource_phases_unsettled") || strings.Contains(c.plan, "Seq Scan on resources") {
			t.Errorf("%s, not through resource_phases_unsettled:\n%s", c.what, c.plan)
		}
	}
}
