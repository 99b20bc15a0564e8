package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
		var guard bool
		if err := st.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'resource_queue'::regclass AND contype = 'p'),
			  COALESCE((SELECT CASE WHEN i.indisunique THEN 'unique' ELSE 'plain' END FROM pg_index i
			    WHERE i.indexrelid = to_regclass('resource_queue_id')), 'none'),
			  (SELECT relreplident::text FROM pg_class WHERE oid = 'resource_queue'::regclass),
			  EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'resource_queue'::regclass AND tgname = 'resource_queue_guard')`).Scan(&primary, &index, &identity, &guard); err != nil {
			t.Fatal(err)
		}
		if guard == primary {
			t.Fatalf("primary key %v, guard trigger %v: want one of them", primary, guard)
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
		if r.name == "down" {
			// Two rows of one resource, written with triggers off: the down migration keeps one.
			if _, err := st.pool.Exec(ctx, `ALTER TABLE resource_queue DISABLE TRIGGER resource_queue_guard;
				INSERT INTO resource_queue (id, run_at) SELECT id, now() FROM resource_queue;
				ALTER TABLE resource_queue ENABLE TRIGGER resource_queue_guard`); err != nil {
				t.Fatal(err)
			}
		}
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

// Without a unique index on resource_queue.id, a statement trigger refuses a second queue row
// for a resource written by any statement but the insert trigger of resources, and
// RepairQueue removes the second rows written with triggers off (a data-only restore over
// a database that holds them), keeping the leased one: each resource is claimed once.
func TestQueueRowsWrittenTwice(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	applyRefreshed(t, st, "s", "r1", chainSet())
	perID := func() (rows, ids int) {
		t.Helper()
		if err := st.pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT id) FROM resource_queue").Scan(&rows, &ids); err != nil {
			t.Fatal(err)
		}
		return rows, ids
	}
	refused := []struct{ name, sql string }{
		{"insert", "INSERT INTO resource_queue (id, run_at) SELECT id, now() FROM resource_queue"},
		{"update of id", "UPDATE resource_queue SET id = (SELECT min(id) FROM resource_queue) WHERE id = (SELECT max(id) FROM resource_queue)"},
	}
	for _, r := range refused {
		_, err := st.pool.Exec(ctx, r.sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "23505" || !strings.Contains(pe.Message, "two rows for resource id") {
			t.Fatalf("%s: err %v, want a unique violation naming the resource", r.name, err)
		}
		if rows, ids := perID(); rows != 3 || ids != 3 {
			t.Fatalf("%s: %d queue rows for %d resources after the refused statement", r.name, rows, ids)
		}
	}
	// A row put back by hand for a resource that has none is not refused.
	if _, err := st.pool.Exec(ctx, `WITH d AS (DELETE FROM resource_queue WHERE id = (SELECT min(id) FROM resource_queue) RETURNING id)
		INSERT INTO resource_queue (id, run_at) SELECT id, now() FROM d`); err != nil {
		t.Fatal(err)
	}

	// Rows written with the guard off, as pg_restore --data-only --disable-triggers does; the
	// copy of the Network's row holds a lease, the Database's is suspended.
	tx, err := st.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		"ALTER TABLE resource_queue DISABLE TRIGGER resource_queue_guard",
		`INSERT INTO resource_queue (id, run_at, suspended, lease_owner, lease_token, lease_expires_at)
		  SELECT q.id, now(), r.kind = 'Database', CASE WHEN r.kind = 'Network' THEN 'restored' END,
		    CASE WHEN r.kind = 'Network' THEN gen_random_uuid() END, CASE WHEN r.kind = 'Network' THEN now() END
		  FROM resource_queue q JOIN resources r ON r.id = q.id`,
		"ALTER TABLE resource_queue ENABLE TRIGGER resource_queue_guard",
	} {
		if _, err := tx.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if rows, ids := perID(); rows != 6 || ids != 3 {
		t.Fatalf("written with triggers off: %d queue rows for %d resources, want 6 for 3", rows, ids)
	}
	for i, want := range []int64{3, 0} {
		removed, err := st.RepairQueue(ctx)
		if err != nil || removed != want {
			t.Fatalf("repair %d: removed %d, %v; want %d", i+1, removed, err, want)
		}
	}
	if rows, ids := perID(); rows != 3 || ids != 3 {
		t.Fatalf("after the repair: %d queue rows for %d resources", rows, ids)
	}
	var owner string
	if err := st.pool.QueryRow(ctx, `SELECT COALESCE(q.lease_owner, '') FROM resource_queue q JOIN resources r ON r.id = q.id
		WHERE r.kind = 'Network'`).Scan(&owner); err != nil || owner != "restored" {
		t.Fatalf("the Network's row kept: lease owner %q, %v; want the leased copy", owner, err)
	}
	var suspended bool
	if err := st.pool.QueryRow(ctx, `SELECT q.suspended FROM resource_queue q JOIN resources r ON r.id = q.id
		WHERE r.kind = 'Database'`).Scan(&suspended); err != nil || !suspended {
		t.Fatalf("the Database's row kept: suspended %v, %v; want suspended as its copy was", suspended, err)
	}
	if _, err := st.pool.Exec(ctx, "UPDATE resource_queue SET run_at = now(), lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL"); err != nil {
		t.Fatal(err)
	}
	if kinds, _ := claimNames(t, st); len(kinds) != 1 || kinds[0] != "Network" {
		t.Fatalf("claimed %v, want [Network]", kinds)
	}
	if kinds, _ := claimNames(t, st); len(kinds) != 0 {
		t.Fatalf("claimed %v again", kinds)
	}
}

// RepairSummaries repairs resource_phases, resource_counts and resource_queue when rows of
// resources were written with triggers off (a data-only restore of resources alone), leaves
// them be when
// they account for every resource, keeps readers of resource_phases going, and keeps the
// counts right when retention folds them meanwhile.
func TestRepairSummaries(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	applyRefreshed(t, st, "s", "r1", chainSet())
	check := func(want Summaries) {
		t.Helper()
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		got, err := st.RepairSummaries(rctx)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("repair: %+v, %v; want %+v", got, err, want)
		}
	}
	check(Summaries{Resources: 3, Phases: 3, Counted: 3, Queued: 3})

	// Copies of three resources written with triggers off (no phase, count or queue row), two
	// of them with their dependency edges; one phase row lost, a phase row and a queue row of no
	// resource.
	tx, err := st.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		"ALTER TABLE resources DISABLE TRIGGER USER",
		"CREATE TEMP TABLE copied ON COMMIT DROP AS SELECT * FROM resources WHERE kind = 'Network'",
		"UPDATE copied SET id = id + 1000, name = name || '-restored', source = 'other', phase = 'Failed'",
		"INSERT INTO resources OVERRIDING SYSTEM VALUE SELECT * FROM copied",
		"CREATE TEMP TABLE app ON COMMIT DROP AS SELECT * FROM resources WHERE kind = 'App'",
		"UPDATE app SET id = id + 2000, name = 'app-restored'",
		"INSERT INTO resources OVERRIDING SYSTEM VALUE SELECT * FROM app",
		"INSERT INTO resource_edges SELECT resource_id + 2000, dep_namespace, dep_kind, dep_name, explicit, outputs FROM resource_edges WHERE resource_id = (SELECT id - 2000 FROM app)",
		"ALTER TABLE resources ENABLE TRIGGER USER",
		"ALTER TABLE resource_queue DISABLE TRIGGER resource_queue_guard",
		"INSERT INTO resource_queue (id, run_at) VALUES (999999, now())",
		"ALTER TABLE resource_queue ENABLE TRIGGER resource_queue_guard",
		// The App's copy waits for the Database, Ready; the Database's for the Network, not.
		`UPDATE resources SET phase = 'Ready', generation = greatest(generation, 1), observed_generation = greatest(generation, 1),
		  outputs = '{"endpoint": "db:5432"}' WHERE kind = 'Database'`,
		"CREATE TEMP TABLE db ON COMMIT DROP AS SELECT * FROM resources WHERE kind = 'Database'",
		"ALTER TABLE resources DISABLE TRIGGER USER",
		"UPDATE db SET id = id + 3000, name = 'database-restored', phase = 'Pending'",
		"INSERT INTO resources OVERRIDING SYSTEM VALUE SELECT * FROM db",
		"INSERT INTO resource_edges SELECT resource_id + 3000, dep_namespace, dep_kind, dep_name, explicit, outputs FROM resource_edges WHERE resource_id = (SELECT id - 3000 FROM db)",
		"ALTER TABLE resources ENABLE TRIGGER USER",
		"DELETE FROM resource_phases WHERE id = (SELECT min(id) FROM resource_phases)",
		"INSERT INTO resource_phases (id, source, phase) VALUES (999999, 'gone', 'Ready')",
	} {
		if _, err := tx.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// A reader of resource_phases holds its transaction through the repair.
	reader, err := st.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback(ctx) //nolint:errcheck
	var n int
	if err := reader.QueryRow(ctx, "SELECT count(*) FROM resource_phases WHERE phase <> 'Ready'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	check(Summaries{Resources: 6, Phases: 3, Counted: 3, Queued: 4, Repaired: []string{"resource_phases", "resource_counts", "resource_queue"}})
	check(Summaries{Resources: 6, Phases: 6, Counted: 6, Queued: 6})
	var phases, counts string
	if err := st.pool.QueryRow(ctx, `SELECT
		(SELECT string_agg(p.source || '/' || p.phase, ',' ORDER BY p.id) FROM resource_phases p JOIN resources r USING (id, source, phase)),
		(SELECT string_agg(source || '=' || n, ',' ORDER BY source) FROM (SELECT source, sum(n) AS n FROM resource_counts GROUP BY source) c)`).Scan(&phases, &counts); err != nil {
		t.Fatal(err)
	}
	if strings.Count(phases, ",") != 5 || !strings.Contains(phases, "other/Failed") || counts != "other=1,s=5" {
		t.Fatalf("repaired: phases %s, counts %s", phases, counts)
	}
	// The copies' queue rows, made as the insert trigger makes them and looked at as after an
	// apply: the copy without dependencies due, the App's copy due (its Database is Ready),
	// the Database's copy waiting for its Network, which is not.
	queued := map[string][2]bool{}
	rows, err := st.pool.Query(ctx, `SELECT r.name, q.run_at IS NOT NULL AND q.lease_owner IS NULL, q.blocked
		FROM resource_queue q JOIN resources r USING (id) WHERE r.name LIKE '%restored'`)
	if err != nil {
		t.Fatal(err)
	}
	var name string
	var due, blocked bool
	if _, err := pgx.ForEachRow(rows, []any{&name, &due, &blocked}, func() error { queued[name] = [2]bool{due, blocked}; return nil }); err != nil {
		t.Fatal(err)
	}
	if want := map[string][2]bool{"network-restored": {true, false}, "app-restored": {true, false}, "database-restored": {true, true}}; !reflect.DeepEqual(queued, want) {
		t.Fatalf("the copies' queue rows (due, blocked): %v, want %v", queued, want)
	}

	// Counts off while retention folds them (its transaction open through the repair).
	if _, err := st.pool.Exec(ctx, "INSERT INTO resource_counts (source, n) VALUES ('s', 5)"); err != nil {
		t.Fatal(err)
	}
	fold := openFold(t, st)
	check(Summaries{Resources: 6, Phases: 6, Counted: 11, Queued: 6, Repaired: []string{"resource_counts"}})
	if err := fold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	check(Summaries{Resources: 6, Phases: 6, Counted: 6, Queued: 6})
}
