//go:build linux

package e2e

// Helpers for the multi-process tests: the real `trueup serve` binary, several copies of it
// sharing one database, each with its own data folder, listener, config and call log. Linux
// only: a crash is simulated by freezing and killing every process a replica started, found
// through /proc.

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/logbuf"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// procMarkVar is set in every replica's environment, so that the replica's descendants (the
// exec action's commands run in process groups of their own) can be found and killed.
const procMarkVar = "TRUEUP_PROCS_MARK"

var procBin struct {
	once sync.Once
	path string
	err  error
}

// procBinary builds ./cmd/trueup once per test process. The binary lives at a fixed path per
// checkout under the temp folder (replaced by every run, so runs do not pile binaries up);
// the build cache makes the rebuild cheap.
func procBinary(t *testing.T) string {
	t.Helper()
	procBin.once.Do(func() {
		// Per checkout: worktrees tested side by side must not run each other's binary.
		root, err := filepath.Abs("../..")
		if err != nil {
			procBin.err = err
			return
		}
		sum := sha256.Sum256([]byte(root))
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("trueup-e2e-procs-%d-%x", os.Getuid(), sum[:4]))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			procBin.err = err
			return
		}
		tmp := filepath.Join(dir, fmt.Sprintf("trueup.%d.tmp", os.Getpid()))
		cmd := exec.Command("go", "build", "-o", tmp, "./cmd/trueup")
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			_ = os.Remove(tmp)
			procBin.err = fmt.Errorf("go build ./cmd/trueup: %v\n%s", err, out)
			return
		}
		procBin.path = filepath.Join(dir, "trueup")
		if err := os.Rename(tmp, procBin.path); err != nil {
			procBin.err = err
		}
	})
	if procBin.err != nil {
		t.Fatal(procBin.err)
	}
	return procBin.path
}

// procWorld is one test's set-up: a Git repository, a database URL, and the replicas.
type procWorld struct {
	t        *testing.T
	dir      string
	repo     string
	dbURL    string
	sleep    string
	script   string // the exec action's command, relative to the package; testdata/action.sh when empty
	mark     string // prefix of every replica's procMarkVar value in this test
	replicas []*procReplica
	client   *http.Client
	leaseTTL string // reconcile.leaseTTL of the replicas started from now on ("" is 3s)
	// source, when set, adds fields to the source's config (webhook, commitStatus, preview).
	source map[string]any
	plan   bool // the exec action declares the plan operation (plan: true)
	// config adds top-level keys to the replicas' config (notifications); env adds to the
	// exec action's environment (FAIL_FLAG).
	config map[string]any
	env    map[string]string
}

// procReplica is one `trueup serve` process.
type procReplica struct {
	idx     int
	addr    string
	callLog string
	mark    string
	cmd     *exec.Cmd
	logs    *procBuffer
	done    chan struct{} // closed once the process has been waited for
	waitErr error
	killed  bool // crashed on purpose, or stopped by the cleanup
}

func procSetup(t *testing.T, dbURL, sleep string) *procWorld {
	t.Helper()
	procBinary(t) // build before anything else, so a broken build fails first
	dir := t.TempDir()
	w := &procWorld{t: t, dir: dir, repo: filepath.Join(dir, "repo"), dbURL: dbURL, sleep: sleep,
		mark:   fmt.Sprintf("%d-%s-%08x", os.Getpid(), t.Name(), rand.Uint32()),
		client: &http.Client{Timeout: 5 * time.Second}}
	git(t, "", "init", "-q", "-b", "main", w.repo)
	// Cleanups run last-in first-out: this one runs after every replica's own cleanup.
	t.Cleanup(func() {
		if strays := procMarked(w.mark + "/"); len(strays) > 0 {
			t.Errorf("processes left running after the test: %v", procDescribe(strays))
			procKillAll(strays)
		}
		if t.Failed() {
			for _, r := range w.replicas {
				t.Logf("--- replica r%d (pid %d, %s) log ---\n%s", r.idx, r.cmd.Process.Pid, r.addr, r.logs.tail(64<<10))
			}
		}
	})
	return w
}

// commit writes files (path → content; "" deletes) and commits them; it returns the commit.
func (w *procWorld) commit(files map[string]string, msg string) string {
	w.t.Helper()
	for p, content := range files {
		full := filepath.Join(w.repo, p)
		if content == "" {
			if err := os.Remove(full); err != nil {
				w.t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			w.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			w.t.Fatal(err)
		}
	}
	git(w.t, w.repo, "add", "-A")
	git(w.t, w.repo, "commit", "-q", "--allow-empty", "-m", msg)
	return strings.TrimSpace(git(w.t, w.repo, "rev-parse", "HEAD"))
}

// start runs n more replicas and waits until each answers /healthz.
func (w *procWorld) start(n int) {
	w.t.Helper()
	for i := 0; i < n; i++ {
		w.startOne()
	}
}

func (w *procWorld) startOne() *procReplica {
	w.t.Helper()
	idx := len(w.replicas) + 1
	script := w.script
	if script == "" {
		script = "testdata/action.sh"
	}
	script, err := filepath.Abs(script)
	if err != nil {
		w.t.Fatal(err)
	}
	rdir := filepath.Join(w.dir, fmt.Sprintf("r%d", idx))
	if err := os.MkdirAll(rdir, 0o755); err != nil {
		w.t.Fatal(err)
	}
	callLog := filepath.Join(rdir, "calls.log")
	src := map[string]any{"name": "infra",
		"git": map[string]any{"url": "file://" + w.repo, "branch": "main", "path": "manifests", "interval": "1s"}}
	maps.Copy(src, w.source)
	env := map[string]string{"CALL_LOG": callLog, "SLEEP": w.sleep}
	maps.Copy(env, w.env)
	top := map[string]any{
		"sources": []any{src},
		"actions": []any{map[string]any{"name": "provision", "type": "exec", "config": map[string]any{
			// The world's replicas share one lock folder (one host), other tests' worlds
			// have their own: parallel tests reuse resource names.
			"command": []string{script}, "timeout": "60s", "plan": w.plan, "lockDir": filepath.Join(w.dir, "locks"),
			"env": env}}},
		"reconcile": map[string]any{"workers": 4, "leaseTTL": cmp.Or(w.leaseTTL, "3s"), "backoff": map[string]any{"initial": "200ms", "max": "2s"}},
		"log":       map[string]any{"level": "info"},
	}
	maps.Copy(top, w.config)
	cfg, _ := json.MarshalIndent(top, "", "  ") // JSON is YAML
	cfgPath := filepath.Join(rdir, "trueup.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		w.t.Fatal(err)
	}
	// A free port can be taken between probing and binding: retry on a fresh one.
	var last *procReplica
	for try := 0; try < 3; try++ {
		r := &procReplica{idx: idx, addr: procFreeAddr(w.t), callLog: callLog, mark: fmt.Sprintf("%s/r%d", w.mark, idx),
			logs: &procBuffer{}, done: make(chan struct{})}
		r.cmd = exec.Command(procBinary(w.t), "serve", "--config", cfgPath, "--listen", r.addr, "--data-dir", filepath.Join(rdir, "data"))
		r.cmd.Env = append(os.Environ(), "TRUEUP_DATABASE_URL="+w.dbURL, procMarkVar+"="+r.mark)
		r.cmd.Stdout, r.cmd.Stderr = r.logs, r.logs
		r.cmd.WaitDelay = 5 * time.Second
		// Its own process group (killed as a whole on crash), and no orphan if this test
		// process dies first.
		r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := r.cmd.Start(); err != nil {
			w.t.Fatal(err)
		}
		go func() {
			r.waitErr = r.cmd.Wait()
			close(r.done)
		}()
		w.replicas = append(w.replicas, r)
		w.t.Cleanup(func() { w.stopReplica(r) })
		last = r
		if w.waitHealthy(r) {
			return r
		}
		if !strings.Contains(r.logs.String(), "address already in use") {
			break
		}
	}
	w.t.Fatalf("replica r%d did not become healthy\n%s", idx, last.logs.tail(16<<10))
	return nil
}

// waitHealthy waits until r answers /healthz; false when it exited first.
func (w *procWorld) waitHealthy(r *procReplica) bool {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-r.done:
			return false
		default:
		}
		if code, _ := w.get(r, "/healthz", nil); code == http.StatusOK {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// stopReplica ends r at cleanup: SIGTERM first (the product's drain), a crash if it lingers.
func (w *procWorld) stopReplica(r *procReplica) {
	select {
	case <-r.done:
		if !r.killed {
			w.t.Errorf("replica r%d exited on its own: %v", r.idx, r.waitErr)
		}
		return
	default:
	}
	r.killed = true
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	_ = r.cmd.Process.Signal(syscall.SIGCONT) // in case a failed crash left it frozen
	select {
	case <-r.done:
		if r.waitErr != nil {
			w.t.Errorf("replica r%d did not exit cleanly on SIGTERM: %v", r.idx, r.waitErr)
		}
	case <-time.After(15 * time.Second):
		w.t.Errorf("replica r%d did not stop within 15 s of SIGTERM", r.idx)
		w.crash(r)
	}
}

// crash simulates the death of r's machine: r and every process it started are frozen (so
// that none starts another), then killed; their in-flight work is simply gone.
func (w *procWorld) crash(r *procReplica) {
	w.t.Helper()
	r.killed = true
	pid := r.cmd.Process.Pid
	frozen := map[int]bool{pid: true}
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	if !slices.Contains(procMarked(r.mark), pid) {
		w.t.Fatalf("replica r%d (pid %d) is not found by its %s: the crash would miss its children", r.idx, pid, procMarkVar)
	}
	for round := 0; round < 100; round++ {
		fresh := false
		for _, p := range procMarked(r.mark) {
			if !frozen[p] {
				_ = syscall.Kill(p, syscall.SIGSTOP)
				frozen[p], fresh = true, true
			}
		}
		if !fresh {
			break
		}
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL) // r's process group (Setpgid: its id is r's pid)
	for p := range frozen {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	w.t.Logf("crash of r%d: killed %d processes: %v", r.idx, len(frozen), slices.Sorted(maps.Keys(frozen)))
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		w.t.Fatalf("replica r%d survived SIGKILL", r.idx)
	}
	w.eventually(10*time.Second, fmt.Sprintf("every process of replica r%d gone", r.idx), func() (bool, string) {
		left := procMarked(r.mark)
		return len(left) == 0, fmt.Sprint(procDescribe(left))
	})
}

// alive fails the test when a replica that was not killed on purpose has exited.
func (w *procWorld) alive() {
	w.t.Helper()
	for _, r := range w.replicas {
		select {
		case <-r.done:
			if !r.killed {
				w.t.Fatalf("replica r%d exited: %v\n%s", r.idx, r.waitErr, r.logs.tail(16<<10))
			}
		default:
		}
	}
}

// running returns the replicas not killed on purpose.
func (w *procWorld) running() []*procReplica {
	var out []*procReplica
	for _, r := range w.replicas {
		if !r.killed {
			out = append(out, r)
		}
	}
	return out
}

// byPID finds the process behind a replica listed by the API.
func (w *procWorld) byPID(pid int) *procReplica {
	for _, r := range w.replicas {
		if r.cmd.Process.Pid == pid {
			return r
		}
	}
	return nil
}

// get fetches path from r and decodes JSON into v; a transport error is returned, not fatal,
// since the tests poll replicas that may be busy or gone.
func (w *procWorld) get(r *procReplica, path string, v any) (int, error) {
	resp, err := w.client.Get("http://" + r.addr + path)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return resp.StatusCode, err
	}
	if v != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(buf.Bytes(), v); err != nil {
			return resp.StatusCode, fmt.Errorf("GET %s: %w", path, err)
		}
	}
	return resp.StatusCode, nil
}

// getAny asks the running replicas in turn until one answers 200.
func (w *procWorld) getAny(path string, v any) error {
	var errs []error
	for _, r := range w.running() {
		code, err := w.get(r, path, v)
		if err == nil && code == http.StatusOK {
			return nil
		}
		errs = append(errs, fmt.Errorf("r%d: %d %v", r.idx, code, err))
	}
	return errors.Join(errs...)
}

// eventually polls cond until it holds or d passes; replicas dying meanwhile fail the test.
func (w *procWorld) eventually(d time.Duration, what string, cond func() (bool, string)) {
	w.t.Helper()
	deadline := time.Now().Add(d)
	last := ""
	for {
		w.alive()
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		if time.Now().After(deadline) {
			w.t.Fatalf("timed out after %s waiting for %s; last: %s", d, what, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type procReplicaList struct {
	Items []wire.Replica `json:"items"`
	Self  string         `json:"self"`
}

// reconcilingHolder waits until one of the replicas holds the source's lease and reconciles,
// and returns it with its name.
func (w *procWorld) reconcilingHolder() (holder *procReplica, name string) {
	w.t.Helper()
	w.eventually(60*time.Second, "the source's holder reconciling", func() (bool, string) {
		var l procReplicaList
		if err := w.getAny("/api/v1/replicas", &l); err != nil {
			return false, err.Error()
		}
		h := l.holders("source:infra")
		if len(h) != 1 || h[0].Reconciles == 0 {
			return false, fmt.Sprintf("holders %+v", h)
		}
		holder, name = w.byPID(h[0].PID), h[0].Name
		return holder != nil, fmt.Sprintf("holder %+v is not ours", h[0])
	})
	return holder, name
}

// holders returns the alive replicas holding lease name.
func (l procReplicaList) holders(name string) []wire.Replica {
	var out []wire.Replica
	for _, r := range l.Items {
		for _, n := range r.Leases {
			if n == name {
				out = append(out, r)
			}
		}
	}
	return out
}

type procPage struct {
	Items    []wire.Resource `json:"items"`
	Continue string          `json:"continue"`
}

// waitReady waits until every resource in want (id → generation) is Ready at that
// generation, as any running replica reports it.
func (w *procWorld) waitReady(d time.Duration, want map[string]int64) []wire.Resource {
	w.t.Helper()
	var items []wire.Resource
	w.eventually(d, fmt.Sprintf("%d resources Ready", len(want)), func() (bool, string) {
		var page procPage
		if err := w.getAny("/api/v1/resources?limit=1000", &page); err != nil {
			return false, err.Error()
		}
		items = page.Items
		return procAllReady(items, want)
	})
	return items
}

func procAllReady(items []wire.Resource, want map[string]int64) (bool, string) {
	seen := map[string]bool{}
	phases := map[string]int{}
	var bad []string
	for _, it := range items {
		id := procID(it)
		phases[it.Status.Phase]++
		gen, ok := want[id]
		if !ok {
			continue
		}
		seen[id] = true
		if it.Status.Phase != "Ready" || it.Metadata.Generation != gen || it.Status.ObservedGeneration != gen {
			if len(bad) < 3 {
				bad = append(bad, fmt.Sprintf("%s: %s gen %d observed %d %q", id, it.Status.Phase, it.Metadata.Generation, it.Status.ObservedGeneration, it.Status.Message))
			}
		}
	}
	if len(seen) != len(want) || len(bad) > 0 {
		return false, fmt.Sprintf("%d of %d present, phases %v, e.g. %v", len(seen), len(want), phases, bad)
	}
	return true, ""
}

func procID(r wire.Resource) string {
	return r.Metadata.Namespace + "/" + r.Kind + "/" + r.Metadata.Name
}

// procCall is one line of a replica's call log (testdata/action.sh).
type procCall struct {
	replica    int
	id, op     string
	gen        int64
	start, end int64 // unix ns
}

// calls reads every replica's call log.
func (w *procWorld) calls() []procCall {
	w.t.Helper()
	var out []procCall
	for _, r := range w.replicas {
		b, err := os.ReadFile(r.callLog)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			w.t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			if len(f) < 7 || f[0] != "call" {
				w.t.Fatalf("r%d call log: unexpected line %q", r.idx, line)
			}
			c := procCall{replica: r.idx, id: f[1], op: f[4]}
			var err1, err2, err3 error
			c.start, err1 = strconv.ParseInt(f[2], 10, 64)
			c.end, err2 = strconv.ParseInt(f[3], 10, 64)
			c.gen, err3 = strconv.ParseInt(f[5], 10, 64)
			if err := errors.Join(err1, err2, err3); err != nil {
				w.t.Fatalf("r%d call log: line %q: %v", r.idx, line, err)
			}
			out = append(out, c)
		}
	}
	return out
}

// procOverlaps reports every pair of calls for one resource that ran at the same time.
func procOverlaps(calls []procCall) []string {
	byID := map[string][]procCall{}
	for _, c := range calls {
		byID[c.id] = append(byID[c.id], c)
	}
	var out []string
	for id, cs := range byID {
		sort.Slice(cs, func(i, j int) bool { return cs[i].start < cs[j].start })
		for i := 1; i < len(cs); i++ {
			if cs[i].start < cs[i-1].end {
				out = append(out, fmt.Sprintf("%s: r%d [%d,%d] and r%d [%d,%d]", id, cs[i-1].replica, cs[i-1].start, cs[i-1].end,
					cs[i].replica, cs[i].start, cs[i].end))
			}
		}
	}
	sort.Strings(out)
	return out
}

// procManifests renders a ResourceType and n Database resources spread over files files and
// three namespaces; size gives each resource's size. It returns the files and id → generation 1.
func procManifests(n, files int, size func(i int) int) (map[string]string, map[string]int64) {
	docs := make([][]string, files)
	want := map[string]int64{}
	for i := 0; i < n; i++ {
		ns, name := procName(i)
		docs[i%files] = append(docs[i%files], dbResource(ns, name, size(i)))
		want[ns+"/Database/"+name] = 1
	}
	out := map[string]string{"manifests/types/database.yaml": dbType}
	for f, d := range docs {
		out[fmt.Sprintf("manifests/dbs/part%02d.yaml", f)] = strings.Join(d, "---\n")
	}
	return out, want
}

func procName(i int) (ns, name string) {
	return fmt.Sprintf("team-%c", 'a'+i%3), fmt.Sprintf("db%03d", i)
}

// procDB opens the test's database for queries the API does not answer.
func procDB(t *testing.T, url string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), url, store.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

// procStrings runs a one-column query.
func procStrings(t *testing.T, st *store.Store, sql string, args ...any) []string {
	t.Helper()
	rows, err := st.Pool().Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func procFreeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// procMarked lists the live processes whose procMarkVar is mark, or starts with mark when it
// ends in "/".
func procMarked(mark string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue // gone, or a zombie
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			v, ok := bytes.CutPrefix(kv, []byte(procMarkVar+"="))
			if !ok {
				continue
			}
			if string(v) == mark || (strings.HasSuffix(mark, "/") && strings.HasPrefix(string(v)+"/", mark)) {
				out = append(out, pid)
			}
			break
		}
	}
	return out
}

func procDescribe(pids []int) []string {
	var out []string
	for _, p := range pids {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		out = append(out, fmt.Sprintf("%d %s", p, strings.ReplaceAll(strings.TrimRight(string(cmd), "\x00"), "\x00", " ")))
	}
	return out
}

func procKillAll(pids []int) {
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

// procBuffer collects a process's output while the test reads it.
type procBuffer struct{ logbuf.Buffer }

// tail returns at most the last n bytes, cut at a line start.
func (b *procBuffer) tail(n int) string {
	s := b.String()
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return "…\n" + s
}
