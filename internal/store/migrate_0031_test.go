package store

import (
	"context"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/migrations"
)

// Migration 0031 adds events_source_created on a populated database and its down migration
// drops it; either way the list's phase filter finds the same rows, and with resources_phase
// gone (0030) a rare phase is read through the partial index resources_unsettled, not by a walk.
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
	// hasIndex: events_source_created is missing (as before 0031); resources_phase never
	// comes back.
	hasIndex := func() bool {
		t.Helper()
		var phase, created bool
		if err := st.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_indexes WHERE indexname = 'resources_phase'),
			EXISTS (SELECT 1 FROM pg_indexes WHERE indexname = 'events_source_created')`).Scan(&phase, &created); err != nil {
			t.Fatal(err)
		}
		if phase {
			t.Fatal("resources_phase exists after 0030")
		}
		return !created
	}
	failed := func() []string {
		t.Helper()
		rs, _, err := st.ListResources(ctx, Everything, ResourceFilter{Phase: "Failed"})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range rs {
			names = append(names, r.Metadata.Name)
		}
		return names
	}
	run := func(file string) {
		t.Helper()
		sql, err := fs.ReadFile(migrations.FS, file)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.pool.Exec(ctx, string(sql)); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	want := []string{"w07", "w42"}
	if hasIndex() || !slices.Equal(failed(), want) {
		t.Fatalf("migrated: index %v, failed %v", hasIndex(), failed())
	}
	// A generic plan of the phase filter, as a prepared statement reaches after five runs.
	var plan string
	tx, err := st.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_generic_plan; SET LOCAL enable_seqscan = off;
		PREPARE phase_filter(text) AS SELECT id FROM resources WHERE phase = $1 AND phase <> 'Ready' ORDER BY namespace, lower(kind), name LIMIT 101`); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, `EXPLAIN (COSTS OFF) EXECUTE phase_filter('Failed')`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan += line + "\n"
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, "resources_unsettled") {
		t.Errorf("a generic plan of the phase filter does not use resources_unsettled:\n%s", plan)
	}

	run("0031_create_cost.down.sql")
	if !hasIndex() || !slices.Equal(failed(), want) {
		t.Errorf("down: index %v, failed %v", hasIndex(), failed())
	}
	run("0031_create_cost.up.sql")
	if hasIndex() || !slices.Equal(failed(), want) {
		t.Errorf("up again: index %v, failed %v", hasIndex(), failed())
	}
}
