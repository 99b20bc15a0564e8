package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
)

// TestStalledUntilSpecChanges: an action that says it cannot succeed (exit 78) stalls the
// resource: Stalled=True, Ready=False, no retry scheduled; a new generation runs again.
func TestStalledUntilSpecChanges(t *testing.T) {
	t.Parallel()
	e := setup(t, options{env: map[string]string{"FAIL_EXIT": "78"}, backoff: [2]time.Duration{50 * time.Millisecond, 100 * time.Millisecond}})
	if err := os.WriteFile(e.failFlg, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.commit(map[string]string{"manifests/t.yaml": dbType, "manifests/a.yaml": dbResource("prod", "a", 1)}, "one")
	if _, err := e.syncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.eventually(10*time.Second, "stalled", func() (bool, string) {
		r, _ := e.resource("prod", "Database", "a")
		c, _ := status.Get(r.Status.Conditions, status.Stalled)
		return c.Status == status.True, fmt.Sprintf("%+v", r.Status)
	})
	r, _ := e.resource("prod", "Database", "a")
	ready, _ := status.Get(r.Status.Conditions, status.Ready)
	if ready.Status != status.False || ready.Reason != "Stalled" || r.Status.Phase != "Failed" || r.Status.ObservedGeneration != 1 {
		t.Errorf("stalled resource: phase %s observed %d Ready %+v", r.Status.Phase, r.Status.ObservedGeneration, ready)
	}
	if _, ok := status.Get(r.Status.Conditions, status.Reconciling); ok {
		t.Error("Reconciling and Stalled together")
	}
	var runAt *time.Time
	if err := e.store.Pool().QueryRow(context.Background(), "SELECT run_at FROM resource_queue").Scan(&runAt); err != nil || runAt != nil {
		t.Errorf("a stalled resource has a retry scheduled at %v (%v)", runAt, err)
	}
	// A spec change is a new chance.
	if err := os.Remove(e.failFlg); err != nil {
		t.Fatal(err)
	}
	e.commit(map[string]string{"manifests/a.yaml": dbResource("prod", "a", 2)}, "fix")
	if _, err := e.syncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("Ready", 2, "prod/a")
	r, _ = e.resource("prod", "Database", "a")
	if _, ok := status.Get(r.Status.Conditions, status.Stalled); ok {
		t.Errorf("Stalled kept after recovery: %+v", r.Status.Conditions)
	}
}

// TestNewGenerationWhileInFlight: a spec change while the action runs is remembered and
// reconciled right after the running call, never next to it.
func TestNewGenerationWhileInFlight(t *testing.T) {
	t.Parallel()
	e := setup(t, options{sleep: "1"})
	e.commit(map[string]string{"manifests/t.yaml": dbType, "manifests/a.yaml": dbResource("prod", "a", 1)}, "one")
	if _, err := e.syncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.eventually(10*time.Second, "first call in flight", func() (bool, string) {
		var leased bool
		_ = e.store.Pool().QueryRow(context.Background(), "SELECT lease_owner IS NOT NULL FROM resource_queue").Scan(&leased)
		return leased, ""
	})
	e.commit(map[string]string{"manifests/a.yaml": dbResource("prod", "a", 2)}, "change while running")
	if _, err := e.syncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	var dirty bool
	_ = e.store.Pool().QueryRow(context.Background(), "SELECT dirty FROM resource_queue").Scan(&dirty)
	if !dirty {
		t.Error("the change was not remembered as dirty while leased")
	}
	e.waitPhase("Ready", 2, "prod/a")
	cs := e.calls()
	sort.Slice(cs, func(i, j int) bool { return cs[i].start < cs[j].start })
	if len(cs) != 2 || cs[0].gen != "1" || cs[1].gen != "2" || cs[1].start < cs[0].end {
		t.Fatalf("calls %+v", cs)
	}
	if gap := time.Duration(cs[1].start - cs[0].end); gap > 2*time.Second {
		t.Errorf("generation 2 waited %s after generation 1 finished", gap)
	}
	h, _ := e.store.ListHistory(context.Background(), "prod", "Database", "a", 10)
	if len(h) != 2 || h[0].Generation != 2 || h[1].Generation != 1 {
		t.Errorf("history %+v", h)
	}
}

// TestDirSourceAppliesSavedFile: saving a file in a watched folder applies it within about a
// second (the development loop).
func TestDirSourceAppliesSavedFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "types.yaml"), dbType)
	e := setup(t, options{source: fmt.Sprintf("name: local, dir: {path: %q, interval: 1h}", dir)})
	ctx := context.Background()
	e.start("dev", e.o)
	e.eventually(10*time.Second, "types applied", func() (bool, string) {
		ts, _ := e.store.ListTypes(ctx)
		return len(ts) == 1, ""
	})
	// An editor's swap file is ignored; the saved file is applied.
	writeFile(t, filepath.Join(dir, ".db.yaml.swp"), "garbage")
	start := time.Now()
	writeFile(t, filepath.Join(dir, "db.yaml"), dbResource("dev", "scratch", 3))
	e.eventually(10*time.Second, "saved file applied", func() (bool, string) {
		_, code := e.resource("dev", "Database", "scratch")
		return code == 200, fmt.Sprint(code)
	})
	t.Logf("file saved → resource applied: %s", time.Since(start).Round(time.Millisecond))
	src2, _ := e.store.GetSource(ctx, "local")
	if !strings.HasPrefix(src2.Revision, "sha256:") || len(src2.Errors) != 0 {
		t.Errorf("source %+v", src2)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRetention: history and events beyond the rules are removed; the newest are kept.
func TestRetention(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	ctx := context.Background()
	_, err := e.store.Pool().Exec(ctx, `
		INSERT INTO reconcile_history (resource_uid, namespace, kind, name, generation, operation, trigger, result, started_at, finished_at)
		SELECT gen_random_uuid(), 'ns', 'Database', 'r' || (i % 3), i, 'reconcile', 'retry', 'Failed',
		       now() - (i || ' hours')::interval, now() - (i || ' hours')::interval
		FROM generate_series(1, 30) i;
		INSERT INTO events (namespace, kind, name, type, reason, message, created_at)
		SELECT 'ns', 'Database', 'r0', 'Warning', 'X', 'm', now() - (i || ' days')::interval FROM generate_series(1, 10) i`)
	if err != nil {
		t.Fatal(err)
	}
	n, err := e.store.EnforceRetention(ctx, store.RetentionRule{MaxAge: 24 * time.Hour, MaxPerResource: 4}, store.RetentionRule{MaxAge: 72 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var perRes, maxAgeH, evs int
	_ = e.store.Pool().QueryRow(ctx, `SELECT max(c), (SELECT max(EXTRACT(EPOCH FROM now() - finished_at) / 3600)::int FROM reconcile_history),
		(SELECT count(*) FROM events) FROM (SELECT count(*) c FROM reconcile_history GROUP BY name) x`).Scan(&perRes, &maxAgeH, &evs)
	if perRes > 4 || maxAgeH > 24 || evs != 2 {
		t.Errorf("after retention: %d per resource, oldest %d h, %d events (removed %+v)", perRes, maxAgeH, evs, n)
	}
	// r1's rows are i = 1, 4, …, 28; those older than 24 h go, then the 4 newest stay.
	h, _ := e.store.ListHistory(ctx, "ns", "Database", "r1", 10)
	var gens []int64
	for _, x := range h {
		gens = append(gens, x.Generation)
	}
	if fmt.Sprint(gens) != "[22 19 16 13]" {
		t.Errorf("r1 history kept generations %v, want [22 19 16 13]", gens)
	}
}

// TestSourceRecoversWhenHeadIsGoodAgain: after a rejected commit is reverted (the branch is
// back at the applied revision), the source is Ready again.
func TestSourceRecoversWhenHeadIsGoodAgain(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	ctx := context.Background()
	good := e.commit(map[string]string{"manifests/t.yaml": dbType, "manifests/a.yaml": dbResource("prod", "a", 1)}, "good")
	if _, err := e.syncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	e.commit(map[string]string{"manifests/a.yaml": "kind: [broken"}, "bad")
	if _, err := e.syncOnce(ctx); err == nil {
		t.Fatal("bad commit applied")
	}
	git(t, e.repo, "reset", "-q", "--hard", good) // force-push back to the good commit
	if out, err := e.syncOnce(ctx); err != nil || !out.Unchanged {
		t.Fatalf("sync after revert: %+v %v", out, err)
	}
	src, _ := e.store.GetSource(ctx, "infra")
	ready, _ := status.Get(src.Conditions, status.Ready)
	if ready.Status != status.True || len(src.Errors) != 0 || src.LastAttemptedRevision != good {
		t.Errorf("source after revert: Ready %+v errors %v attempted %s", ready, src.Errors, src.LastAttemptedRevision)
	}
	if !hasEvent(e.sourceEvents(), "Normal", "Recovered", "") {
		t.Error("no Recovered event")
	}
	// Healthy again: an unchanged poll writes nothing more.
	var before, after string
	_ = e.store.Pool().QueryRow(ctx, "SELECT xmin::text FROM sources").Scan(&before)
	if _, err := e.syncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	_ = e.store.Pool().QueryRow(ctx, "SELECT xmin::text FROM sources").Scan(&after)
	if before != after {
		t.Error("an unchanged healthy poll wrote the source row")
	}
}
