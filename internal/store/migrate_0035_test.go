package store

import (
	"context"
	"fmt"
	"testing"
)

// Migration 0035 gives resource_queue's key a plain index instead of a primary key (and
// full replica identity for logical replication); the queue works the same before and after
// a round trip through the down migration, which puts the primary key back.
func TestMigration0035QueueKeyNotUnique(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	shape := func() (primary bool, index string, identity string) {
		t.Helper()
		if err := st.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'resource_queue'::regclass AND contype = 'p'),
			  COALESCE((SELECT CASE WHEN i.indisunique THEN 'unique' ELSE 'plain' END FROM pg_index i
			    WHERE i.indexrelid = to_regclass('resource_queue_id')), 'none'),
			  (SELECT relreplident::text FROM pg_class WHERE oid = 'resource_queue'::regclass)`).Scan(&primary, &index, &identity); err != nil {
			t.Fatal(err)
		}
		return primary, index, identity
	}
	rounds := []struct {
		name     string
		file     string
		primary  bool
		index    string
		identity string
	}{
		{"up", "", false, "plain", "f"},
		{"down", "0035_queue_id_not_unique.down.sql", true, "none", "d"},
		{"up again", "0035_queue_id_not_unique.up.sql", false, "plain", "f"},
	}
	for i, r := range rounds {
		if r.file != "" {
			runMigrationFile(t, st, r.file)
		}
		if primary, index, identity := shape(); primary != r.primary || index != r.index || identity != r.identity {
			t.Fatalf("%s: primary key %v, index resource_queue_id %s, replica identity %s; want %v, %s, %s",
				r.name, primary, index, identity, r.primary, r.index, r.identity)
		}
		// The queue: the chain's first resource (its dependents wait for it) is claimed, once.
		applyRefreshed(t, st, "s", fmt.Sprintf("r%d", i+1), chainSet())
		if _, err := st.pool.Exec(ctx, "UPDATE resource_queue SET run_at = now(), lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL"); err != nil {
			t.Fatal(err)
		}
		if kinds, _ := claimNames(t, st); len(kinds) != 1 || kinds[0] != "Network" {
			t.Fatalf("%s: claimed %v, want [Network]", r.name, kinds)
		}
		if kinds, _ := claimNames(t, st); len(kinds) != 0 {
			t.Fatalf("%s: claimed %v again", r.name, kinds)
		}
	}
}
