package pgembed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// setup starts a fast cluster in dir (a fresh tempDir when empty) and stops it at cleanup.
func setup(t *testing.T, dir string) *Cluster {
	t.Helper()
	if dir == "" {
		dir = tempDir(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Dir: dir, Fast: true, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// tempDir returns a new folder for one test, removed at cleanup. t.TempDir's parent is a
// 0700 folder of the testing package, which the server's user cannot enter when the tests run
// as root, and pgembed refuses to open up a folder it did not create; this one is the test's
// own, so the test makes it traversable (not listable) itself.
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgembed-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) }) // registered first, so it runs after Stop
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	return dir
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

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

func TestStartStopRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	begin := time.Now()
	c := setup(t, "")
	t.Logf("cold start (initdb + start): %v", time.Since(begin).Round(time.Millisecond))

	conn := connect(t, c.URL("trueup"))
	var one int
	if err := conn.QueryRow(ctx, "select 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("select 1 = %d, %v", one, err)
	}
	if _, err := conn.Exec(ctx, "create table kept (v text); insert into kept values ('before restart')"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := pgx.Connect(ctx, c.URL("trueup")); err == nil {
		t.Fatal("connected to a stopped cluster")
	}

	begin = time.Now()
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("warm start (Restart on existing data): %v", time.Since(begin).Round(time.Millisecond))
	var v string
	if err := connect(t, c.URL("trueup")).QueryRow(ctx, "select v from kept").Scan(&v); err != nil || v != "before restart" {
		t.Fatalf("after restart: %q, %v", v, err)
	}

	begin = time.Now()
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("Restart while running: %v", time.Since(begin).Round(time.Millisecond))
}

func TestServerRunsUnprivileged(t *testing.T) {
	t.Parallel()
	c := setup(t, "")
	var dataDir string
	err := connect(t, c.URL("trueup")).QueryRow(context.Background(),
		"select current_setting('data_directory')").Scan(&dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if dataDir != filepath.Join(c.Dir(), "data") {
		t.Errorf("data_directory = %s, want %s/data", dataDir, c.Dir())
	}

	uids := processUIDs(t, c.proc.pid)
	for _, uid := range uids {
		if os.Geteuid() == 0 && uid == 0 {
			t.Fatalf("postmaster runs as root (uids %v)", uids)
		}
		if os.Geteuid() != 0 && uid != os.Geteuid() {
			t.Fatalf("postmaster uids %v, want %d", uids, os.Geteuid())
		}
	}
	t.Logf("postmaster pid %d uids %v", c.proc.pid, uids)
}

// processUIDs returns the real, effective, saved and filesystem uids from /proc/pid/status.
func processUIDs(t *testing.T, pid int) []int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			var uids []int
			for _, f := range strings.Fields(rest) {
				n, err := strconv.Atoi(f)
				if err != nil {
					t.Fatal(err)
				}
				uids = append(uids, n)
			}
			return uids
		}
	}
	t.Fatalf("no Uid line in /proc/%d/status", pid)
	return nil
}

func TestLongDirUsesShortSocketDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(tempDir(t), strings.Repeat("long-cluster-folder-", 6))
	c := setup(t, dir)
	if c.socketDir == c.Dir() {
		t.Fatalf("socket in %s (%d bytes)", c.socketDir, len(c.socketDir))
	}
	if !strings.HasPrefix(filepath.Base(c.socketDir), "trueup-pg-") || len(filepath.Join(c.socketDir, socketName)) > maxSocketPath {
		t.Fatalf("socket folder %s", c.socketDir)
	}
	if _, err := os.Stat(filepath.Join(c.socketDir, socketName)); err != nil {
		t.Fatal(err)
	}
	connect(t, c.URL("trueup"))

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.socketDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket folder left behind after Stop: %v", err)
	}
	if err := c.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	connect(t, c.URL("trueup"))
}

func TestShortDirKeepsSocketInside(t *testing.T) {
	t.Parallel()
	if got := socketDirFor("/srv/x/.trueup/postgres", false); got != "/srv/x/.trueup/postgres" {
		t.Errorf("socketDirFor = %s", got)
	}
	if got := socketDirFor("/srv/x/.trueup/postgres", true); got != "/srv/x/.trueup/postgres/socket" {
		t.Errorf("socketDirFor(root) = %s", got)
	}
	long := "/" + strings.Repeat("x", 100)
	if a, b := socketDirFor(long, false), socketDirFor(long, true); a != b || a == long {
		t.Errorf("socketDirFor(long) = %s, %s: want one stable short folder", a, b)
	}
}

func TestSecondStartOnLiveClusterFails(t *testing.T) {
	t.Parallel()
	c := setup(t, "")
	_, err := Start(context.Background(), Options{Dir: c.Dir(), Fast: true})
	want := fmt.Sprintf("a PostgreSQL server already runs on %s (pid %d)", c.Dir(), c.proc.pid)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("second Start: %v, want %q", err, want)
	}
}

func TestStartAfterCrash(t *testing.T) {
	t.Parallel()
	c := setup(t, "")
	pid := c.proc.pid
	// A crash: the whole process group dies at once, leaving postmaster.pid and the socket
	// lock file behind.
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, -pid)
	// Backends lead process groups of their own (postgres calls setsid), so they outlive the
	// group's kill for a moment, attached to the shared memory that a new postmaster then
	// refuses to share. They notice their parent's death by themselves.
	waitNoProcessIn(t, filepath.Join(c.Dir(), "data"))
	if err := c.Stop(); err == nil {
		t.Error("Stop after a crash reported no error")
	}
	if _, err := os.Stat(filepath.Join(c.Dir(), "data", "postmaster.pid")); err != nil {
		t.Fatalf("the crash left no pid file: %v", err)
	}

	c2 := setup(t, c.Dir())
	var one int
	if err := connect(t, c2.URL("trueup")).QueryRow(context.Background(), "select 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
}

// waitNoProcessIn waits until no process works in dir, as every PostgreSQL process of a
// cluster works in its data folder.
func waitNoProcessIn(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		procs, _ := filepath.Glob("/proc/[0-9]*/cwd")
		busy := ""
		for _, p := range procs {
			if cwd, err := os.Readlink(p); err == nil && cwd == dir {
				busy = p
				break
			}
		}
		if busy == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still works in %s", filepath.Dir(busy), dir)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitGone waits until kill(pid, 0) fails; a negative pid names a process group.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still alive", pid)
		}
		<-tick.C
	}
}

func TestStartFailureShowsLog(t *testing.T) {
	t.Parallel()
	c := setup(t, "")
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	// Data of another major version: postgres starts, logs a FATAL line and exits.
	if err := os.WriteFile(filepath.Join(c.Dir(), "data", "PG_VERSION"), []byte("9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := c.Restart(context.Background())
	if err == nil {
		t.Fatal("Restart on data of another version succeeded")
	}
	if !strings.Contains(err.Error(), "postgres.log (last lines)") || !strings.Contains(err.Error(), "incompatible with server") {
		t.Fatalf("error lacks the server log: %v", err)
	}
	t.Log(err)
}

func TestInterruptedInitdb(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	scratch := filepath.Join(dir, "data.initdb")
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(scratch, "PG_VERSION"), []byte("15\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := setup(t, dir)
	connect(t, c.URL("trueup"))
	if _, err := os.Stat(scratch); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("scratch folder left: %v", err)
	}
}

func TestFindBinDir(t *testing.T) {
	t.Parallel()
	dir, err := FindBinDir()
	if err != nil {
		t.Fatal(err) // a missing PostgreSQL fails loudly; it never skips
	}
	if !hasServerBinaries(dir) {
		t.Fatalf("%s lacks initdb or postgres", dir)
	}
}

func TestNewestDebianBinDir(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, tc := range []struct {
		version  string
		binaries []string
	}{
		{"9.6", []string{"initdb", "postgres"}},
		{"13", []string{"initdb", "postgres"}},
		{"15", []string{"psql"}}, // client only
		{"16", []string{"initdb"}},
		{"latest", []string{"initdb", "postgres"}},
	} {
		bin := filepath.Join(root, tc.version, "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range tc.binaries {
			if err := os.WriteFile(filepath.Join(bin, name), nil, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, ok := newestDebianBinDir(root)
	if want := filepath.Join(root, "13", "bin"); !ok || got != want {
		t.Fatalf("newestDebianBinDir = %s, %v; want %s", got, ok, want)
	}
	if _, ok := newestDebianBinDir(filepath.Join(root, "none")); ok {
		t.Fatal("found binaries in a missing folder")
	}
}

const orphanEnv = "PGEMBED_TEST_ORPHAN_DIR"

// TestOrphanShutsDown kills a process that runs a cluster without stopping it, and expects
// the postmaster to shut itself down rather than keep the data folder locked.
func TestOrphanShutsDown(t *testing.T) {
	if dir := os.Getenv(orphanEnv); dir != "" {
		c, err := Start(context.Background(), Options{Dir: dir, Fast: true})
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Printf("PID %d\n", c.proc.pid)
		select {} // wait to be killed
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOrphanShutsDown$")
	cmd.Env = append(os.Environ(), orphanEnv+"="+tempDir(t))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := 0
	for sc := bufio.NewScanner(out); pid == 0 && sc.Scan(); {
		if rest, ok := strings.CutPrefix(sc.Text(), "PID "); ok {
			pid, _ = strconv.Atoi(rest)
		} else {
			t.Log(sc.Text())
		}
	}
	if pid == 0 {
		t.Fatal("helper did not start a cluster")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, -pid)
}

// The psql command serve prints opens the database as it stands, through a shell, with the
// password read from its file; a folder with a space in its name stays one word.
func TestPsqlCommandConnects(t *testing.T) {
	t.Parallel()
	c := setup(t, filepath.Join(tempDir(t), "my cluster"))
	cmd := c.PsqlCommand("trueup")
	if strings.Contains(cmd, c.password) {
		t.Fatalf("the command shows the password: %s", cmd)
	}
	if !strings.Contains(cmd, "-p 5432 -U trueup trueup") || !strings.Contains(cmd, "$(cat '"+c.passwordPath()+"')") {
		t.Errorf("command %s", cmd)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sh", "-c", cmd+" -XAtc 'select current_user || current_database()'").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "trueuptrueup" {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/srv/x/.trueup/postgres": "/srv/x/.trueup/postgres",
		"/srv/my cluster":         "'/srv/my cluster'",
		"it's":                    `'it'\''s'`,
		"$(rm)":                   "'$(rm)'",
		"":                        "''",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
