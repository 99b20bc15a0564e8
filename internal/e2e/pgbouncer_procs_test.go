//go:build linux

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/wire"
)

// TestProcsPgBouncer: issue 26's PgBouncer acceptance with the real binary. The database is
// owned by a role with no other right (no superuser, no replication) and reached through the
// real pgbouncer in transaction mode:
//   - a replica given only the pooled url refuses to start, naming database.sessionURL;
//   - two replicas with database.sessionURL direct migrate the database, sync the source and
//     reconcile every resource; a watch stream on one of them delivers the changes;
//   - the holder of the source's lease is killed mid-run: the other takes the source over
//     (found through its liveness session, long before the 30 s leases expire), redoes what
//     was in flight, and applies a new commit, which the watch stream shows.
func TestProcsPgBouncer(t *testing.T) {
	direct := pgtest.NewRoleDatabase(t)
	pooled := pgtest.PgBouncer(t, direct)
	w := procSetup(t, pooled, "1")

	// Without a session URL: refused before anything runs.
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "trueup.yaml")
	if err := os.WriteFile(cfgPath, []byte("reconcile: {workers: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, procBinary(t), "serve", "--config", cfgPath, "--listen", procFreeAddr(t), "--data-dir", filepath.Join(dir, "data"))
	cmd.Env = append(os.Environ(), "TRUEUP_DATABASE_URL="+pooled)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "set database.sessionURL") {
		t.Fatalf("serve through pgbouncer without a session URL: %v, want a refusal naming database.sessionURL\n%s", err, out)
	}

	t.Setenv("TRUEUP_DATABASE_SESSION_URL", direct) // the replicas inherit it
	w.leaseTTL = "30s"
	size := func(i int) int { return 1 + i%100 }
	files, want := procManifests(24, 3, size)
	w.commit(files, "24 databases")
	w.start(2)
	st := procDB(t, direct)

	// A watch stream on each replica (the one not killed keeps delivering).
	streams := make([]*procWatch, len(w.replicas))
	for i, r := range w.replicas {
		streams[i] = w.watch(r)
	}

	victim, victimName := w.reconcilingHolder()
	survivor := streams[0]
	if w.replicas[0] == victim {
		survivor = streams[1]
	}
	w.eventually(30*time.Second, "the watch stream delivering the sync's changes", func() (bool, string) {
		n := len(survivor.changes(func(c wire.Change) bool { return c.Object == "resource" }))
		return n > 0, fmt.Sprintf("%d resource changes", n)
	})
	killedAt := time.Now()
	w.crash(victim)

	w.eventually(10*time.Second, "the other replica holding source:infra", func() (bool, string) {
		var l procReplicaList
		if err := w.getAny("/api/v1/replicas", &l); err != nil {
			return false, err.Error()
		}
		h := l.holders("source:infra")
		return len(h) == 1 && h[0].Name != victimName, fmt.Sprintf("holders %+v", h)
	})
	t.Logf("source:infra taken over %s after the crash", time.Since(killedAt).Round(time.Millisecond))
	w.waitReady(90*time.Second, want)
	if left := procStrings(t, st, "SELECT name FROM resources JOIN resource_queue USING (id) WHERE lease_owner = $1", victimName); len(left) > 0 {
		t.Errorf("resources still leased to the dead replica: %v", left)
	}
	if o := procOverlaps(w.calls()); len(o) > 0 {
		t.Errorf("overlapping calls: %v", o)
	}

	// A new commit, applied by the survivor and shown on its watch stream.
	files = map[string]string{"manifests/dbs/extra.yaml": dbResource("team-z", "late", 42)}
	head := w.commit(files, "add late")
	want["team-z/Database/late"] = 1
	w.waitReady(60*time.Second, want)
	var src wire.SourceDetail
	if err := w.getAny("/api/v1/sources/infra", &src); err != nil || src.Revision != head {
		t.Errorf("source revision %q, want %s (%v)", src.Revision, head, err)
	}
	w.eventually(30*time.Second, "team-z/late Ready on the watch stream", func() (bool, string) {
		got := survivor.changes(func(c wire.Change) bool { return c.Namespace == "team-z" && c.Name == "late" })
		return slices.ContainsFunc(got, func(c wire.Change) bool { return c.Phase == "Ready" }), fmt.Sprintf("%+v", got)
	})
}

// procWatch is an open GET /api/v1/watch on one replica, collecting the changes it delivers.
type procWatch struct {
	mu  sync.Mutex
	all []wire.Change
}

func (p *procWatch) changes(keep func(wire.Change) bool) []wire.Change {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []wire.Change
	for _, c := range p.all {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}

// watch opens r's watch stream until the test ends (or r dies).
func (w *procWorld) watch(r *procReplica) *procWatch {
	w.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.addr+"/api/v1/watch", nil)
	resp, err := http.DefaultClient.Do(req) // no timeout: the stream stays open
	if err != nil {
		cancel()
		w.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		w.t.Fatalf("watch on r%d: %s", r.idx, resp.Status)
	}
	p := &procWatch{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var c wire.Change
			if json.Unmarshal([]byte(data), &c) == nil && c.Object != "" {
				p.mu.Lock()
				p.all = append(p.all, c)
				p.mu.Unlock()
			}
		}
	}()
	w.t.Cleanup(func() { cancel(); resp.Body.Close(); <-done })
	return p
}
