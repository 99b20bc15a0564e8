// Package pgembed owns a private PostgreSQL cluster in a folder: `trueup serve` runs one when
// no database URL is configured, and the tests run one per test process (see pgtest).
//
// The cluster listens on a Unix socket only (no TCP port, not even on loopback), in a folder
// that only the server's user (and root) can enter, and asks every connection for the
// superuser's password (scram-sha-256): a random one made at initdb and kept in
// Dir/password, mode 0600, readable by trueup's user alone (see auth.go). A cluster created
// by an older trueup, which trusted every connection, gets a password at its next start.
// When trueup runs as root, initdb and postgres run as the user postgres (or nobody),
// because postgres refuses root; pgembed then changes the permissions of no folder it did
// not create, and refuses a cluster folder that user cannot reach (see account.go). The
// cluster folder stays root's (0711) and only Dir/data and the socket folder (Dir/socket, or
// one in the temporary folder) are that user's; root opens what that user can reach without
// following symbolic links and changes it through descriptors only (see safefile.go).
package pgembed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const (
	superuser = "trueup"
	port      = 5432
	// socketName is the file postgres creates in the socket folder for port.
	socketName = ".s.PGSQL.5432"

	startTimeout = 30 * time.Second
	// stopTimeout bounds a fast shutdown before escalating to an immediate one.
	stopTimeout  = 30 * time.Second
	logTailLines = 20
)

// Options configure Start.
type Options struct {
	// Dir is the cluster folder, created if missing; the data lives in Dir/data and the
	// server log in Dir/postgres.log.
	Dir    string
	Logger *slog.Logger
	// Database is created if missing; default "trueup".
	Database string
	// Fast turns durability off (fsync, synchronous_commit, full_page_writes, and the
	// sync after initdb) for tests; a crash of the machine can then corrupt the cluster.
	Fast bool
	// Settings are server settings ("name=value", each passed as -c) besides the cluster's
	// own, applied after them: a bench sizes the server as a production one of its size.
	Settings []string
}

// Cluster is a running (or stopped) private PostgreSQL server.
type Cluster struct {
	dir, dataDir, socketDir, logPath, binDir string
	fast                                     bool
	settings                                 []string
	acc                                      *account
	log                                      *slog.Logger
	password                                 string // the superuser's; set by Start

	mu   sync.Mutex
	proc *postmaster // nil while stopped
}

// postmaster is one run of the server process.
type postmaster struct {
	pid      int
	ready    atomic.Bool   // accepted a connection; an exit before is reported by start
	stopping chan struct{} // closed by Stop, so the waiter knows the exit was asked for
	exited   chan struct{} // closed after err is set
	err      error
}

// Start creates the cluster on first use (initdb), starts postgres, waits until it accepts
// connections and creates opts.Database if missing. Stop it with Stop.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Dir == "" {
		return nil, errors.New("start postgres: no cluster folder given")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	database := opts.Database
	if database == "" {
		database = "trueup"
	}
	binDir, err := FindBinDir()
	if err != nil {
		return nil, err
	}
	acc, err := serverAccount()
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		dir:       dir,
		dataDir:   filepath.Join(dir, "data"),
		socketDir: socketDirFor(dir, acc != nil),
		logPath:   filepath.Join(dir, "postgres.log"),
		binDir:    binDir,
		fast:      opts.Fast,
		settings:  opts.Settings,
		acc:       acc,
		log:       log.With("pg_dir", dir),
	}
	if pid, ok := c.runningPID(); ok { // before prepare touches a live server's files
		return nil, c.alreadyRunning(pid)
	}
	if err := c.prepare(); err != nil {
		return nil, fmt.Errorf("start postgres in %s: %w", dir, err)
	}
	if err := c.initdb(ctx); err != nil {
		return nil, fmt.Errorf("start postgres in %s: %w", dir, err)
	}
	trusting, err := c.hbaTrusts()
	if err != nil {
		return nil, fmt.Errorf("start postgres in %s: %w", dir, err)
	}
	if c.password == "" {
		if err := c.loadPassword(trusting); err != nil {
			return nil, fmt.Errorf("start postgres in %s: %w", dir, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.start(ctx); err != nil {
		return nil, fmt.Errorf("start postgres in %s: %w", dir, err)
	}
	if trusting {
		if err := c.secure(ctx); err != nil {
			_ = c.stop()
			return nil, fmt.Errorf("start postgres in %s: %w", dir, err)
		}
	}
	if err := c.createDatabase(ctx, database); err != nil {
		_ = c.stop()
		return nil, fmt.Errorf("start postgres in %s: %w", dir, err)
	}
	return c, nil
}

// Dir returns the cluster folder as an absolute path.
func (c *Cluster) Dir() string { return c.dir }

// PsqlCommand is the shell command that opens psql on database in this cluster as its
// superuser, the password read from its file (so the command shows no secret): how a person
// looks into the private database. It uses the cluster's own psql when the server's folder
// has one.
func (c *Cluster) PsqlCommand(database string) string {
	psql := filepath.Join(c.binDir, "psql")
	if _, err := os.Stat(psql); err != nil {
		psql = "psql"
	}
	return fmt.Sprintf("PGPASSWORD=$(cat %s) %s -h %s -p %d -U %s %s",
		shellQuote(c.passwordPath()), shellQuote(psql), shellQuote(c.socketDir), port, superuser, shellQuote(database))
}

// shellQuote is s as one word of a POSIX shell: as it is when it holds only characters no
// shell treats specially, else in single quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+:,@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// URL returns a pgx connection URL for database over the cluster's Unix socket, as the
// superuser. It carries the superuser's password: hand it to pgx, never to a log or an
// error message (url.URL.Redacted hides the password).
func (c *Cluster) URL(database string) string {
	u := url.URL{
		Scheme: "postgres",
		User:   url.UserPassword(superuser, c.password),
		Path:   "/" + database,
		// %20, not Encode's "+", for a space: pgx reads "+" in host as itself.
		RawQuery: strings.ReplaceAll(url.Values{
			"host":    {c.socketDir},
			"port":    {strconv.Itoa(port)},
			"sslmode": {"disable"},
		}.Encode(), "+", "%20"),
	}
	return u.String()
}

// Stop shuts the server down fast (open transactions are rolled back, then a checkpoint)
// and waits for it to exit. It is safe to call twice, on a stopped cluster, and on the nil
// cluster of a failed Start.
func (c *Cluster) Stop() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stop()
}

// Restart stops the server and starts it again on the same data.
func (c *Cluster) Restart(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.stop(); err != nil {
		return err
	}
	if err := c.start(ctx); err != nil {
		return fmt.Errorf("restart postgres in %s: %w", c.dir, err)
	}
	return nil
}

// prepare creates the cluster folder. Run by a user who can run postgres itself, it keeps
// the folder its own, 0700. Run as root, it keeps the folder root's, 0711 (the server's user
// may pass through, not list nor change it), and hands only data/ to the server's user
// (and the socket folder, in start): the password file and the log stay root's where that
// user cannot replace them. A cluster folder an older trueup gave to the server's user is
// taken back here, and what that user may have left in it is checked where it is used.
func (c *Cluster) prepare() error {
	if err := c.acc.ensureDir(c.dir, c.log); err != nil {
		return err
	}
	if c.acc == nil {
		// The folder holds the data, the password file and the socket: 0700 keeps the
		// other users of the host away from all three.
		return os.Chmod(c.dir, 0o700)
	}
	if err := c.takeBackDir(); err != nil {
		return err
	}
	// An older trueup put the socket here; the server's user may have left it behind.
	for _, name := range []string{socketName, socketName + ".lock"} {
		if err := os.Remove(filepath.Join(c.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	fi, err := os.Lstat(c.dataDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // initdb makes it
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		kind := "a file"
		if fi.Mode()&fs.ModeSymlink != 0 {
			kind = "a symbolic link"
		}
		return fmt.Errorf("the data folder %s is not a folder but %s: trueup never makes it so, and does not follow it; "+
			"another program (perhaps one running as user %s) put it there: check it, then remove it", c.dataDir, kind, c.acc.name)
	}
	return c.acc.handOver(c.dataDir)
}

// takeBackDir makes the cluster folder root's, 0711, through a descriptor. Options.Dir may
// be a symbolic link its owner made, so the open follows one; the server's user cannot put
// one there, as the folder that holds Options.Dir is not that user's.
func (c *Cluster) takeBackDir() error {
	f, err := os.OpenFile(c.dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if uid, gid := ownerOf(fi); uid != uint32(os.Geteuid()) || gid != uint32(os.Getegid()) {
		if err := f.Chown(os.Geteuid(), os.Getegid()); err != nil {
			return fmt.Errorf("take the cluster folder back from user %s: %w", c.acc.name, err)
		}
		c.log.Info("the cluster folder is root's again; only its data folder is the postgres user's",
			"user", c.acc.name, "previous_uid", uid)
	}
	if fi.Mode().Perm() != 0o711 {
		return f.Chmod(0o711)
	}
	return nil
}

// initdb creates the cluster unless Dir/data already holds one. It works in a scratch
// folder renamed into place at the end, so an interrupted initdb leaves no half-made data
// folder that initdb would then refuse. The password file is written first and reused by a
// second attempt, so no cluster exists whose password is not on disk.
func (c *Cluster) initdb(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(c.dataDir, "PG_VERSION")); err == nil {
		return nil
	}
	scratch := c.dataDir + ".initdb"
	if err := os.RemoveAll(scratch); err != nil { // never follows a symbolic link
		return err
	}
	if c.acc != nil {
		// The server's user may not create it in root's cluster folder; initdb takes the
		// empty folder.
		if err := c.makeServerDir(scratch); err != nil {
			return fmt.Errorf("initdb: %w", err)
		}
	}
	pw, err := c.readPassword()
	if errors.Is(err, fs.ErrNotExist) {
		pw = newPassword()
		err = c.writePassword(pw)
	}
	if err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	c.password = pw
	pwfile, removePwfile, err := c.writePwfile()
	if err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	defer removePwfile()
	logf, offset, err := c.openLog()
	if err != nil {
		return err
	}
	defer logf.Close()
	begin := time.Now()
	args := []string{
		"-D", scratch,
		"-U", superuser,
		"--auth=" + hbaMethod, // local and host lines alike
		"--pwfile=" + pwfile,
		"-E", "UTF8",
		// C collation: byte order, the same on every host, and the fastest.
		"--locale=C",
		"--no-instructions",
	}
	if c.fast {
		args = append(args, "--no-sync")
	}
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, "initdb"), args...)
	cmd.Dir = c.dir
	cmd.Env = c.env()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.acc.credential()}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("initdb: %w%s", err, c.logTail(offset))
	}
	if err := os.Rename(scratch, c.dataDir); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	c.log.Info("postgres cluster created", "duration", time.Since(begin).Round(time.Millisecond))
	return nil
}

// start runs the postmaster and waits until it accepts connections. c.mu is held.
func (c *Cluster) start(ctx context.Context) error {
	if c.proc != nil {
		return errors.New("already running")
	}
	if pid, ok := c.runningPID(); ok {
		return c.alreadyRunning(pid)
	}
	if c.socketDir != c.dir {
		if err := prepareSocketDir(c.socketDir, c.acc); err != nil {
			return err
		}
	}
	logf, offset, err := c.openLog()
	if err != nil {
		return err
	}
	defer logf.Close() // the child holds its own descriptor
	args := []string{
		"-D", c.dataDir,
		"-c", "listen_addresses=",
		"-c", "unix_socket_directories=" + c.socketDir,
		"-c", "unix_socket_permissions=0700",
		"-c", "port=" + strconv.Itoa(port),
		"-c", "max_connections=200",
		"-c", "shared_buffers=128MB",
	}
	if c.fast {
		args = append(args,
			"-c", "fsync=off",
			"-c", "synchronous_commit=off",
			"-c", "full_page_writes=off",
		)
	}
	for _, set := range c.settings {
		args = append(args, "-c", set)
	}
	cmd := exec.Command(filepath.Join(c.binDir, "postgres"), args...)
	cmd.Dir = c.dir
	cmd.Env = c.env()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = postmasterAttr(c.acc)

	begin := time.Now()
	pm := &postmaster{stopping: make(chan struct{}), exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// The parent-death signal fires when the thread that started the child ends, not
		// the process (go.dev/issue/27505): keep this goroutine, and so its thread, for the
		// postmaster's whole life.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		pm.err = cmd.Wait()
		close(pm.exited)
		select {
		case <-pm.stopping:
		default:
			if !pm.ready.Load() {
				return
			}
			c.log.Error("postgres exited unexpectedly", "err", pm.err, "log", c.logTail(offset))
		}
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("run postgres: %w", err)
	}
	pm.pid = cmd.Process.Pid
	c.proc = pm

	if err := c.waitReady(ctx, pm); err != nil {
		_ = c.stop()
		return fmt.Errorf("%w%s", err, c.logTail(offset))
	}
	pm.ready.Store(true)
	c.log.Info("postgres started", "pid", pm.pid, "socket_dir", c.socketDir,
		"duration", time.Since(begin).Round(time.Millisecond))
	return nil
}

// waitReady polls until a connection succeeds, the server exits, or the deadline passes.
func (c *Cluster) waitReady(ctx context.Context, pm *postmaster) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	dsn := c.URL("postgres")
	var lastErr error
	for {
		if lastErr = ping(ctx, dsn); lastErr == nil {
			return nil
		}
		var pgErr *pgconn.PgError
		if errors.As(lastErr, &pgErr) && (pgErr.Code == "28P01" || pgErr.Code == "28000") {
			// Running, but it refuses the password: waiting will not change that.
			return fmt.Errorf("postgres refuses the password in %s (%s): restore the file that belongs to this cluster, "+
				"or move %s away to start over with an empty database", c.passwordPath(), pgErr.Message, c.dir)
		}
		select {
		case <-pm.exited:
			return fmt.Errorf("postgres exited during start-up: %v", pm.err)
		case <-ctx.Done():
			return fmt.Errorf("postgres not accepting connections (%w): %v", ctx.Err(), lastErr)
		case <-tick.C:
		}
	}
}

func ping(ctx context.Context, dsn string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// stop asks for a fast shutdown and waits; c.mu is held.
func (c *Cluster) stop() error {
	pm := c.proc
	if pm == nil {
		return nil
	}
	c.proc = nil
	close(pm.stopping)
	begin := time.Now()
	// SIGINT is PostgreSQL's fast shutdown.
	if err := syscall.Kill(pm.pid, syscall.SIGINT); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop postgres (pid %d): %w", pm.pid, err)
	}
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-pm.exited:
	case <-timer.C:
		c.log.Warn("postgres fast shutdown timed out; shutting down immediately", "pid", pm.pid)
		_ = syscall.Kill(pm.pid, syscall.SIGQUIT)
		timer.Reset(10 * time.Second)
		select {
		case <-pm.exited:
		case <-timer.C:
			_ = syscall.Kill(-pm.pid, syscall.SIGKILL) // the whole process group
			<-pm.exited
		}
	}
	if c.socketDir != c.dir {
		_ = os.Remove(c.socketDir) // empty now; start creates it again
	}
	c.log.Info("postgres stopped", "pid", pm.pid, "duration", time.Since(begin).Round(time.Millisecond))
	if pm.err != nil {
		return fmt.Errorf("stop postgres (pid %d): %w", pm.pid, pm.err)
	}
	return nil
}

// runningPID reads postmaster.pid and reports a live postmaster on this data folder. A pid
// file left by a crash is ignored: postgres replaces it.
func (c *Cluster) runningPID() (int, bool) {
	// The server's user owns the file: no symbolic link, no FIFO.
	b, err := readChecked(filepath.Join(c.dataDir, "postmaster.pid"), "pid file")
	if err != nil {
		return 0, false
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, postmasterOf(pid, c.dataDir)
}

func (c *Cluster) alreadyRunning(pid int) error {
	return fmt.Errorf("a PostgreSQL server already runs on %s (pid %d): another trueup probably uses this data dir; "+
		"give this one its own --data-dir, or run several replicas against one database with database.url "+
		"(if no trueup owns it any more, stop it with `kill -INT %d`)", c.dir, pid, pid)
}

func (c *Cluster) createDatabase(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // duplicate_database: created meanwhile
		err = nil
	}
	if err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	c.log.Info("database created", "database", name)
	return nil
}

// env is the whole environment of initdb and postgres: nothing of trueup's (PG* variables,
// a root HOME) leaks into the server.
func (c *Cluster) env() []string {
	return []string{
		"HOME=" + c.dir,
		"PATH=" + c.binDir + ":/usr/local/bin:/usr/bin:/bin",
		"LANG=C",
		"LC_ALL=C",
	}
}

// openLog opens Dir/postgres.log for appending and returns the offset this run starts at.
// The log is trueup's user's, 0600: initdb and postgres write to the descriptor they
// inherit. It is opened without following a symbolic link and must be a regular file;
// one the server's user owns (made by an older trueup) is taken back through the descriptor.
func (c *Cluster) openLog() (*os.File, int64, error) {
	owners := []uint32{uint32(os.Geteuid())}
	if c.acc != nil {
		owners = append(owners, c.acc.uid)
	}
	f, err := openChecked(c.logPath, "server log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600, owners...)
	if err != nil {
		return nil, 0, err
	}
	offset, err := f.Seek(0, io.SeekEnd)
	if err == nil {
		err = takeFile(f, 0o600)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, offset, nil
}

// takeFile makes the open file f the current user's, with mode perm.
func takeFile(f *os.File, perm fs.FileMode) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if uid, gid := ownerOf(fi); uid != uint32(os.Geteuid()) || gid != uint32(os.Getegid()) {
		if err := f.Chown(os.Geteuid(), os.Getegid()); err != nil {
			return err
		}
	}
	if fi.Mode().Perm() != perm {
		return f.Chmod(perm)
	}
	return nil
}

// makeServerDir creates the folder path, 0700, for the server's user.
func (c *Cluster) makeServerDir(path string) error {
	if err := os.Mkdir(path, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Chown(int(c.acc.uid), int(c.acc.gid))
}

// logTail returns the last lines this run wrote to the log, formatted to end an error.
func (c *Cluster) logTail(offset int64) string {
	f, err := os.OpenFile(c.logPath, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > logTailLines {
			lines = lines[1:]
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "\n" + c.logPath + " (last lines):\n  " + strings.Join(lines, "\n  ")
}
