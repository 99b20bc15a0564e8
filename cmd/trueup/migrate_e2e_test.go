package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

// `trueup migrate` (daemon.Database.Migrate, which every start runs too) keeps one
// resource_queue row per resource when rows were written twice with triggers off, removes
// the rows of no resource, and says what it removed.
func TestMigrateRemovesQueueRowsWrittenTwice(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t, store.MigrateURL)
	// Two rows for resource 7 and one for 8, written as pg_restore --disable-triggers writes.
	conn := execSQL(t, dbURL,
		"BEGIN",
		"ALTER TABLE resource_queue DISABLE TRIGGER resource_queue_guard",
		"INSERT INTO resource_queue (id, run_at) VALUES (7, now()), (7, now()), (8, now())",
		"ALTER TABLE resource_queue ENABLE TRIGGER resource_queue_guard",
		"COMMIT")
	// Resources 7 and 8 do not exist: their rows go too, once one of 7's is gone.
	runMigrate(t, dbURL, "applied 0 migrations []\nremoved 1 resource_queue row written twice for one resource (rows written with triggers off, as by a data-only restore over existing rows)\n"+
		"repaired resource_queue from resources, which holds 0 rows: resource_phases held 0, resource_counts counted 0 and resource_queue held 2 (rows written with triggers off, as by a data-only restore)\n",
		"applied 0 migrations []\n")
	var rows int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM resource_queue").Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("queue after migrate: %d rows, %v; want none", rows, err)
	}
}

// `trueup migrate` repairs resource_phases, resource_counts and resource_queue when rows of
// resources were written with triggers off (a data-only restore of resources alone), and
// says so.
func TestMigrateRepairsSummaries(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t, store.MigrateURL)
	conn := execSQL(t, dbURL,
		"BEGIN",
		"ALTER TABLE resources DISABLE TRIGGER USER",
		`INSERT INTO resources (namespace, kind, name, api_version, source, spec_hash, meta_hash)
		  VALUES ('default', 'Widget', 'w1', 'example.com/v1', 'restored', 'h', 'h'), ('default', 'Widget', 'w2', 'example.com/v1', 'restored', 'h', 'h')`,
		"ALTER TABLE resources ENABLE TRIGGER USER",
		"COMMIT")
	repaired := "repaired resource_phases, resource_counts and resource_queue from resources, which holds 2 rows: resource_phases held 0, resource_counts counted 0 and resource_queue held 0 (rows written with triggers off, as by a data-only restore)\n"
	runMigrate(t, dbURL, "applied 0 migrations []\n"+repaired, "applied 0 migrations []\n")
	var phases, total, queued int
	if err := conn.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM resource_phases), (SELECT sum(n) FROM resource_counts WHERE source = 'restored'),
		(SELECT count(*) FROM resource_queue)`).Scan(&phases, &total, &queued); err != nil || phases != 2 || total != 2 || queued != 2 {
		t.Fatalf("after migrate: %d phase rows, %d counted, %d queue rows, %v; want 2, 2, 2", phases, total, queued, err)
	}
}

// execSQL runs statements on a connection to dbURL, which it returns (closed with the test).
func execSQL(t *testing.T, dbURL string, sqls ...string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	for _, sql := range sqls {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	return conn
}

// runMigrate runs `trueup migrate` on dbURL once for each output in wants, which it checks.
func runMigrate(t *testing.T, dbURL string, wants ...string) {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), "trueup.yaml")
	writeTestFile(t, cfgPath, "sources: []\n")
	for _, want := range wants {
		cmd := exec.Command(os.Args[0], "migrate", "--config", cfgPath)
		cmd.Env = append(os.Environ(), "TRUEUP_TEST_RUN_MAIN=1", "TRUEUP_DATABASE_URL="+dbURL)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || string(out) != want {
			t.Fatalf("trueup migrate: %q, %v (%s); want %q", out, err, stderr.String(), want)
		}
	}
}
