package pgtest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func databaseExists(t *testing.T, conn *pgx.Conn, name string) bool {
	t.Helper()
	var exists bool
	err := conn.QueryRow(context.Background(), "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists)
	if err != nil {
		t.Fatal(err)
	}
	return exists
}

func TestDatabasesAreIsolated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := connect(t, pgtest.NewDatabase(t, nil))
	b := connect(t, pgtest.NewDatabase(t, nil))
	if _, err := a.Exec(ctx, "CREATE TABLE only_in_a (id int)"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := b.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("table of database a seen in b: %d, %v", n, err)
	}
	if a.Config().Database == b.Config().Database {
		t.Fatalf("both calls gave database %s", a.Config().Database)
	}
}

func TestDatabaseDroppedAtCleanup(t *testing.T) {
	t.Parallel()
	var name string
	t.Run("user", func(t *testing.T) {
		name = connect(t, pgtest.NewDatabase(t, nil)).Config().Database
	})
	if databaseExists(t, connect(t, pgtest.NewDatabase(t, nil)), name) {
		t.Fatalf("database %s outlived its test", name)
	}
}

var migrations atomic.Int32

// migrate stands in for store.Migrate; it also leaves its connection open, as a careless
// pool might, which must not stop the template from being cloned.
func migrate(ctx context.Context, url string) error {
	migrations.Add(1)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, `
		CREATE TABLE resources (id bigserial PRIMARY KEY, name text NOT NULL UNIQUE);
		INSERT INTO resources (name) VALUES ('from-template');`)
	return err
}

func TestMigrateOncePerProcess(t *testing.T) {
	t.Parallel()
	for i := range 8 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			conn := connect(t, pgtest.NewDatabase(t, migrate))
			var name string
			if err := conn.QueryRow(ctx, "SELECT name FROM resources").Scan(&name); err != nil || name != "from-template" {
				t.Fatalf("template row: %q, %v", name, err)
			}
			// Each clone is its own: this row must not show up in the others.
			if _, err := conn.Exec(ctx, "INSERT INTO resources (name) VALUES ($1)", t.Name()); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM resources").Scan(&n); err != nil || n != 2 {
				t.Fatalf("rows: %d, %v", n, err)
			}
		})
	}
	t.Cleanup(func() {
		if n := migrations.Load(); n != 1 {
			t.Errorf("migrate ran %d times, want once", n)
		}
	})
}

func TestCloneTime(t *testing.T) {
	timeNewDatabase(t, "empty", nil)
	timeNewDatabase(t, "migrated", migrate)
}

func timeNewDatabase(t *testing.T, what string, m func(context.Context, string) error) {
	pgtest.NewDatabase(t, m) // builds the template, if any
	const n = 20
	begin := time.Now()
	for range n {
		pgtest.NewDatabase(t, m)
	}
	t.Logf("NewDatabase (%s): %v per call, %d calls", what, (time.Since(begin) / n).Round(100*time.Microsecond), n)
}

func TestCluster(t *testing.T) {
	t.Parallel()
	c := pgtest.Cluster()
	if os.Getenv(pgtest.EnvURL) != "" {
		if c != nil {
			t.Fatalf("Cluster = %v with %s set", c, pgtest.EnvURL)
		}
		return
	}
	if c == nil || c != pgtest.Cluster() {
		t.Fatal("Cluster should return the one cluster of this process")
	}
	connect(t, c.URL("postgres"))
}

func TestStartCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pgtest.StartCluster(t)
	if c == pgtest.Cluster() {
		t.Fatal("StartCluster returned the shared cluster")
	}
	conn := connect(t, c.URL("trueup"))
	if _, err := conn.Exec(ctx, "CREATE TABLE survives (id int)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := connect(t, c.URL("trueup")).QueryRow(ctx, "SELECT count(*) FROM survives").Scan(&n); err != nil {
		t.Fatal(err)
	}
}

// TestSharedServer runs some of these tests in a child process pointed at a server by
// TRUEUP_TEST_DATABASE_URL, then checks that the child left no database behind.
func TestSharedServer(t *testing.T) {
	if os.Getenv(pgtest.EnvURL) != "" {
		return // this is the child
	}
	t.Parallel()
	c := pgtest.StartCluster(t)
	cmd := exec.Command(os.Args[0], "-test.run=^(TestDatabasesAreIsolated|TestDatabaseDroppedAtCleanup|TestMigrateOncePerProcess|TestCluster)$", "-test.v")
	cmd.Env = append(os.Environ(), pgtest.EnvURL+"="+c.URL("postgres"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tests against %s: %v\n%s", pgtest.EnvURL, err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestMigrateOncePerProcess") {
		t.Fatalf("the child ran no tests:\n%s", out)
	}
	rows, err := connect(t, c.URL("postgres")).Query(context.Background(),
		"SELECT datname FROM pg_database WHERE datname NOT IN ('postgres', 'template0', 'template1', 'trueup')")
	if err != nil {
		t.Fatal(err)
	}
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Fatalf("databases left on the shared server: %v", left)
	}
}
