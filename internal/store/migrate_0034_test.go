package store

import (
	"context"
	"fmt"
	"testing"
)

// Migration 0034 replaces resource_queue's foreign key with statement triggers: a delete or a
// truncate of resources takes the queue rows of the rows it removes, before and after a round
// trip through the down migration (which puts the key back).
func TestMigration0034QueueRowsFollowResources(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	count := func(sql string) int { t.Helper(); return countOf(t, st, sql) }
	hasKey := func() bool {
		return count(`SELECT count(*) FROM pg_constraint WHERE conname = 'resource_queue_id_fkey'`) == 1
	}
	check := func(step string, resources int) {
		t.Helper()
		if got := count(`SELECT count(*) FROM resources`); got != resources {
			t.Fatalf("%s: %d resources, want %d", step, got, resources)
		}
		if got := count(`SELECT count(*) FROM resource_queue`); got != resources {
			t.Fatalf("%s: %d queue rows for %d resources", step, got, resources)
		}
		if orphans := count(`SELECT count(*) FROM resource_queue q WHERE NOT EXISTS (SELECT 1 FROM resources r WHERE r.id = q.id)`); orphans != 0 {
			t.Fatalf("%s: %d queue rows without a resource", step, orphans)
		}
	}
	exec := func(sql string) { t.Helper(); execSQL(t, st, sql) }
	rounds := []struct {
		name string
		key  bool
	}{{"up", false}, {"down", true}, {"up again", false}}
	for i, r := range rounds {
		switch i {
		case 1:
			runMigrationFile(t, st, "0034_queue_delete_trigger.down.sql")
		case 2:
			runMigrationFile(t, st, "0034_queue_delete_trigger.up.sql")
		}
		if hasKey() != r.key {
			t.Fatalf("%s: foreign key present %v, want %v", r.name, !r.key, r.key)
		}
		applyRefreshed(t, st, "s", fmt.Sprintf("r%d", i+1), chainSet())
		check(r.name+": applied", 3)
		exec(`DELETE FROM resources WHERE kind = 'App'`)
		check(r.name+": one deleted", 2)
		// Several rows in one statement, the others kept.
		exec(`DELETE FROM resources WHERE kind IN ('Network', 'Nothing')`)
		check(r.name+": another deleted", 1)
		exec(`TRUNCATE resources CASCADE`)
		check(r.name+": truncated", 0)
		if !r.key {
			// The queue and the counts named beside resources in one TRUNCATE (which the
			// counts' trigger of 0029, put back by the down migration, refuses).
			applyRefreshed(t, st, "s", fmt.Sprintf("r%d-again", i+1), chainSet())
			check(r.name+": applied again", 3)
			exec(`TRUNCATE resources, resource_queue, resource_counts CASCADE`)
			check(r.name+": truncated with the queue", 0)
		}
		// A large delete, then a one-row delete on the same connection: each finds its rows.
		conn, err := st.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO resources (namespace, kind, name, api_version, source, spec_hash, meta_hash, has_deps)
			SELECT 'ns', 'K', 'bulk-' || g, 'v1', 's', 'h', 'h', false FROM generate_series(1, 3000) g`); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `DELETE FROM resources WHERE name <> 'bulk-1'`); err != nil {
			t.Fatal(err)
		}
		check(r.name+": bulk deleted", 1)
		if _, err := conn.Exec(ctx, `DELETE FROM resources WHERE name = 'bulk-1'`); err != nil {
			t.Fatal(err)
		}
		conn.Release()
		check(r.name+": the last deleted", 0)
		// An insert and a delete in one transaction leave no queue row either.
		exec(`BEGIN; INSERT INTO resources (namespace, kind, name, api_version, source, spec_hash, meta_hash, has_deps)
			VALUES ('ns', 'K', 'brief', 'v1', 's', 'h', 'h', false); DELETE FROM resources WHERE name = 'brief'; COMMIT`)
		check(r.name+": inserted and deleted", 0)
	}
}
