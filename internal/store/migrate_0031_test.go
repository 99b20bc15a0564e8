package store

import (
	"context"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/trueup-dev/trueup/migrations"
)

// Migration 0031 adds events_source_created and resources_ready on a populated database and
// its down migration drops both, each checked on its own; the list's phase filters find the
// same rows before and after the round trip.
func TestMigration0031UpAndDown(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r1", Set: widgets(60, func(i int) int { return i })}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.pool.Exec(ctx, `UPDATE resources SET phase = CASE WHEN name IN ('w07', 'w42') THEN 'Failed' ELSE 'Ready' END;
		ANALYZE resources`); err != nil {
		t.Fatal(err)
	}
	indexes := func(when string, want bool) {
		t.Helper()
		for _, name := range []string{"events_source_created", "resources_ready"} {
			var has bool
			if err := st.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_indexes WHERE indexname = $1)", name).Scan(&has); err != nil {
				t.Fatal(err)
			}
			if has != want {
				t.Errorf("%s: index %s exists %v, want %v", when, name, has, want)
			}
		}
	}
	phase := func(when, p string, want int) {
		t.Helper()
		rs, _, err := st.ListResources(ctx, Everything, ResourceFilter{Phase: p, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range rs {
			names = append(names, r.Metadata.Name)
		}
		if len(names) != want || p == "Failed" && !slices.Equal(names, []string{"w07", "w42"}) {
			t.Errorf("%s: phase %s lists %d: %v, want %d", when, p, len(names), names, want)
		}
	}
	run := func(file string) { runMigrationFile(t, st, file) }
	phase("migrated", "Failed", 2)
	phase("migrated", "Ready", 58)
	// On the schema 0031 was written for (0036 moves the phase's indexes to resource_phases,
	// which the list reads): the indexes alone.
	run("0036_resource_phases.down.sql")
	indexes("0036 down", true)
	run("0031_create_cost.down.sql")
	indexes("down", false)
	run("0031_create_cost.up.sql")
	indexes("up again", true)
	run("0036_resource_phases.up.sql")
	phase("0036 up again", "Failed", 2)
	phase("0036 up again", "Ready", 58)
	for _, f := range []string{"0031_create_cost.up.sql", "0031_create_cost.down.sql"} {
		sql, err := fs.ReadFile(migrations.FS, f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(sql), "resources_phase") {
			t.Errorf("%s touches resources_phase (0030's)", f)
		}
	}
}

// listPlan is the plan of the list's own statement for f at step (resourcePage, statement),
// as the list runs it: unnamed (pgx.QueryExecModeExec), so planned with the parameters' values.
func listPlan(t *testing.T, st *Store, f ResourceFilter, step phaseStep, ids []int64) string {
	t.Helper()
	q, err := resourcePage(Everything, f, "")
	if err != nil {
		t.Fatal(err)
	}
	sql, args := q.statement("id, has_deps, "+resourceColumns, withQueue, step, ids)
	return explain(t, st.pool, sql, args...)
}

// explain is the plan of sql with args, its lines joined.
func explain(t *testing.T, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, sql string, args ...any) string {
	t.Helper()
	rows, err := q.Query(context.Background(), "EXPLAIN "+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// countOf is the single integer sql reads (a count) on st's database.
func countOf(t *testing.T, st *Store, sql string) int {
	t.Helper()
	var n int
	if err := st.pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// execSQL runs sql on st's database.
func execSQL(t *testing.T, st *Store, sql string) {
	t.Helper()
	if _, err := st.pool.Exec(context.Background(), sql); err != nil {
		t.Fatal(err)
	}
}

// runMigrationFile runs one migration file of migrations.FS on st's database.
func runMigrationFile(t *testing.T, st *Store, file string) {
	t.Helper()
	sql, err := fs.ReadFile(migrations.FS, file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.pool.Exec(context.Background(), string(sql)); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// Right after a large first sync every row is Pending: ?phase=Ready finds the phase empty
// through resource_phases_ready, and another phase through resource_phases_unsettled
// (migration 0036 moves the phase's indexes there), never by reading the table.
func TestListPhasePlansAllPending(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r1", Set: widgets(5000, func(int) int { return 1 }), Prune: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.pool.Exec(ctx, "ANALYZE resources, resource_phases"); err != nil {
		t.Fatal(err)
	}
	for phase, index := range map[string]string{"Ready": "resource_phases_ready", "Failed": "resource_phases_unsettled"} {
		q, err := resourcePage(Everything, ResourceFilter{Phase: phase}, "")
		if err != nil {
			t.Fatal(err)
		}
		sql, args := phaseIDsSQL(q, phaseIDCap+1)
		if plan := explain(t, st.pool, sql, args...); !strings.Contains(plan, index) || strings.Contains(plan, "Seq Scan on resource_phases") {
			t.Errorf("the ids of phase %s with every row Pending, not through %s:\n%s", phase, index, plan)
		}
		var steps []phaseStep
		st.pageStep = func(s phaseStep) { steps = append(steps, s) }
		items, _, err := st.ListResources(ctx, Everything, ResourceFilter{Phase: phase})
		st.pageStep = nil
		if err != nil || len(items) != 0 || !slices.Equal(steps, []phaseStep{phaseWalk, phaseByID}) {
			t.Errorf("phase %s with every row Pending: %d items, steps %v, %v", phase, len(items), steps, err)
		}
	}
}

// After an apply that creates many rows the planner has their statistics at once: a label
// selector that matches nothing is answered through the labels index, not by walking the
// list's order through every row (the default estimate expects one row in fifty to match).
func TestBulkApplyPlansLabelsThroughTheirIndex(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	res, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r1", Set: widgets(analyzeAfterCreated, func(int) int { return 1 }), Prune: true})
	if err != nil || !res.Settle {
		t.Fatalf("apply: settle %v, %v", res.Settle, err)
	}
	if err := st.SettleAfterBulk(ctx); err != nil {
		t.Fatal(err)
	}
	var analyzed int
	if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_user_tables
		WHERE relname IN ('resources', 'resource_queue') AND last_analyze IS NOT NULL`).Scan(&analyzed); err != nil || analyzed != 2 {
		t.Errorf("tables analyzed after a bulk apply: %d of 2, %v", analyzed, err)
	}
	plan := listPlan(t, st, ResourceFilter{LabelSelector: "trueup.dev/bench=none"}, phaseWalk, nil)
	if !strings.Contains(plan, "resources_labels") {
		t.Errorf("a label selector after a bulk apply, not through resources_labels:\n%s", plan)
	}
	var pending int64
	if err := st.pool.QueryRow(ctx, `SELECT gin_clean_pending_list('resources_labels')`).Scan(&pending); err != nil || pending != 0 {
		t.Errorf("the labels index's pending list after a bulk apply: %d pages, %v", pending, err)
	}
}
