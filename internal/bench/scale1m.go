package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trueup-dev/trueup/internal/pgembed"
	"github.com/trueup-dev/trueup/internal/store"
)

// scale1mEnv is what the scale1m group's set-up hands to the read measurements once a million
// resources are synced: the API's URL and a token that reads everything.
type scale1mEnv struct {
	apiURL string
	token  string
}

// scale1mPerFile is how many resources each file of the scale1m repository holds.
const scale1mPerFile = 500

// scale1mSize is the number of resources of the scale1m group: TRUEUP_BENCH_SCALE, or a
// million. Figures keep their _1m names whatever the size; the run says it.
func scale1mSize() (int, error) {
	v := os.Getenv("TRUEUP_BENCH_SCALE")
	if v == "" {
		return 1000000, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < scale1mPerFile {
		return 0, fmt.Errorf("TRUEUP_BENCH_SCALE=%q: want a number of resources, at least %d", v, scale1mPerFile)
	}
	return n, nil
}

// scale1mPGSettings are the server settings of the scale1m cluster: TRUEUP_BENCH_PG_SETTINGS
// (comma-separated name=value; "none" for PostgreSQL's own defaults), or a server sized for
// the machine's memory as pgtune sizes one and managed services do by default (shared_buffers
// a quarter of the memory, as Amazon RDS and Azure set it; effective_cache_size three
// quarters; a WAL allowance that does not checkpoint every gigabyte). A million resources are
// a few GB of tables and indexes: with PostgreSQL's default of 128 MB of buffers every
// reconcile reads its rows back from the kernel's cache.
func scale1mPGSettings() ([]string, error) {
	if v := os.Getenv("TRUEUP_BENCH_PG_SETTINGS"); v != "" {
		if v == "none" {
			return nil, nil
		}
		return strings.Split(v, ","), nil
	}
	mem, err := memTotalMB()
	if err != nil {
		return nil, err
	}
	return []string{
		fmt.Sprintf("shared_buffers=%dMB", mem/4),
		fmt.Sprintf("effective_cache_size=%dMB", mem*3/4),
		"maintenance_work_mem=1GB",
		"min_wal_size=1GB",
		"max_wal_size=4GB",
		"wal_buffers=16MB",
		// Every autovacuum and autoanalyze run logs its CPU: the group adds them up
		// (autovacuumCPU).
		"log_autovacuum_min_duration=0",
		// The statements of the first sync and of the drain, by time (printDrainStats).
		"shared_preload_libraries=pg_stat_statements",
	}, nil
}

// memTotalMB is the machine's memory in MB (/proc/meminfo).
func memTotalMB() (int, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.Atoi(f[1])
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("/proc/meminfo: no MemTotal")
}

// scale1mFigures runs the scale1m group (issue 26): a million resources in 2,000 files on a
// durable cluster. It runs only when named: go run ./internal/bench -only scale1m.
//
// The real binary serves a folder source with the noop action at default settings (the
// revision's caps raised to its size), as `trueup serve` does for users, so the memory
// figures are its own (/proc), not the bench's.
// The cluster is durable (fsync on) and removed at the end: a million resources take a few GB.
func (b *bench) scale1mFigures(ctx context.Context) error {
	n, err := scale1mSize()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(b.dir, "scale1m-")
	if err != nil {
		return err
	}
	if os.Getenv("TRUEUP_BENCH_KEEP") == "" {
		defer os.RemoveAll(dir)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return err
	}
	bin := filepath.Join(dir, "trueup")
	build := exec.Command("go", "build", "-o", bin, "./cmd/trueup")
	build.Dir = moduleRoot()
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build: %v: %s", err, out)
	}
	repo := filepath.Join(dir, "repo")
	if err := writeScaleRepo(repo, n); err != nil {
		return err
	}
	settings, err := scale1mPGSettings()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "scale1m: PostgreSQL settings %s\n", strings.Join(append([]string{"(defaults)"}, settings...), " "))
	cluster, err := pgembed.Start(ctx, pgembed.Options{Dir: filepath.Join(dir, "pg"), Logger: b.log, Settings: settings})
	if err != nil {
		return err
	}
	defer cluster.Stop()
	st, err := store.Open(ctx, cluster.URL("trueup"), store.Options{MaxConns: 2})
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return err
	}
	// Without the library (TRUEUP_BENCH_PG_SETTINGS that leave it out) the statements are not
	// printed.
	statsErr := statementsView(ctx, st)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	const token = "bench-scale1m-reader-token-0123456789"
	sum := sha256.Sum256([]byte(token))
	cfg := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`dataDir: %s
server: {listen: "%s"}
auth:
  tokens: [{name: bench, sha256: %s, role: viewer}]
sources:
  - name: bench
    dir: {path: %s}
actions:
  - {name: act, type: noop}
limits: {maxResources: %d, maxDocuments: %d}
log: {level: info}
`, filepath.Join(dir, "data"), addr, hex.EncodeToString(sum[:]), repo, max(n+1000, 200000), max(n+1000, 250000))), 0o644); err != nil {
		return err
	}
	cmd := exec.Command(bin, "serve", "--config", cfg)
	// The runtime traces each collection (the live heap it left: gcTrace); the trace costs a
	// line a collection.
	godebug := "gctrace=1"
	if v := os.Getenv("GODEBUG"); v != "" {
		godebug = v + ",gctrace=1"
	}
	cmd.Env = append(os.Environ(), "TRUEUP_DATABASE_URL="+cluster.URL("trueup"), "GODEBUG="+godebug)
	logs := &tailBuffer{max: 64 << 10}
	gc := &gcTrace{logs: logs}
	if os.Getenv("TRUEUP_BENCH_KEEP") != "" {
		// The kept folder holds the server's whole standard error: its log and the trace.
		f, err := os.Create(filepath.Join(dir, "server.log"))
		if err != nil {
			return err
		}
		defer f.Close()
		gc.raw = f
	}
	cmd.Stderr = gc
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	defer stopProcess(cmd)
	waits := watchLockWaits(ctx, st)
	defer waits.stop()
	before, err := writeCosts(ctx, st, cluster, cmd.Process.Pid)
	if err != nil {
		return err
	}
	start := time.Now()
	say := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "scale1m (%d resources, load %s): %s: "+format+"\n",
			append([]any{n, loadAverage(), time.Since(start).Round(time.Millisecond)}, args...)...)
	}

	// The first sync ends when the source's row shows its revision applied.
	if err := poll(ctx, 30*time.Minute, 100*time.Millisecond, func() (bool, error) {
		src, err := st.GetSource(ctx, "bench")
		return err == nil && src.Revision != "", nil
	}); err != nil {
		return fmt.Errorf("first sync: %w\n%s", err, logs)
	}
	first := time.Since(start)
	firstGC := gc.mark()
	say("first sync applied; lock waits so far:\n%s", waits)
	if p, ok := gc.peak(0, firstGC); ok {
		say("first sync: the server's largest live heap after a collection %s since its start (%d collections)", p, firstGC)
	}
	if after, err := writeCosts(ctx, st, cluster, cmd.Process.Pid); err == nil {
		say("first sync: %s", after.since(before, n, waits.applyStart().Sub(start), first))
	}
	record("sync_first_1m", first.Seconds(), "s", "≤ 30", atMost(30))
	if statsErr == nil {
		// The drain's statements start here. The table counters are not reset: autovacuum
		// decides from them when to run, and the drain is measured as it runs by default.
		printDrainStats(ctx, st, "scale1m first sync")
		if _, err := st.Pool().Exec(ctx, "SELECT pg_stat_statements_reset()"); err != nil {
			fmt.Fprintln(os.Stderr, "scale1m: statements not reset:", err)
			statsErr = err
		}
	}
	applied, appliedErr := writeCosts(ctx, st, cluster, cmd.Process.Pid)
	// Lists by phase during the drain, on demand: their pages cost the drain it measures.
	var lists *phaseLists
	if os.Getenv("TRUEUP_BENCH_PHASE_LISTS") != "" {
		lists = watchPhaseLists(ctx, "http://"+addr, token)
	}

	// The count runs once the history (insert only, read by its last id) holds an
	// attempt per resource (then every second): no count can find them all Ready before. Before
	// that it runs every minute only, in case the history's ids fall short: a count takes a
	// share of the machine from the drain it measures.
	var counted time.Time
	if err := poll(ctx, 30*time.Minute, 100*time.Millisecond, func() (bool, error) {
		var attempts int64
		if err := st.Pool().QueryRow(ctx, "SELECT COALESCE(max(id), 0) FROM reconcile_history").Scan(&attempts); err != nil {
			return false, err
		}
		every := time.Minute
		if attempts >= int64(n) {
			every = time.Second
		}
		if time.Since(counted) < every {
			return false, nil
		}
		counted = time.Now()
		ready, err := readyCount(ctx, st)
		return ready >= n, err
	}); err != nil {
		return fmt.Errorf("ready: %w\n%s", err, logs)
	}
	ready := time.Since(start)
	say("all Ready")
	if lists != nil {
		say("lists filtered by phase during the drain: %s", lists.stop())
	}
	if done, err := writeCosts(ctx, st, cluster, cmd.Process.Pid); err == nil && appliedErr == nil {
		say("the drain: %s", done.drained(applied, n, ready-first))
		say("the drain: %s", vacuumRuns(ctx, st))
	}
	if statsErr == nil {
		printDrainStats(ctx, st, "scale1m drain (index blocks and updates since the start)")
	}
	if spent, err := autovacuumCPU(filepath.Join(cluster.Dir(), "postgres.log")); err == nil && len(spent) > 0 {
		say("autovacuum and autoanalyze CPU since the start (PostgreSQL's log): %s", spent)
	}
	// The sync and the reconciles of every resource are done: what waited on a lock then.
	waits.stop()
	if w := waits.String(); w != "" {
		say("lock waits seen (longest per statement):\n%s", w)
	}
	record("ready_1m", ready.Seconds(), "s", "≤ 150", atMost(150))
	if p, ok := gc.peak(firstGC, -1); ok {
		say("the drain: the server's largest live heap after a collection %s since its start", p)
	}
	if p, ok := gc.peak(0, -1); ok {
		record("live_peak_1m", p.liveMB, "MB", "informational", nil)
	}
	// VmHWM is the peak resident set since the start: the fetch, parse, apply and the first
	// reconciles of every resource. Containers are sized by it.
	peak, err := procStatusMB(cmd.Process.Pid, "VmHWM")
	if err != nil {
		return err
	}
	record("rss_peak_1m", peak, "MB", "≤ 500", atMost(500))

	change, err := scaleOneChanges(ctx, st, cluster, cmd.Process.Pid, logs, repo, say)
	if err != nil {
		return fmt.Errorf("one change: %w\n%s", err, logs)
	}
	// A one-file change that removes a resource runs the prune guard as well (the creates
	// and updates above delete nothing): its time is printed beside the figure.
	removed, err := scaleOneRemoval(ctx, st, logs, repo, say)
	if err != nil {
		return fmt.Errorf("one removal: %w\n%s", err, logs)
	}
	say("sync_one_change_1m: a removal from one file applied in %s", removed.Round(time.Millisecond))
	record("sync_one_change_1m", ms(change), "ms", "≤ 1000", atMost(1000))

	// A failure of the reads is returned once the steady memory is recorded.
	gcBefore := gc.mark()
	readErr := b.scale1mReads(ctx, scale1mEnv{apiURL: "http://" + addr, token: token})
	say("the server's collections during the reads (UTC): %s", gc.since(gcBefore, started))
	// Steady state: Ready, the one-file changes and the reads behind it.
	rss, err := procStatusMB(cmd.Process.Pid, "VmRSS")
	if err != nil {
		return err
	}
	record("rss_1m", rss, "MB", "≤ 300", atMost(300))
	if err := recordRSSSplit(cmd.Process.Pid, "rss_1m"); err != nil {
		return err
	}
	if s := logs.String(); strings.Contains(s, "lost") && strings.Contains(s, "lease") {
		say("the server's log tells of its leases:\n%s", s)
	}
	return readErr
}

// writeScaleRepo writes n widgets in files of scale1mPerFile, and their type, one file at a
// time (the repository is never all in memory).
func writeScaleRepo(repo string, n int) error {
	if err := writeFiles(repo, map[string]string{"types/widget.yaml": benchType}); err != nil {
		return err
	}
	for f := 0; f*scale1mPerFile < n; f++ {
		if err := writeFiles(repo, map[string]string{scaleFile(f): scaleWidgets(f, n, "")}); err != nil {
			return err
		}
	}
	return nil
}

func scaleFile(f int) string { return fmt.Sprintf("widgets/w%04d.yaml", f) }

// scaleWidgets is file f's content, with extra appended.
func scaleWidgets(f, n int, extra string) string {
	var b strings.Builder
	for i := f * scale1mPerFile; i < n && i < (f+1)*scale1mPerFile; i++ {
		fmt.Fprintf(&b, "---\napiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: w%07d, namespace: ns%02d, labels: {team: t%d}}\nspec: {size: %d}\n", i, i%20, i%7, i)
	}
	return b.String() + extra
}

// scaleOneChanges writes five changes of one file (one more widget, created, then updated)
// and returns the median time from the write to that widget Ready at its new generation.
// Each change's split goes to standard error: the wait before the sync and the sync's own
// phases (the server's "applied revision" log line: fetch, load, apply, with the server
// process's CPU in each), the reconcile from the commit to Ready, and the CPU the server and
// PostgreSQL spent on the whole change.
func scaleOneChanges(ctx context.Context, st *store.Store, cluster *pgembed.Cluster, pid int, logs *tailBuffer, repo string,
	say func(string, ...any)) (time.Duration, error) {
	n, _ := scale1mSize()
	var took []time.Duration
	for i := 1; i <= 5; i++ {
		extra := fmt.Sprintf("---\napiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: extra, namespace: ns00, labels: {team: t0}}\nspec: {size: %d}\n", i)
		var before string
		if err := st.Pool().QueryRow(ctx, `SELECT revision FROM sources WHERE name = 'bench'`).Scan(&before); err != nil {
			return 0, err
		}
		serve0, _ := pidCPU(pid, false)
		pg0, err := postgresCPU(cluster)
		if err != nil {
			return 0, err
		}
		act := watchActivity(ctx, st)
		start := time.Now()
		if err := writeFiles(repo, map[string]string{scaleFile(42): scaleWidgets(42, n, extra)}); err != nil {
			act.stop()
			return 0, err
		}
		var applied time.Duration
		if err := poll(ctx, 5*time.Minute, 5*time.Millisecond, func() (bool, error) {
			var rev string
			var ok bool
			err := st.Pool().QueryRow(ctx, `SELECT (SELECT revision FROM sources WHERE name = 'bench'),
				EXISTS (SELECT 1 FROM resources WHERE namespace = 'ns00' AND name = 'extra'
				AND spec->>'size' = $1 AND phase = 'Ready' AND observed_generation = generation)`, strconv.Itoa(i)).Scan(&rev, &ok)
			if applied == 0 && rev != before {
				applied = time.Since(start)
			}
			return ok, err
		}); err != nil {
			act.stop()
			say("what the database did during change %d (samples every 250 ms):\n%s", i, act)
			return 0, fmt.Errorf("change %d: %w", i, err)
		}
		d := time.Since(start)
		act.stop()
		if d > 5*time.Second {
			say("what the database did during change %d (samples every 250 ms):\n%s", i, act)
		}
		took = append(took, d)
		serve1, _ := pidCPU(pid, false)
		pg1, err := postgresCPU(cluster)
		if err != nil {
			return 0, err
		}
		say("one change %d: %s to Ready: %s to the source's revision applied (%s), %s more to Ready; CPU serve %s, postgres %s",
			i, d.Round(time.Millisecond), applied.Round(time.Millisecond), lastSyncSplit(logs.String()),
			(d - applied).Round(time.Millisecond), (serve1 - serve0).Round(time.Millisecond), (pg1 - pg0).Round(time.Millisecond))
	}
	return percentile(took, 0.5), nil
}

// scaleOneRemoval writes file 42 without the widget scaleOneChanges added and returns the time
// from the write to that widget's row gone or marked for deletion, the source's revision
// applied; it returns once the row is gone.
func scaleOneRemoval(ctx context.Context, st *store.Store, logs *tailBuffer, repo string, say func(string, ...any)) (time.Duration, error) {
	n, _ := scale1mSize()
	var before string
	if err := st.Pool().QueryRow(ctx, `SELECT revision FROM sources WHERE name = 'bench'`).Scan(&before); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := writeFiles(repo, map[string]string{scaleFile(42): scaleWidgets(42, n, "")}); err != nil {
		return 0, err
	}
	if err := poll(ctx, 5*time.Minute, 5*time.Millisecond, func() (bool, error) {
		var ok bool
		err := st.Pool().QueryRow(ctx, `SELECT (SELECT revision FROM sources WHERE name = 'bench') <> $1
			AND NOT EXISTS (SELECT 1 FROM resources WHERE namespace = 'ns00' AND name = 'extra' AND deletion_timestamp IS NULL)`,
			before).Scan(&ok)
		return ok, err
	}); err != nil {
		return 0, err
	}
	d := time.Since(start)
	say("one removal: %s to the source's revision applied (%s)", d.Round(time.Millisecond), lastSyncSplit(logs.String()))
	// The reads that follow sample names from the list: the widget's deletion ends first, so
	// that none of them asks for a row that goes away meanwhile.
	if err := poll(ctx, 5*time.Minute, 5*time.Millisecond, func() (bool, error) {
		var gone bool
		err := st.Pool().QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM resources WHERE namespace = 'ns00' AND name = 'extra')`).Scan(&gone)
		return gone, err
	}); err != nil {
		return 0, fmt.Errorf("the removed widget's deletion: %w", err)
	}
	return d, nil
}

// syncPhase matches the phase fields of the server's "applied revision" log line.
var syncPhase = regexp.MustCompile(`\b(fetch|refetch|load|apply|total|fetch_cpu|refetch_cpu|load_cpu|apply_cpu|cpu)_ms=(\d+)`)

// lastSyncSplit is the phases of the last "applied revision" line of a server's log.
func lastSyncSplit(log string) string {
	i := strings.LastIndex(log, `msg="applied revision"`)
	if i < 0 {
		return "no applied revision logged"
	}
	line := log[i:]
	if j := strings.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	var parts []string
	for _, m := range syncPhase.FindAllStringSubmatch(line, -1) {
		parts = append(parts, m[1]+" "+m[2]+" ms")
	}
	return "sync " + strings.Join(parts, ", ")
}

// poll calls cond every interval until it holds, fails, or limit passes.
func poll(ctx context.Context, limit, interval time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
	return fmt.Errorf("not done within %s", limit)
}

// stopProcess interrupts cmd and waits for it (killed after 30 s).
func stopProcess(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// loadAverage is the machine's one-minute load average (the machine may be shared).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// tailBuffer keeps the last max bytes written to it (a server's log).
type tailBuffer struct {
	max int
	mu  sync.Mutex
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// writeCost is what the server and PostgreSQL have spent so far: CPU seconds and WAL, and
// the rows of the tables a sync writes.
type writeCost struct {
	serveCPU, pgCPU float64
	wal             int64
	rows            map[string]int64
}

func writeCosts(ctx context.Context, st *store.Store, cluster *pgembed.Cluster, pid int) (writeCost, error) {
	serveCPU, _ := pidCPU(pid, false)
	pgCPU, err := postgresCPU(cluster)
	if err != nil {
		return writeCost{}, err
	}
	c := writeCost{serveCPU: serveCPU.Seconds(), pgCPU: pgCPU.Seconds(), rows: map[string]int64{}}
	if err := st.Pool().QueryRow(ctx, "SELECT pg_current_wal_lsn() - '0/0'").Scan(&c.wal); err != nil {
		return c, err
	}
	rows, err := st.Pool().Query(ctx, `SELECT relname, n_tup_ins FROM pg_stat_user_tables WHERE relname IN ('resources', 'events', 'changes')`)
	if err != nil {
		return c, err
	}
	defer rows.Close()
	for rows.Next() {
		var t string
		var n int64
		if err := rows.Scan(&t, &n); err != nil {
			return c, err
		}
		c.rows[t] = n
	}
	return c, rows.Err()
}

// since tells what the first sync of n resources cost: its wall time split at the apply's
// start, CPU seconds of the server and of PostgreSQL, WAL and rows per resource.
func (c writeCost) since(b writeCost, n int, parse, total time.Duration) string {
	per := func(t string) float64 { return float64(c.rows[t]-b.rows[t]) / float64(n) }
	split := "apply start not seen"
	if parse > 0 {
		split = fmt.Sprintf("start-up, fetch and parse %.1f s, apply %.1f s", parse.Seconds(), (total - parse).Seconds())
	}
	return fmt.Sprintf("%s; CPU serve %.1f s, postgres %.1f s; WAL %.2f KB per resource; rows per resource: resources %.2f, events %.2f, changes %.2f",
		split, c.serveCPU-b.serveCPU, c.pgCPU-b.pgCPU, float64(c.wal-b.wal)/1024/float64(n), per("resources"), per("events"), per("changes"))
}

// drained tells what the reconciles of n resources cost from the first sync's end (b) to
// all Ready: CPU of the server and of PostgreSQL per resource, WAL and event rows per resource.
func (c writeCost) drained(b writeCost, n int, took time.Duration) string {
	per := func(sec float64) float64 { return sec * 1e6 / float64(n) }
	return fmt.Sprintf("%.1f s, %.0f 1/s; CPU serve %.1f s (%.0f µs a resource), postgres %.1f s (%.0f µs a resource); WAL %.2f KB per resource; events %.2f per resource",
		took.Seconds(), float64(n)/took.Seconds(), c.serveCPU-b.serveCPU, per(c.serveCPU-b.serveCPU), c.pgCPU-b.pgCPU, per(c.pgCPU-b.pgCPU),
		float64(c.wal-b.wal)/1024/float64(n), float64(c.rows["events"]-b.rows["events"])/float64(n))
}

// vacuumRuns lists how often autovacuum and autoanalyze ran on the tables a drain writes,
// and the dead rows they hold.
func vacuumRuns(ctx context.Context, st *store.Store) string {
	rows, err := st.Pool().Query(ctx, `SELECT relname, autovacuum_count, autoanalyze_count, n_dead_tup FROM pg_stat_user_tables
		WHERE relname IN ('resources', 'resource_queue', 'events', 'reconcile_history', 'changes') ORDER BY relname`)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var b strings.Builder
	b.WriteString("autovacuum / autoanalyze runs (dead rows):")
	for rows.Next() {
		var t string
		var vac, an, dead int64
		if err := rows.Scan(&t, &vac, &an, &dead); err != nil {
			return b.String() + " " + err.Error()
		}
		fmt.Fprintf(&b, " %s %d / %d (%d)", t, vac, an, dead)
	}
	if err := rows.Err(); err != nil {
		b.WriteString(" " + err.Error())
	}
	return b.String()
}

// autovacuumCPU adds up the CPU time (user and system) of the automatic vacuums and
// analyzes that PostgreSQL logged since the cluster started (log_autovacuum_min_duration=0,
// a default of scale1mPGSettings), per table, in seconds.
func autovacuumCPU(logPath string) (vacuumCPU, error) {
	data, err := os.ReadFile(logPath)
	if err != nil {
		return nil, err
	}
	out := vacuumCPU{}
	table := ""
	for _, line := range strings.Split(string(data), "\n") {
		if m := autoRun.FindStringSubmatch(line); m != nil {
			table = m[1] + " " + m[2]
			continue
		}
		if m := autoUsage.FindStringSubmatch(line); m != nil && table != "" {
			user, _ := strconv.ParseFloat(m[1], 64)
			sys, _ := strconv.ParseFloat(m[2], 64)
			out[table] += user + sys
			table = ""
		}
	}
	return out, nil
}

// vacuumCPU is CPU seconds per automatic run kind and table ("vacuum public.resources").
type vacuumCPU map[string]float64

func (v vacuumCPU) String() string {
	keys := make([]string, 0, len(v))
	total := 0.0
	for k, s := range v {
		keys = append(keys, k)
		total += s
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%.1f s in all", total)
	sep := "; of which"
	for _, k := range keys {
		if v[k] >= 0.05 { // the catalog's analyzes and the like, a few milliseconds each, are left out
			fmt.Fprintf(&b, "%s %s %.1f s", sep, k, v[k])
			sep = ","
		}
	}
	return b.String()
}

var (
	autoRun   = regexp.MustCompile(`automatic (?:aggressive )?(vacuum|analyze)(?: to prevent wraparound)? of table "[^".]*\.([^"]*)"`)
	autoUsage = regexp.MustCompile(`system usage: CPU: user: ([0-9.]+) s, system: ([0-9.]+) s`)
)

// lockWaits samples pg_stat_activity for sessions waiting on a lock (a renewal waiting on the
// apply would show here) and keeps the longest wait seen per statement. It also notes when
// the first apply's transaction (the one inserting resources) began: what came before it is
// the start-up, fetch, parse and validation.
type lockWaits struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	longest map[string]time.Duration
	applyAt time.Time // zero until seen
}

func (w *lockWaits) applyStart() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.applyAt
}

func watchLockWaits(ctx context.Context, st *store.Store) *lockWaits {
	ctx, cancel := context.WithCancel(ctx)
	w := &lockWaits{cancel: cancel, done: make(chan struct{}), longest: map[string]time.Duration{}}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			rows, err := st.Pool().Query(ctx, `SELECT wait_event, left(regexp_replace(query, '\s+', ' ', 'g'), 100),
				extract(epoch FROM clock_timestamp() - state_change)
				FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()`)
			if err == nil {
				for rows.Next() {
					var ev, q string
					var secs float64
					if rows.Scan(&ev, &q, &secs) == nil {
						d := time.Duration(secs * float64(time.Second))
						w.mu.Lock()
						if k := ev + ": " + q; d > w.longest[k] {
							w.longest[k] = d
						}
						w.mu.Unlock()
					}
				}
				rows.Close()
			}
			var at *time.Time
			if w.applyStart().IsZero() && st.Pool().QueryRow(ctx, `SELECT min(xact_start) FROM pg_stat_activity
				WHERE query LIKE '%INSERT INTO resources%' AND pid <> pg_backend_pid()`).Scan(&at) == nil && at != nil {
				w.mu.Lock()
				w.applyAt = *at
				w.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *lockWaits) stop() {
	w.cancel()
	<-w.done
}

func (w *lockWaits) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for k, d := range w.longest {
		fmt.Fprintf(&b, "  %s (%s)\n", k, d.Round(time.Millisecond))
	}
	return b.String()
}

// activity samples pg_stat_activity every 250 ms for the sessions that are not idle: what
// each did (state, what it waited on, its statement) and in how many samples, with the age of
// its transaction at the last one.
type activity struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	seen   map[string]int
	age    map[string]time.Duration
	order  []string
}

func watchActivity(ctx context.Context, st *store.Store) *activity {
	ctx, cancel := context.WithCancel(ctx)
	a := &activity{cancel: cancel, done: make(chan struct{}), seen: map[string]int{}, age: map[string]time.Duration{}}
	go func() {
		defer close(a.done)
		for ctx.Err() == nil {
			rows, err := st.Pool().Query(ctx, `SELECT pid, state, COALESCE(wait_event_type || ':' || wait_event, 'CPU'),
				left(regexp_replace(query, '\s+', ' ', 'g'), 90), COALESCE(extract(epoch FROM clock_timestamp() - xact_start), 0)
				FROM pg_stat_activity WHERE state IS NOT NULL AND state <> 'idle' AND pid <> pg_backend_pid() AND backend_type = 'client backend'`)
			if err == nil {
				for rows.Next() {
					var pid int
					var state, wait, q string
					var secs float64
					if rows.Scan(&pid, &state, &wait, &q, &secs) == nil {
						k := fmt.Sprintf("pid %d %s %s: %s", pid, state, wait, q)
						a.mu.Lock()
						if a.seen[k] == 0 {
							a.order = append(a.order, k)
						}
						a.seen[k]++
						a.age[k] = time.Duration(secs * float64(time.Second))
						a.mu.Unlock()
					}
				}
				rows.Close()
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return a
}

func (a *activity) stop() {
	a.cancel()
	<-a.done
}

func (a *activity) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var b strings.Builder
	for _, k := range a.order {
		fmt.Fprintf(&b, "  %3d× %s (transaction %s old)\n", a.seen[k], k, a.age[k].Round(time.Millisecond))
	}
	return b.String()
}

// phaseLists times lists filtered by phase while the drain moves the phases (and their
// statistics lag behind): a page of Ready and one of Pending every 2 s
// (TRUEUP_BENCH_PHASE_LISTS set).
type phaseLists struct {
	cancel context.CancelFunc
	done   chan struct{}
	took   map[string][]time.Duration
	err    error
}

func watchPhaseLists(ctx context.Context, base, token string) *phaseLists {
	ctx, cancel := context.WithCancel(ctx)
	w := &phaseLists{cancel: cancel, done: make(chan struct{}), took: map[string][]time.Duration{}}
	c := &readClient{base: base, token: token, http: &http.Client{Timeout: time.Minute}}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			for _, phase := range []string{"Ready", "Pending"} {
				d, err := c.get(ctx, "/api/v1/resources?limit=100&phase="+phase, nil)
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					w.err = err
					return
				}
				w.took[phase] = append(w.took[phase], d)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// stop ends the watch and says what the lists took (median and slowest).
func (w *phaseLists) stop() string {
	w.cancel()
	<-w.done
	if w.err != nil {
		return w.err.Error()
	}
	var parts []string
	for _, phase := range []string{"Ready", "Pending"} {
		t := w.took[phase]
		if len(t) == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("?phase=%s %d pages, median %.2f ms, slowest %.2f ms", phase, len(t), ms(percentile(t, 0.5)), ms(slices.Max(t))))
	}
	return strings.Join(parts, "; ")
}
