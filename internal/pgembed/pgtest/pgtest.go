// Package pgtest gives tests real PostgreSQL databases: a fresh database per call, cloned from
// a template that the caller's migrations built once per test process.
//
// The databases live on the server named by TRUEUP_TEST_DATABASE_URL (a superuser or a role
// with CREATEDB, PostgreSQL 13 or later) or, when that is unset, on a private cluster
// (pgembed) that each test process starts on first use, in /dev/shm when that is a roomy
// tmpfs (cloning a database there is 10–20 times faster than on a virtual disk), and stops
// when its tests end. Every package that uses it needs
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// A missing PostgreSQL fails the tests; it never skips them.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/signal"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trueup-dev/trueup/internal/pgembed"
)

// EnvURL names the variable that points the tests at an existing server.
const EnvURL = "TRUEUP_TEST_DATABASE_URL"

const (
	startTimeout   = 2 * time.Minute
	migrateTimeout = 5 * time.Minute
	adminTimeout   = time.Minute
)

// The server is per test process, as TestMain is; this is a test helper's state, not the
// product's.
var (
	mainActive atomic.Bool
	serial     atomic.Int64

	srv struct {
		once      sync.Once
		err       error
		dir       string // private cluster folder, removed by Main
		cluster   *pgembed.Cluster
		adminURL  string // the maintenance database
		externURL string // TRUEUP_TEST_DATABASE_URL, when set
		strategy  string // the CREATE DATABASE clause that clones fastest on this server
	}

	templates sync.Map // code pointer of a migrate func → *template
)

type template struct {
	once sync.Once
	name string // set once the template database exists, even if migrate failed
	err  error
}

// Main runs the tests of a package (call it from TestMain), then drops the templates and
// stops the private cluster if this process started one. An interrupt stops it too.
func Main(m *testing.M) {
	mainActive.Store(true)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s, ok := <-sig
		if !ok {
			return
		}
		fmt.Fprintf(os.Stderr, "pgtest: %v: stopping PostgreSQL\n", s)
		if err := shutdown(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
		os.Exit(1)
	}()

	code := m.Run()

	signal.Stop(sig)
	close(sig)
	if err := shutdown(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// shutdown drops the templates on a shared server, or stops and removes the private cluster.
func shutdown() error {
	if srv.cluster == nil && srv.externURL == "" {
		return nil // never started
	}
	if srv.externURL != "" {
		var errs []error
		templates.Range(func(_, v any) bool {
			if name := v.(*template).name; name != "" {
				errs = append(errs, dropDatabase(name))
			}
			return true
		})
		return errors.Join(errs...)
	}
	err := srv.cluster.Stop()
	if rmErr := os.RemoveAll(srv.dir); rmErr != nil {
		err = errors.Join(err, rmErr)
	}
	return err
}

// Cluster returns this process's private cluster, starting it if needed, or nil when the
// tests use TRUEUP_TEST_DATABASE_URL. It panics when PostgreSQL cannot start.
func Cluster() *pgembed.Cluster {
	if err := server(); err != nil {
		panic("pgtest: " + err.Error())
	}
	return srv.cluster
}

// StartCluster starts a private cluster for one test, one it may stop, restart or break;
// it is stopped and removed at cleanup.
func StartCluster(t testing.TB) *pgembed.Cluster {
	t.Helper()
	return startFor(t, func(ctx context.Context, dir string) (*pgembed.Cluster, error) {
		return pgembed.Start(ctx, pgembed.Options{Dir: dir, Fast: true})
	})
}

// startFor runs start in a fresh folder, then stops the cluster and removes the folder at
// cleanup.
func startFor(t testing.TB, start func(ctx context.Context, dir string) (*pgembed.Cluster, error)) *pgembed.Cluster {
	t.Helper()
	dir, err := os.MkdirTemp(clusterBase(), "trueup-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) }) // runs after the Stop below
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A test that killed the server makes Stop report the crash; that is no failure.
		if err := c.Stop(); err != nil {
			t.Logf("pgtest: %v", err)
		}
	})
	return c
}

// NewDatabase creates an empty database for one test and returns its URL; it is dropped at
// cleanup. With a migrate function, the database is a clone of a template that migrate built
// once per process. Templates are told apart by the function's code, so pass the same named
// function (or method value) every time rather than closures over differing values.
func NewDatabase(t testing.TB, migrate func(ctx context.Context, url string) error) string {
	t.Helper()
	if !mainActive.Load() {
		t.Fatal("pgtest: this package needs func TestMain(m *testing.M) { pgtest.Main(m) }, which stops PostgreSQL after the tests")
	}
	if err := server(); err != nil {
		t.Fatal(err)
	}
	source := "template0" // pristine, unlike template1 on a shared server
	if migrate != nil {
		tp := templateFor(migrate)
		if tp.err != nil {
			t.Fatal(tp.err)
		}
		source = tp.name
	}
	name := fmt.Sprintf("test_%d_%08x", serial.Add(1), rand.Uint32())
	if err := createDatabase(name, source); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dropDatabase(name); err != nil {
			t.Error(err)
		}
	})
	return databaseURL(name)
}

// server starts the private cluster, or checks the shared server, once per process.
func server() error {
	srv.once.Do(func() { srv.err = startServer() })
	return srv.err
}

func startServer() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if u := os.Getenv(EnvURL); u != "" {
		srv.externURL, srv.adminURL = u, u
	} else {
		if _, err := pgembed.FindBinDir(); err != nil {
			return err
		}
		dir, err := os.MkdirTemp(clusterBase(), "trueup-pgtest-")
		if err != nil {
			return err
		}
		c, err := pgembed.Start(ctx, pgembed.Options{Dir: dir, Fast: true, Database: "postgres"})
		if err != nil {
			_ = os.RemoveAll(dir)
			return err
		}
		srv.dir, srv.cluster, srv.adminURL = dir, c, c.URL("postgres")
	}
	conn, err := pgx.Connect(ctx, srv.adminURL)
	if err != nil {
		return fmt.Errorf("connect to the test server (%s): %w", redact(srv.adminURL), err)
	}
	defer conn.Close(ctx)
	var version int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		return fmt.Errorf("test server version: %w", err)
	}
	if version < 130000 {
		return fmt.Errorf("the test server runs PostgreSQL %d; pgtest needs 13 or later", version/10000)
	}
	if version >= 150000 && srv.cluster != nil {
		// WAL_LOG, 15's default, writes every block of the template to the WAL; copying the
		// files is faster for small databases when fsync is off. A shared server may sync,
		// and then the checkpoints of FILE_COPY cost more: it keeps its default.
		srv.strategy = " STRATEGY = FILE_COPY"
	}
	return nil
}

// templateFor builds the template for migrate on first use; later calls wait for it.
func templateFor(migrate func(ctx context.Context, url string) error) *template {
	v, _ := templates.LoadOrStore(reflect.ValueOf(migrate).Pointer(), &template{})
	tp := v.(*template)
	tp.once.Do(func() { tp.err = tp.build(migrate) })
	return tp
}

func (tp *template) build(migrate func(ctx context.Context, url string) error) error {
	name := fmt.Sprintf("template_%d_%d_%08x", os.Getpid(), serial.Add(1), rand.Uint32())
	if err := createDatabase(name, "template0"); err != nil {
		return err
	}
	tp.name = name // from here on Main drops it
	ctx, cancel := context.WithTimeout(context.Background(), migrateTimeout)
	defer cancel()
	if err := migrate(ctx, databaseURL(name)); err != nil {
		return fmt.Errorf("pgtest: migrate the template database: %w", err)
	}
	return admin(func(ctx context.Context, conn *pgx.Conn) error {
		ident := pgx.Identifier{name}.Sanitize()
		if _, err := conn.Exec(ctx, "ALTER DATABASE "+ident+" WITH ALLOW_CONNECTIONS false"); err != nil {
			return fmt.Errorf("pgtest: seal template %s: %w", name, err)
		}
		// A pool that migrate closed may still hold server sessions for a moment, and
		// CREATE DATABASE refuses a template with sessions.
		if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", name); err != nil {
			return fmt.Errorf("pgtest: close sessions on template %s: %w", name, err)
		}
		return nil
	})
}

func createDatabase(name, template string) error {
	return admin(func(ctx context.Context, conn *pgx.Conn) error {
		sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize() +
			" TEMPLATE " + pgx.Identifier{template}.Sanitize() + srv.strategy
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("pgtest: create database %s from %s: %w", name, template, err)
		}
		return nil
	})
}

func dropDatabase(name string) error {
	return admin(func(ctx context.Context, conn *pgx.Conn) error {
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("pgtest: drop database %s: %w", name, err)
		}
		return nil
	})
}

// admin runs fn on a new connection to the maintenance database. A connection per call lets
// parallel tests create their databases at the same time.
func admin(fn func(ctx context.Context, conn *pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, srv.adminURL)
	if err != nil {
		return fmt.Errorf("pgtest: connect to the test server (%s): %w", redact(srv.adminURL), err)
	}
	defer conn.Close(ctx)
	return fn(ctx, conn)
}

func databaseURL(name string) string {
	if srv.cluster != nil {
		return srv.cluster.URL(name)
	}
	return withDatabase(srv.externURL, name)
}

// withDatabase points a URL or a keyword/value connection string at database name.
func withDatabase(dsn, name string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			u.Path, u.RawPath = "/"+name, ""
			q := u.Query()
			if q.Has("dbname") {
				q.Del("dbname")
				u.RawQuery = q.Encode()
			}
			return u.String()
		}
	}
	return dsn + " dbname=" + name // the last setting of a keyword wins
}

// redact hides a password in a connection string for error messages.
func redact(dsn string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "(connection URL)"
		}
		if q := u.Query(); q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	}
	if strings.Contains(dsn, "password") {
		return "(connection string)"
	}
	return dsn
}

// StartStandby starts a streaming standby of primary (pg_basebackup -R) for one test; it is
// stopped and removed at cleanup, before primary.
func StartStandby(t testing.TB, primary *pgembed.Cluster) *pgembed.Cluster {
	t.Helper()
	return startFor(t, primary.StartStandby)
}
