package store

import (
	"context"
	"io/fs"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/migrations"
)

// queueState is one row's queue columns as text, wherever they are stored.
const queueState = `concat_ws(' ', name, run_at IS NOT NULL, lease_owner, lease_token IS NOT NULL, lease_expires_at IS NOT NULL,
	claimed_at IS NOT NULL, started_at IS NOT NULL, dirty, suspended, blocked, manual_requested_by, dependency_by)`

// TestQueueMigrationMovesData applies migration 0030 (resource_queue) to a populated database
// and rolls it back: each transaction keeps every row's due time, lease, flags and requests.
func TestQueueMigrationMovesData(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.NewDatabase(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	var up, down string
	inTx := func(sql string) {
		t.Helper()
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { _, err := tx.Exec(ctx, sql); return err }); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) string {
		b, err := fs.ReadFile(migrations.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, n := range names {
		switch {
		case strings.HasPrefix(n, "0030_") && strings.HasSuffix(n, ".up.sql"):
			up = read(n)
		case strings.HasPrefix(n, "0030_") && strings.HasSuffix(n, ".down.sql"):
			down = read(n)
		case n < "0030_" && strings.HasSuffix(n, ".up.sql"):
			inTx(read(n))
		}
	}
	if up == "" || down == "" {
		t.Fatal("migration 0030 has no up or down file")
	}
	inTx(`INSERT INTO resources (namespace, kind, name, api_version, source, spec_hash, meta_hash, has_deps, run_at, lease_owner, lease_token,
		  lease_expires_at, claimed_at, started_at, dirty, suspended, blocked, manual_requested_by, dependency_by) VALUES
		('ns', 'K', 'idle', 'v1', 's', 'h', 'h', false, NULL, NULL, NULL, NULL, NULL, NULL, false, false, false, NULL, NULL),
		('ns', 'K', 'due', 'v1', 's', 'h', 'h', false, now(), NULL, NULL, NULL, NULL, NULL, false, false, false, 'token:ops', NULL),
		('ns', 'K', 'leased', 'v1', 's', 'h', 'h', true, now(), 'replica-a', gen_random_uuid(), now() + interval '1 minute', now(), now(), true,
		  false, false, NULL, 'ns/K/dep'),
		('ns', 'K', 'held', 'v1', 's', 'h', 'h', true, now(), NULL, NULL, NULL, NULL, NULL, false, true, true, NULL, NULL)`)
	state := func(from string) []string {
		t.Helper()
		rows, err := conn.Query(ctx, "SELECT "+queueState+" FROM "+from+" ORDER BY name")
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := state("resources")
	inTx(up)
	if got := state("resources JOIN resource_queue USING (id)"); strings.Join(got, "\n") != strings.Join(before, "\n") {
		t.Fatalf("after up:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(before, "\n"))
	}
	var cols int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_name = 'resources'
		AND column_name IN ('run_at', 'lease_owner', 'suspended', 'blocked', 'dirty')`).Scan(&cols); err != nil || cols != 0 {
		t.Fatalf("resources keeps %d queue columns (%v)", cols, err)
	}
	// A row created after the migration has its queue entry, due at once.
	inTx(`INSERT INTO resources (namespace, kind, name, api_version, source, spec_hash, meta_hash, has_deps) VALUES ('ns', 'K', 'new', 'v1', 's', 'h', 'h', true)`)
	var fresh string
	if err := conn.QueryRow(ctx, "SELECT "+queueState+" FROM resources JOIN resource_queue USING (id) WHERE name = 'new'").Scan(&fresh); err != nil ||
		fresh != "new t f f f f f f t" {
		t.Fatalf("created row's queue entry %q (%v)", fresh, err)
	}
	inTx(`DELETE FROM resources WHERE name = 'new'`)
	inTx(down)
	if got := state("resources"); strings.Join(got, "\n") != strings.Join(before, "\n") {
		t.Fatalf("after down:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(before, "\n"))
	}
	var queue *string
	if err := conn.QueryRow(ctx, "SELECT to_regclass('resource_queue')::text").Scan(&queue); err != nil || queue != nil {
		t.Fatalf("resource_queue left after down: %v %v", queue, err)
	}
}
