package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/trueup-dev/trueup/internal/pgembed"
)

// bouncerPoolSize is the server connections the test PgBouncer keeps per database and role:
// fewer than a replica's pools ask for, so that transactions of different clients share them.
const bouncerPoolSize = 8

// PgBouncer starts a PgBouncer in transaction mode (pool_mode=transaction) on loopback in
// front of the database dsn names (a URL from NewDatabase or NewRoleDatabase) and returns
// the URL of the same database and role through it. It runs as the user PostgreSQL runs as
// (the one that may enter the cluster's socket folder), with an auth file of its own that
// holds dsn's role and password, and stops at cleanup. A missing pgbouncer fails the test
// with the command that installs it.
func PgBouncer(t testing.TB, dsn string) string {
	t.Helper()
	return PgBouncerMode(t, dsn, "transaction")
}

// PgBouncerMode is PgBouncer with pool_mode set to mode (session, transaction or statement).
func PgBouncerMode(t testing.TB, dsn, mode string) string {
	t.Helper()
	bin, err := pgembed.FindPgBouncer()
	if err != nil {
		t.Fatal("pgtest: ", err)
	}
	pc, err := pgconn.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("pgtest: parse %s: %v", redact(dsn), err)
	}
	attr, uid, gid, err := pgembed.HelperAttr()
	if err != nil {
		t.Fatal("pgtest: ", err)
	}
	dir, err := os.MkdirTemp("", "trueup-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) }) // after the stop below
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	auth := filepath.Join(dir, "userlist.txt")
	writeOwned(t, auth, fmt.Sprintf("%s %s\n", bouncerQuote(pc.User), bouncerQuote(pc.Password)), uid, gid)
	// A free port can be taken between probing and binding: retry on a fresh one.
	for try := 0; ; try++ {
		port := freePort(t)
		ini := filepath.Join(dir, "pgbouncer.ini")
		writeOwned(t, ini, fmt.Sprintf(`[databases]
%s = host=%s port=%d dbname=%s
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = scram-sha-256
auth_file = %s
pool_mode = %s
default_pool_size = %d
max_client_conn = 500
logfile = %s
pidfile = %s
`, pc.Database, pc.Host, pc.Port, pc.Database, port, auth, mode, bouncerPoolSize,
			filepath.Join(dir, "pgbouncer.log"), filepath.Join(dir, "pgbouncer.pid")), uid, gid)
		cmd := exec.Command(bin, ini)
		cmd.Dir = dir
		cmd.Env = []string{"HOME=" + dir, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C"}
		cmd.SysProcAttr = attr
		if err := cmd.Start(); err != nil {
			t.Fatalf("pgtest: run pgbouncer: %v", err)
		}
		exited := make(chan struct{})
		var exitErr error
		go func() { exitErr = cmd.Wait(); close(exited) }()
		u := url.URL{Scheme: "postgres", User: url.UserPassword(pc.User, pc.Password), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			Path: "/" + pc.Database, RawQuery: "sslmode=disable"}
		err := waitBouncer(u.String(), exited, &exitErr)
		if err == nil {
			t.Cleanup(func() {
				_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM) // immediate shutdown
				select {
				case <-exited:
				case <-time.After(10 * time.Second):
					_ = cmd.Process.Kill()
					<-exited
				}
			})
			return u.String()
		}
		_ = cmd.Process.Kill()
		<-exited
		log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
		if try < 2 && strings.Contains(string(log), "in use") {
			continue
		}
		t.Fatalf("pgtest: pgbouncer did not start: %v\n%s", err, log)
	}
}

// waitBouncer polls until a query through the bouncer succeeds, pgbouncer exits, or 30 s pass.
func waitBouncer(dsn string, exited <-chan struct{}, exitErr *error) error {
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, dsn)
		if err == nil {
			_, err = conn.Exec(ctx, "SELECT 1", pgx.QueryExecModeSimpleProtocol)
			_ = conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		last = err
		select {
		case <-exited:
			return fmt.Errorf("pgbouncer exited: %v", *exitErr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgbouncer not accepting connections after 30s: %w", last)
		}
	}
}

// bouncerQuote is s in double quotes, as PgBouncer's auth file takes it.
func bouncerQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// writeOwned writes a file only uid (PgBouncer's user) may read.
func writeOwned(t testing.TB, path, content string, uid, gid int) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// NewRoleDatabase creates a role that may log in and owns a fresh, empty database, with no
// other right (no superuser, CREATEDB, CREATEROLE, REPLICATION nor BYPASSRLS), as a managed
// PostgreSQL service hands one out; it returns the database's URL as that role. Both are
// dropped at cleanup. On a server named by TRUEUP_TEST_DATABASE_URL its role needs CREATEROLE.
func NewRoleDatabase(t testing.TB) string {
	t.Helper()
	db := databaseNameOf(t, NewDatabase(t, nil))
	role := db + "_owner"
	pw := make([]byte, 16)
	_, _ = rand.Read(pw)
	password := hex.EncodeToString(pw)
	err := admin(func(ctx context.Context, conn *pgx.Conn) error {
		// 13 stores md5 by default, which the private cluster's scram-sha-256 lines refuse.
		if _, err := conn.Exec(ctx, "SET password_encryption = 'scram-sha-256'"); err != nil {
			return err
		}
		ident := pgx.Identifier{role}.Sanitize()
		if _, err := conn.Exec(ctx, "CREATE ROLE "+ident+" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD '"+password+"'"); err != nil {
			return err
		}
		_, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" OWNER TO "+ident)
		return err
	})
	if err != nil {
		t.Fatalf("pgtest: create role %s: %v", role, err)
	}
	// Cleanups run last-in first-out: the database (NewDatabase's cleanup) is dropped after
	// this, so it is given back first.
	t.Cleanup(func() {
		err := admin(func(ctx context.Context, conn *pgx.Conn) error {
			if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)"); err != nil {
				return err
			}
			_, err := conn.Exec(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{role}.Sanitize())
			return err
		})
		if err != nil {
			t.Errorf("pgtest: drop role %s: %v", role, err)
		}
	})
	return withRole(databaseURL(db), role, password)
}

func databaseNameOf(t testing.TB, dsn string) string {
	t.Helper()
	pc, err := pgconn.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("pgtest: parse %s: %v", redact(dsn), err)
	}
	return pc.Database
}

// withRole is dsn as user with password.
func withRole(dsn, user, password string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			u.User = url.UserPassword(user, password)
			q := u.Query()
			if q.Has("user") || q.Has("password") {
				q.Del("user")
				q.Del("password")
				u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
			}
			return u.String()
		}
	}
	return dsn + " user=" + user + " password=" + password // the last setting of a keyword wins
}
