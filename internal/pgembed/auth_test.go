package pgembed

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// withoutPassword returns the cluster's URL for database with the password left out, or
// replaced by pw when pw is not empty.
func withoutPassword(t *testing.T, c *Cluster, database, pw string) string {
	t.Helper()
	u, err := url.Parse(c.URL(database))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(superuser)
	if pw != "" {
		u.User = url.UserPassword(superuser, pw)
	}
	return u.String()
}

// requireAuthFailure checks that connecting to dsn fails for want of the right password.
func requireAuthFailure(t *testing.T, dsn string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err == nil {
		conn.Close(ctx)
		t.Fatal("connected without the password")
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "28P01" { // invalid_password
		t.Fatalf("connect without the password: %v, want a password authentication failure (28P01)", err)
	}
}

// syncBuffer is a log sink that a test reads while the cluster's goroutines may write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestPasswordRequired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var logs syncBuffer
	c, err := Start(ctx, Options{Dir: tempDir(t), Fast: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})

	conn := connect(t, c.URL("trueup")) // the URL carries the password
	requireAuthFailure(t, withoutPassword(t, c, "trueup", ""))
	requireAuthFailure(t, withoutPassword(t, c, "trueup", newPassword()))

	// No TCP at all: the socket, in a folder of the server's user, is the only way in.
	var listen, method string
	if err := conn.QueryRow(ctx, "SHOW listen_addresses").Scan(&listen); err != nil || listen != "" {
		t.Errorf("listen_addresses = %q, %v; want none", listen, err)
	}
	rows, err := conn.Query(ctx, "SELECT DISTINCT auth_method FROM pg_hba_file_rules")
	if err != nil {
		t.Fatal(err)
	}
	methods, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(methods) != 1 || methods[0] != hbaMethod {
		t.Errorf("pg_hba.conf methods %v, want only %s", methods, hbaMethod)
	}
	if err := conn.QueryRow(ctx, "SELECT left(rolpassword, 14) FROM pg_authid WHERE rolname = $1", superuser).Scan(&method); err != nil || method != "SCRAM-SHA-256$" {
		t.Errorf("stored password kind %q, %v; want a SCRAM-SHA-256 verifier", method, err)
	}

	fi, err := os.Stat(c.passwordPath())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("password file mode %v, want 0600", fi.Mode().Perm())
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != os.Geteuid() {
		t.Errorf("password file owned by uid %d, want trueup's %d (not the server's)", st.Uid, os.Geteuid())
	}
	wantDirMode := os.FileMode(0o700)
	if c.acc != nil {
		wantDirMode = 0o711 // root's; only data/ is the server's user's
	}
	if dfi, err := os.Stat(c.Dir()); err != nil || dfi.Mode().Perm() != wantDirMode {
		t.Errorf("cluster folder mode %v, %v; want %v", dfi.Mode().Perm(), err, wantDirMode)
	}
	if _, err := os.Stat(filepath.Join(c.Dir(), ".initdb-pwfile")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("initdb's password file left behind: %v", err)
	}
	if pw, err := c.readPassword(); err != nil || strings.Contains(logs.String(), pw) {
		t.Errorf("the password is in the logs (or unreadable: %v):\n%s", err, logs.String())
	}

	// A restart reads the same password back.
	conn.Close(ctx)
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	connect(t, c.URL("trueup"))
}

// stopAsTrustCluster stops c and leaves it as an older trueup made one: trust in pg_hba.conf
// and no password file (the caller has dropped the role's password).
func stopAsTrustCluster(t *testing.T, c *Cluster) {
	t.Helper()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	hba, err := os.ReadFile(c.hbaPath())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.hbaPath(), bytes.ReplaceAll(hba, []byte(hbaMethod), []byte("trust")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(c.passwordPath()); err != nil {
		t.Fatal(err)
	}
}

// TestTrustClusterGetsPassword turns a cluster into one an older trueup made (trust, no
// password, no password file) and starts it again.
func TestTrustClusterGetsPassword(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := setup(t, "")
	oldPassword := c.password
	conn := connect(t, c.URL("trueup"))
	if _, err := conn.Exec(ctx, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('from before'); ALTER ROLE trueup PASSWORD NULL"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	stopAsTrustCluster(t, c)

	c2 := setup(t, c.Dir())
	if c2.password == "" || c2.password == oldPassword {
		t.Fatal("the old cluster got no new password")
	}
	var v string
	if err := connect(t, c2.URL("trueup")).QueryRow(ctx, "SELECT v FROM kept").Scan(&v); err != nil || v != "from before" {
		t.Fatalf("data after the change: %q, %v", v, err)
	}
	var verifier string
	if err := connect(t, c2.URL("trueup")).QueryRow(ctx, "SELECT rolpassword FROM pg_authid WHERE rolname = $1", superuser).Scan(&verifier); err != nil || !strings.HasPrefix(verifier, "SCRAM-SHA-256$4096:") {
		t.Fatalf("stored password %.14q, %v; want a SCRAM-SHA-256 verifier", verifier, err)
	}
	if trusting, err := c2.hbaTrusts(); err != nil || trusting {
		t.Fatalf("pg_hba.conf still trusts: %v, %v", trusting, err)
	}
	// pg_reload_conf only signals the postmaster: poll until the new rules apply.
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := pgx.Connect(ctx, withoutPassword(t, c2, "trueup", ""))
		if err != nil {
			break
		}
		conn.Close(ctx)
		if time.Now().After(deadline) {
			t.Fatal("still connecting without a password after the reload")
		}
		time.Sleep(20 * time.Millisecond)
	}
	requireAuthFailure(t, withoutPassword(t, c2, "trueup", ""))
	if fi, err := os.Stat(c2.passwordPath()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("password file: %v", err)
	}

	// And at the next start it is a cluster like any other.
	if err := c2.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	connect(t, c2.URL("trueup"))
}

func TestMissingPasswordFileRefused(t *testing.T) {
	t.Parallel()
	c := setup(t, "")
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(c.passwordPath()); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), Options{Dir: c.Dir(), Fast: true})
	if err == nil || !strings.Contains(err.Error(), "password file "+c.passwordPath()+" is missing") {
		t.Fatalf("Start without the password file: %v", err)
	}
}

func TestWrongPasswordRefused(t *testing.T) {
	t.Parallel()
	c := setup(t, "")
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.writePassword(newPassword()); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	_, err := Start(context.Background(), Options{Dir: c.Dir(), Fast: true})
	if err == nil || !strings.Contains(err.Error(), "postgres refuses the password in "+c.passwordPath()) {
		t.Fatalf("Start with another password: %v", err)
	}
	if d := time.Since(begin); d > startTimeout/2 {
		t.Errorf("took %v: a refused password should fail at once, not wait for the start timeout", d)
	}
	t.Log(err)
}

// TestUnreachableDirRefused puts the cluster under a folder the server's user may not enter:
// Start refuses, names the folder, and leaves its mode alone.
func TestUnreachableDirRefused(t *testing.T) {
	t.Parallel()
	closed := filepath.Join(tempDir(t), "closed")
	if err := os.Mkdir(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(closed, "sub", "cluster")
	acc, err := serverAccount()
	if err != nil {
		t.Fatal(err)
	}
	var startErr error
	if acc != nil { // root: the whole of Start
		_, startErr = Start(context.Background(), Options{Dir: dir, Fast: true})
	} else {
		// Not root: the server runs as this user, who can enter its own folders; check the
		// rule with an account that is not the folder's owner.
		startErr = (&account{name: "nobody", uid: 65534, gid: 65534}).ensureDir(dir, slog.New(slog.DiscardHandler))
	}
	if startErr == nil {
		t.Fatal("started a cluster its user cannot reach")
	}
	for _, want := range []string{"cannot reach " + dir, "may not enter " + closed + " (mode -rwx------", "does not widen", "--data-dir"} {
		if !strings.Contains(startErr.Error(), want) {
			t.Errorf("error lacks %q: %v", want, startErr)
		}
	}
	t.Log(startErr)
	fi, err := os.Stat(closed)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("mode of %s changed to %v", closed, fi.Mode().Perm())
	}
	if _, err := os.Stat(filepath.Join(closed, "sub")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("created folders under the refused one: %v", err)
	}
}

// TestCreatedParentsAreOwn: the parents that pgembed creates are its own, so when a umask
// leaves them closed it opens them for the server's user (and touches nothing else). It
// changes the process's umask, so it does not run in parallel.
func TestCreatedParentsAreOwn(t *testing.T) {
	base := tempDir(t)
	acc := &account{name: "nobody", uid: 65534, gid: 65534}
	dir := filepath.Join(base, "made", "by", "trueup")
	old := syscall.Umask(0o077)
	err := acc.ensureDir(dir, slog.New(slog.DiscardHandler))
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{
		base:                              0o711, // the test's, left alone
		filepath.Join(base, "made"):       0o701,
		filepath.Join(base, "made", "by"): 0o701,
		dir:                               0o700, // the cluster folder: prepare sets its owner and mode
	} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %v", p, fi.Mode().Perm(), err, want)
		}
	}
}

func TestRequirePasswordInHBA(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, want string
		changed        bool
	}{
		{"local", "local   all   all   trust", "local all all scram-sha-256", true},
		{"host", "host all all 127.0.0.1/32 trust", "host all all 127.0.0.1/32 scram-sha-256", true},
		{"with comment", "local all all trust # old", "local all all scram-sha-256 # old", true},
		{"comment only", "# local all all trust", "# local all all trust", false},
		{"user named trust", "local all trust scram-sha-256", "local all trust scram-sha-256", false},
		{"already scram", "host all all ::1/128 scram-sha-256", "host all all ::1/128 scram-sha-256", false},
		{"blank", "", "", false},
	} {
		got, changed := requirePasswordInHBA(tc.in)
		if got != tc.want || changed != tc.changed {
			t.Errorf("%s: requirePasswordInHBA(%q) = %q, %v; want %q, %v", tc.name, tc.in, got, changed, tc.want, tc.changed)
		}
	}
}
