package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// rowVersions returns each resource's xmin: it changes whenever the row is rewritten.
func rowVersions(t *testing.T, st *store.Store) map[string]string {
	t.Helper()
	rows, err := st.Pool().Query(context.Background(), "SELECT namespace || '/' || name, xmin::text FROM resources")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		out[k] = v
	}
	return out
}

type historyList struct {
	Items []wire.HistoryEntry `json:"items"`
}

// TestWholeLoop walks the spine: create, change one spec, remove a manifest.
func TestWholeLoop(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	ctx := context.Background()
	e.commit(map[string]string{
		"manifests/types/database.yaml": dbType,
		"manifests/dbs/a.yaml":          dbResource("prod", "orders", 10),
		"manifests/dbs/b.yaml":          dbResource("prod", "users", 20) + "---\n" + dbResource("staging", "orders", 5),
		"README.md":                     "not a manifest",
	}, "three databases")
	if _, err := e.syncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	all := []string{"prod/orders", "prod/users", "staging/orders"}
	e.waitPhase("Ready", 1, all...)

	for _, n := range all {
		ns, name, _ := strings.Cut(n, "/")
		r, _ := e.resource(ns, "database", name) // kind is case-insensitive
		ready := r.Status.Conditions[0]
		if ready.Type != "Ready" || ready.Status != "True" || ready.ObservedGeneration != 1 {
			t.Errorf("%s: Ready condition %+v", n, ready)
		}
		var out map[string]any
		if err := json.Unmarshal(r.Status.Outputs, &out); err != nil || out["address"] != name+"."+ns+".internal" {
			t.Errorf("%s: outputs %s (%v)", n, r.Status.Outputs, err)
		}
		var spec map[string]any
		if err := json.Unmarshal(r.Spec, &spec); err != nil || spec["engine"] != "postgres" {
			t.Errorf("%s: schema default not applied: %s", n, r.Spec)
		}
		var h historyList
		e.get("/api/v1/resources/"+ns+"/Database/"+name+"/history", &h)
		if len(h.Items) != 1 || h.Items[0].Result != "Succeeded" || h.Items[0].Trigger != "created" {
			t.Errorf("%s: history %+v", n, h.Items)
		}
	}

	// One spec changes: only that resource moves to generation 2 and is reconciled again.
	before := rowVersions(t, e.store)
	callsBefore := len(e.calls())
	e.commit(map[string]string{"manifests/dbs/a.yaml": dbResource("prod", "orders", 11)}, "grow orders")
	out, err := e.syncOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.Updated != 1 || out.Result.Unchanged != 2 {
		t.Fatalf("apply result %+v, want 1 updated, 2 unchanged", out.Result)
	}
	e.waitPhase("Ready", 2, "prod/orders")
	r, _ := e.resource("prod", "Database", "orders")
	var outs map[string]any
	_ = json.Unmarshal(r.Status.Outputs, &outs)
	if r.Metadata.Generation != 2 || outs["size"] != 11.0 {
		t.Errorf("orders after change: generation %d outputs %s", r.Metadata.Generation, r.Status.Outputs)
	}
	after := rowVersions(t, e.store)
	for _, n := range []string{"prod/users", "staging/orders"} {
		if before[n] != after[n] {
			t.Errorf("%s was rewritten (xmin %s → %s)", n, before[n], after[n])
		}
	}
	newCalls := e.calls()[callsBefore:]
	if len(newCalls) != 1 || newCalls[0].id != "prod/Database/orders" || newCalls[0].gen != "2" {
		t.Errorf("calls after change: %+v", newCalls)
	}

	// A manifest removed: the action's delete runs, the resource is gone, its history stays.
	e.commit(map[string]string{"manifests/dbs/a.yaml": ""}, "drop orders")
	if _, err := e.syncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	e.eventually(20*time.Second, "prod/orders deleted", func() (bool, string) {
		_, code := e.resource("prod", "Database", "orders")
		return code == 404, fmt.Sprint("code ", code)
	})
	var deleted bool
	for _, c := range e.calls() {
		deleted = deleted || (c.id == "prod/Database/orders" && c.op == "delete")
	}
	if !deleted {
		t.Error("the action's delete was not called")
	}
	var h historyList
	if code := e.get("/api/v1/resources/prod/Database/orders/history", &h); code != 200 || len(h.Items) != 3 {
		t.Fatalf("history after delete: code %d, %d items", code, len(h.Items))
	}
	if h.Items[0].Operation != "delete" || h.Items[0].Result != "Succeeded" {
		t.Errorf("newest history entry %+v", h.Items[0])
	}
	if _, code := e.resource("prod", "Database", "users"); code != 200 {
		t.Errorf("prod/users: %d", code)
	}
}

// TestInvalidCommitRejectedWhole: every kind of bad manifest rejects the whole revision,
// changes no resource, reports file:line, and the next good commit applies.
func TestInvalidCommitRejectedWhole(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	ctx := context.Background()
	e.commit(map[string]string{
		"manifests/types/database.yaml": dbType,
		"manifests/dbs/a.yaml":          dbResource("prod", "orders", 10),
	}, "good")
	good, err := e.syncOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.waitPhase("Ready", 1, "prod/orders") // the replica's reconciler writes the row no more
	cases := []struct {
		name  string
		files map[string]string
		want  []string // substrings of the source's errors, each with file:line
	}{
		{"schema violation", map[string]string{"manifests/dbs/a.yaml": dbResource("prod", "orders", 500)},
			[]string{"manifests/dbs/a.yaml:7"}},
		{"broken yaml", map[string]string{"manifests/dbs/a.yaml": dbResource("prod", "orders", 12) + "  bad: [unclosed\n"},
			[]string{"manifests/dbs/a.yaml:"}},
		{"unknown kind", map[string]string{"manifests/dbs/c.yaml": strings.Replace(dbResource("prod", "cache", 1), "kind: Database", "kind: Cache", 1)},
			[]string{"manifests/dbs/c.yaml:2", "unknown kind"}},
		{"duplicate identity", map[string]string{"manifests/dbs/dup.yaml": dbResource("prod", "orders", 12)},
			[]string{"manifests/dbs/dup.yaml:1", "manifests/dbs/a.yaml:1"}},
		{"two errors in two files", map[string]string{
			"manifests/dbs/a.yaml": dbResource("prod", "orders", 0),
			"manifests/dbs/x.yaml": dbResource("prod", "Bad_Name", 1)},
			[]string{"manifests/dbs/a.yaml:7", "manifests/dbs/x.yaml:4"}},
	}
	for _, tc := range cases {
		before := rowVersions(t, e.store)
		e.resetTree(good.Revision)
		rev := e.commit(tc.files, tc.name)
		if _, err := e.syncOnce(ctx); err == nil {
			t.Fatalf("%s: sync succeeded", tc.name)
		}
		src, err := e.store.GetSource(ctx, "infra")
		if err != nil {
			t.Fatal(err)
		}
		if src.Revision != good.Revision || src.LastAttemptedRevision != rev {
			t.Errorf("%s: revision %s attempted %s", tc.name, src.Revision, src.LastAttemptedRevision)
		}
		ready := src.Conditions[0]
		if ready.Type != "Ready" || ready.Status != "False" || ready.Reason != "ValidationFailed" {
			t.Errorf("%s: Ready %+v", tc.name, ready)
		}
		var all strings.Builder
		for _, se := range src.Errors {
			fmt.Fprintf(&all, "%s:%d: %s: %s\n", se.File, se.Line, se.Path, se.Message)
		}
		for _, w := range tc.want {
			if !strings.Contains(all.String()+ready.Message, w) {
				t.Errorf("%s: errors lack %q:\n%s", tc.name, w, all.String())
			}
		}
		if after := rowVersions(t, e.store); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("%s: resources changed: %v → %v", tc.name, before, after)
		}
		// The API reports the same.
		var api wire.SourceDetail
		if code := e.get("/api/v1/sources/infra", &api); code != 200 || len(api.Errors) == 0 {
			t.Errorf("%s: API source %d %+v", tc.name, code, api)
		}
	}
	// The next good commit applies.
	e.resetTree(good.Revision)
	rev := e.commit(map[string]string{"manifests/dbs/a.yaml": dbResource("prod", "orders", 13)}, "fixed")
	out, err := e.syncOnce(ctx)
	if err != nil || out.Revision != rev || out.Result.Updated != 1 {
		t.Fatalf("good commit after bad ones: %+v %v", out, err)
	}
	src, _ := e.store.GetSource(ctx, "infra")
	if src.Conditions[0].Status != "True" || len(src.Errors) != 0 {
		t.Errorf("source after recovery: %+v", src)
	}
}

// TestFailingActionRetriesWithBackoff: a failing script makes the resource Failed with the
// stderr tail, retries with growing delays, and recovers once the script succeeds.
func TestFailingActionRetriesWithBackoff(t *testing.T) {
	t.Parallel()
	e := setup(t, options{backoff: [2]time.Duration{150 * time.Millisecond, 5 * time.Second}})
	if err := os.WriteFile(e.failFlg, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.commit(map[string]string{"manifests/t.yaml": dbType, "manifests/a.yaml": dbResource("prod", "orders", 10)}, "one")
	if _, err := e.syncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.eventually(20*time.Second, "4 failed attempts", func() (bool, string) {
		n := 0
		for _, c := range e.calls() {
			if c.failed {
				n++
			}
		}
		return n >= 4, fmt.Sprint(n, " failures")
	})
	r, _ := e.resource("prod", "Database", "orders")
	if r.Status.Phase != "Failed" || !strings.Contains(r.Status.Message, "quota exceeded for orders") {
		t.Errorf("while failing: phase %s message %q", r.Status.Phase, r.Status.Message)
	}
	ready := r.Status.Conditions[0]
	if ready.Status != "False" || ready.Reason != "ActionFailed" {
		t.Errorf("Ready while failing: %+v", ready)
	}
	var starts []int64
	for _, c := range e.calls() {
		starts = append(starts, c.start)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	// Delays double (±20% jitter): the n-th retry waits at least 0.8 × 150 ms × 2^(n-1)
	// after the attempt before it started. A loaded machine only adds to a gap, so these
	// lower bounds, which grow, hold whatever else runs (comparing measured gaps does not:
	// an attempt's own run time is part of its gap).
	for i := 1; i < len(starts) && i < 4; i++ {
		gap := time.Duration(starts[i] - starts[i-1])
		least := time.Duration(float64(150*time.Millisecond) * 0.8 * float64(int(1)<<(i-1)))
		if gap < least-10*time.Millisecond {
			t.Errorf("retry %d came %v after the attempt before it; backoff says at least %v", i, gap, least)
		}
	}
	var evs struct{ Items []wire.Event }
	e.get("/api/v1/resources/prod/Database/orders/events", &evs)
	if len(evs.Items) == 0 || evs.Items[0].Type != "Warning" {
		t.Errorf("events while failing: %+v", evs.Items)
	}
	if err := os.Remove(e.failFlg); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("Ready", 1, "prod/orders")
	r, _ = e.resource("prod", "Database", "orders")
	if r.Status.Message != "ok" {
		t.Errorf("message after recovery %q", r.Status.Message)
	}
}

// TestTwoReconcilersNeverOverlap: two reconciler instances on one database never run the
// same resource at once, even with frequent resyncs and short leases.
func TestTwoReconcilersNeverOverlap(t *testing.T) {
	t.Parallel()
	e := setup(t, options{sleep: "0.05", workers: 4, leaseTTL: 2 * time.Second})
	files := map[string]string{"manifests/t.yaml": strings.Replace(dbType, "  action:", "  resyncInterval: 100ms\n  action:", 1)}
	for i := 0; i < 12; i++ {
		files[fmt.Sprintf("manifests/db%02d.yaml", i)] = dbResource("prod", fmt.Sprintf("db%02d", i), 1+i)
	}
	e.commit(files, "twelve")
	if _, err := e.syncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	r1, r2 := e.replicas[0], e.start("r2", e.o)
	// Both reconcilers must have done some of the work: on a loaded machine the second may
	// start claiming only after the first took every first reconcile (resyncs in sync write no
	// history), so the holders of leases are sampled while the calls go on.
	seen := map[string]bool{}
	e.eventually(30*time.Second, "60 calls by both reconcilers", func() (bool, string) {
		rows, err := e.store.Pool().Query(context.Background(),
			"SELECT DISTINCT replica FROM reconcile_history UNION SELECT DISTINCT lease_owner FROM resource_queue WHERE lease_owner IS NOT NULL")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var r string
			_ = rows.Scan(&r)
			seen[r] = true
		}
		rows.Close()
		n := len(e.calls())
		return n >= 60 && seen["r1"] && seen["r2"], fmt.Sprint(n, " calls by ", seen)
	})
	r1.Stop()
	r2.Stop()
	byID := map[string][]call{}
	for _, c := range e.calls() {
		byID[c.id] = append(byID[c.id], c)
	}
	if len(byID) != 12 {
		t.Errorf("%d resources called, want 12", len(byID))
	}
	for id, cs := range byID {
		sort.Slice(cs, func(i, j int) bool { return cs[i].start < cs[j].start })
		for i := 1; i < len(cs); i++ {
			if cs[i].start < cs[i-1].end {
				t.Errorf("%s: calls overlap: [%d,%d] and [%d,%d]", id, cs[i-1].start, cs[i-1].end, cs[i].start, cs[i].end)
			}
		}
	}
}

// TestSamePollWritesNothing: a poll that finds the same commit fetches nothing and writes
// nothing to the database.
func TestSamePollWritesNothing(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	ctx := context.Background()
	e.commit(map[string]string{"manifests/t.yaml": dbType, "manifests/a.yaml": dbResource("prod", "orders", 10)}, "one")
	if _, err := e.syncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	fetches := e.fetches()
	snapshot := func() string {
		var s string
		err := e.store.Pool().QueryRow(ctx, `SELECT
			(SELECT string_agg(xmin::text, ',') FROM sources) || '|' ||
			(SELECT string_agg(xmin::text, ',') FROM resources) || '|' ||
			(SELECT count(*) FROM events)::text || '|' || (SELECT count(*) FROM resource_types)::text || '|' ||
			(SELECT string_agg(xmin::text, ',') FROM resource_types)`).Scan(&s)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	e.waitPhase("Ready", 1, "prod/orders") // the replica's reconciler writes no more
	before := snapshot()
	for i := 0; i < 3; i++ {
		out, err := e.syncOnce(ctx)
		if err != nil || !out.Unchanged {
			t.Fatalf("poll %d: %+v %v", i, out, err)
		}
	}
	if got := e.fetches(); got != fetches {
		t.Errorf("fetches %d → %d on unchanged polls", fetches, got)
	}
	if after := snapshot(); after != before {
		t.Errorf("database written on unchanged polls: %s → %s", before, after)
	}
}
