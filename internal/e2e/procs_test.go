//go:build linux

package e2e

// Issue 3's acceptance: several `trueup serve` processes (the built binary) share one
// database. They split the reconcile work without ever running one resource twice at once,
// sync each source from one replica at a time, survive the crash of the replica holding the
// source's lease, and ride out a PostgreSQL restart without being restarted themselves.
// These tests run one after another: each starts several processes on a 2-core machine.

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// TestProcsThreeReplicas: three replicas, 300 resources; all become Ready, the work is spread
// over the replicas, no resource runs twice at once, one replica syncs the source.
func TestProcsThreeReplicas(t *testing.T) {
	url := pgtest.NewDatabase(t, store.MigrateURL)
	w := procSetup(t, url, "0.02")
	files, want := procManifests(300, 6, func(i int) int { return 1 + i%100 })
	head := w.commit(files, "300 databases")
	began := time.Now()
	w.start(3)

	// While the work runs, the source's lease never has two holders.
	samples, i := 0, 0
	w.eventually(120*time.Second, "300 resources Ready", func() (bool, string) {
		r := w.replicas[i%len(w.replicas)]
		i++
		var l procReplicaList
		if code, err := w.get(r, "/api/v1/replicas", &l); err == nil && code == http.StatusOK {
			samples++
			if h := l.holders("source:infra"); len(h) > 1 {
				t.Errorf("source:infra held by %d replicas at once: %+v", len(h), h)
			}
		}
		var page procPage
		if err := w.getAny("/api/v1/resources?limit=1000", &page); err != nil {
			return false, err.Error()
		}
		return procAllReady(page.Items, want)
	})
	t.Logf("300 resources Ready %s after the replicas started (%d lease samples)", time.Since(began).Round(time.Millisecond), samples)

	var src wire.SourceDetail
	if err := w.getAny("/api/v1/sources/infra", &src); err != nil || src.Revision != head {
		t.Errorf("source revision %q, want %s (%v)", src.Revision, head, err)
	}
	var l procReplicaList
	if err := w.getAny("/api/v1/replicas", &l); err != nil {
		t.Fatal(err)
	}
	names := map[string]int{} // replica name → our index
	for _, it := range l.Items {
		if r := w.byPID(it.PID); r != nil && it.Alive {
			names[it.Name] = r.idx
		}
	}
	if len(names) != 3 {
		t.Errorf("replicas endpoint lists %d of our 3 replicas alive: %+v", len(names), l.Items)
	}
	holders := l.holders("source:infra")
	if len(holders) != 1 {
		t.Fatalf("source:infra held by %d replicas, want exactly 1: %+v", len(holders), l.Items)
	}
	holder := holders[0].Name

	// The call logs: every resource reconciled at generation 1, never twice at once, by
	// more than one process.
	calls := w.calls()
	perReplica := map[int]int{}
	perID := map[string]int{}
	for _, c := range calls {
		if c.op != "reconcile" || c.gen != 1 {
			t.Errorf("unexpected call %+v", c)
		}
		perReplica[c.replica]++
		perID[c.id]++
	}
	for id := range want {
		if perID[id] == 0 {
			t.Errorf("%s was never reconciled", id)
		}
	}
	var twice []string
	for id, n := range perID {
		if n > 1 {
			twice = append(twice, fmt.Sprintf("%s×%d", id, n))
		}
	}
	if len(twice) > 0 {
		// Allowed (a replica starved for longer than leaseTTL loses its lease, and its result
		// is discarded), but worth seeing; the history check below is the strict one.
		t.Logf("resources called more than once at generation 1: %v", twice)
	}
	if o := procOverlaps(calls); len(o) > 0 {
		t.Errorf("overlapping calls: %v", o)
	}
	if len(perReplica) < 2 {
		t.Errorf("calls were not spread over the processes: %v", perReplica)
	}
	t.Logf("calls per replica: %v (%d in all)", perReplica, len(calls))

	// History and events say the same: reconciles from several replicas, the ingest from one.
	st := procDB(t, url)
	// Exactly one completed attempt per resource: a call whose lease was lost never commits.
	if dup := procStrings(t, st, `SELECT namespace || '/' || name || ' ' || count(*) || ' ' || string_agg(result, ',')
		FROM reconcile_history GROUP BY namespace, kind, name HAVING count(*) <> 1 OR bool_or(result <> 'Succeeded')`); len(dup) > 0 {
		t.Errorf("resources without exactly one Succeeded history row: %v", dup)
	}
	if n := procStrings(t, st, "SELECT count(DISTINCT (namespace, kind, name))::text FROM reconcile_history"); n[0] != "300" {
		t.Errorf("history covers %s resources, want 300", n[0])
	}
	histReplicas := procStrings(t, st, "SELECT DISTINCT replica FROM reconcile_history ORDER BY 1")
	for _, n := range histReplicas {
		if _, ok := names[n]; !ok {
			t.Errorf("reconcile_history names replica %q, not one of ours %v", n, names)
		}
	}
	if len(histReplicas) < 2 {
		t.Errorf("reconcile_history shows work from %v only", histReplicas)
	}
	var evs struct{ Items []wire.Event }
	if err := w.getAny("/api/v1/events?limit=1000", &evs); err != nil {
		t.Fatal(err)
	}
	created, reconciled := map[string]int{}, map[string]int{}
	for _, e := range evs.Items {
		switch e.Reason {
		case "Created":
			created[e.Replica]++
		case "Reconciled":
			reconciled[e.Replica]++
		}
	}
	if len(created) != 1 || created[holder] != 300 {
		t.Errorf("Created events by replica %v, want all 300 from the source's holder %s", created, holder)
	}
	if len(reconciled) < 2 {
		t.Errorf("Reconciled events by replica %v, want several replicas", reconciled)
	}
}

// TestProcsKillLeaseHolder: the replica holding the source's lease dies (with everything it
// started) while reconciles are in flight; another replica takes the source over, the
// interrupted work is redone without overlap, and a new commit is applied by the new holder.
func TestProcsKillLeaseHolder(t *testing.T) {
	url := pgtest.NewDatabase(t, store.MigrateURL)
	w := procSetup(t, url, "2")
	// A lease TTL far longer than the takeover may take: the dead replica is found through
	// its database session, not by waiting for its leases to expire.
	w.leaseTTL = "30s"
	size := func(i int) int { return 1 + i%100 }
	files, want := procManifests(36, 3, size)
	w.commit(files, "36 databases")
	w.start(3)
	st := procDB(t, url)

	victim, victimName := w.reconcilingHolder()
	// What the victim holds right before it dies (read before the kill: a peer releases it
	// within a poll of the kill). A call may still finish between this read and the kill.
	leased := procStrings(t, st, "SELECT namespace || '/' || kind || '/' || name FROM resources JOIN resource_queue USING (id) WHERE lease_owner = $1", victimName)
	killedAt := time.Now()
	w.crash(victim)
	t.Logf("crashed r%d (%s) holding source:infra with %d reconciles leased: %v", victim.idx, victimName, len(leased), leased)

	// Another replica takes the source over, long before the 30 s leases could expire.
	var newHolder string
	w.eventually(10*time.Second, "another replica holding source:infra", func() (bool, string) {
		var l procReplicaList
		if err := w.getAny("/api/v1/replicas", &l); err != nil {
			return false, err.Error()
		}
		h := l.holders("source:infra")
		if len(h) != 1 || h[0].Name == victimName {
			return false, fmt.Sprintf("holders %+v", h)
		}
		newHolder = h[0].Name
		return true, ""
	})
	t.Logf("source:infra taken over by %s %s after the crash", newHolder, time.Since(killedAt).Round(time.Millisecond))

	w.waitReady(60*time.Second, want)
	var page procPage
	if err := w.getAny("/api/v1/resources?limit=1000&phase=Reconciling", &page); err != nil || len(page.Items) > 0 {
		t.Errorf("resources left Reconciling: %d (%v)", len(page.Items), err)
	}
	if left := procStrings(t, st, "SELECT name FROM resources JOIN resource_queue USING (id) WHERE lease_owner = $1", victimName); len(left) > 0 {
		t.Errorf("resources still leased to the dead replica: %v", left)
	}
	calls := w.calls()
	if o := procOverlaps(calls); len(o) > 0 {
		t.Errorf("overlapping calls: %v", o)
	}
	// Each attempt the crash cut short is in history as Interrupted, naming the dead replica.
	// The attempts the crash cut short are those in history as Interrupted, naming the dead
	// replica: all of them were leased to it right before the kill.
	inFlight := procStrings(t, st, `SELECT namespace || '/' || kind || '/' || name FROM reconcile_history
		WHERE result = 'Interrupted' AND replica = $1`, victimName)
	if len(inFlight) == 0 {
		t.Fatalf("no attempt of the victim is recorded as Interrupted (it held %v)", leased)
	}
	for _, id := range inFlight {
		if !slices.Contains(leased, id) {
			t.Errorf("%s recorded as Interrupted but was not leased to the victim (%v)", id, leased)
		}
	}
	// What the victim had in flight was redone by a survivor after the crash.
	for _, id := range inFlight {
		redone := slices.ContainsFunc(calls, func(c procCall) bool {
			return c.id == id && c.replica != victim.idx && c.start > killedAt.UnixNano()
		})
		if !redone {
			t.Errorf("%s (in flight on the victim) was not reconciled by a survivor after the crash", id)
		}
	}

	// A new commit is applied by the new holder.
	ns, name := procName(0)
	files = map[string]string{"manifests/dbs/extra.yaml": dbResource("team-z", "late", 42)}
	var docs []string
	for i := 0; i < 36; i += 3 {
		n, nm := procName(i)
		s := size(i)
		if i == 0 {
			s = 99 // db000 grows: generation 2
		}
		docs = append(docs, dbResource(n, nm, s))
	}
	files["manifests/dbs/part00.yaml"] = strings.Join(docs, "---\n")
	head := w.commit(files, "grow db000, add late")
	want[ns+"/Database/"+name] = 2
	want["team-z/Database/late"] = 1
	w.waitReady(30*time.Second, want)
	var src wire.SourceDetail
	if err := w.getAny("/api/v1/sources/infra", &src); err != nil || src.Revision != head {
		t.Errorf("source revision %q, want %s (%v)", src.Revision, head, err)
	}
	var evs struct{ Items []wire.Event }
	if err := w.getAny("/api/v1/resources/team-z/Database/late/events", &evs); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(evs.Items, func(e wire.Event) bool { return e.Reason == "Created" })
	if i < 0 || evs.Items[i].Replica != newHolder {
		t.Errorf("team-z/late's Created event %+v, want one by the new holder %s", evs.Items, newHolder)
	}
}

// TestProcsPostgresRestart: PostgreSQL goes away for 10 s; the replicas report not ready but
// stay up, and once it is back they carry on without a restart: nothing is lost and a new
// commit becomes Ready.
func TestProcsPostgresRestart(t *testing.T) {
	cluster := pgtest.StartCluster(t)
	url := cluster.URL("trueup") // created by StartCluster; trueup migrates it at start
	w := procSetup(t, url, "0.02")
	size := func(i int) int { return 1 + i }
	files, want := procManifests(20, 2, size)
	w.commit(files, "20 databases")
	w.start(2)
	w.waitReady(60*time.Second, want)

	if err := cluster.Stop(); err != nil {
		t.Fatal(err)
	}
	downAt := time.Now()
	// During the outage (its length is the fault, not a wait for work), every replica stays
	// alive and says so, and says it is not ready.
	notReady := map[int]bool{}
	for time.Since(downAt) < 10*time.Second {
		w.alive()
		for _, r := range w.running() {
			if code, err := w.get(r, "/healthz", nil); code != http.StatusOK {
				t.Errorf("r%d /healthz during the outage: %d %v", r.idx, code, err)
			}
			code, err := w.get(r, "/readyz", nil)
			switch {
			case code == http.StatusServiceUnavailable:
				notReady[r.idx] = true
			case notReady[r.idx] || time.Since(downAt) > 5*time.Second:
				t.Errorf("r%d /readyz %s into the outage: %d %v", r.idx, time.Since(downAt).Round(time.Millisecond), code, err)
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	if len(notReady) != 2 {
		t.Errorf("replicas that answered 503 on /readyz during the outage: %v", notReady)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cluster.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	upAt := time.Now()
	for _, r := range w.running() {
		w.eventually(30*time.Second, fmt.Sprintf("r%d ready again", r.idx), func() (bool, string) {
			code, err := w.get(r, "/readyz", nil)
			return code == http.StatusOK, fmt.Sprint(code, " ", err)
		})
	}
	t.Logf("replicas ready %s after PostgreSQL came back", time.Since(upAt).Round(time.Millisecond))

	// A commit pushed after the restart is applied and reconciled; nothing earlier is lost.
	var docs []string
	for i := 0; i < 20; i += 2 {
		ns, name := procName(i)
		s := size(i)
		if i == 0 {
			s = 77
		}
		docs = append(docs, dbResource(ns, name, s))
	}
	head := w.commit(map[string]string{
		"manifests/dbs/part00.yaml": strings.Join(docs, "---\n"),
		"manifests/dbs/after.yaml":  dbResource("team-z", "after", 5),
	}, "after the restart")
	ns, name := procName(0)
	want[ns+"/Database/"+name] = 2
	want["team-z/Database/after"] = 1
	items := w.waitReady(60*time.Second, want)
	t.Logf("commit after the restart Ready %s after PostgreSQL came back", time.Since(upAt).Round(time.Millisecond))
	if len(items) != len(want) {
		t.Errorf("%d resources listed, want %d", len(items), len(want))
	}
	var src wire.SourceDetail
	if err := w.getAny("/api/v1/sources/infra", &src); err != nil || src.Revision != head {
		t.Errorf("source revision %q, want %s (%v)", src.Revision, head, err)
	}
	var l procReplicaList
	if err := w.getAny("/api/v1/replicas", &l); err != nil {
		t.Fatal(err)
	}
	alive := 0
	for _, it := range l.Items {
		if w.byPID(it.PID) != nil && it.Alive {
			alive++
		}
	}
	if h := l.holders("source:infra"); alive != 2 || len(h) != 1 {
		t.Errorf("after the restart: %d of 2 replicas alive, source:infra holders %+v", alive, h)
	}
	calls := w.calls()
	if o := procOverlaps(calls); len(o) > 0 {
		t.Errorf("overlapping calls: %v", o)
	}
	ids := map[string]bool{}
	for _, c := range calls {
		ids[c.id] = true
	}
	missing := []string{}
	for id := range want {
		if !ids[id] {
			missing = append(missing, id)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("never reconciled: %v", missing)
	}
}
