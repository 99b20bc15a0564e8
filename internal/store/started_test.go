package store

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/status"
)

// TestClaimStartedRelease: a claim stores no status; Started stores the status of a running
// call (fenced by the lease token: a result written first wins); Release shows a started call
// interrupted and leaves one that never started as it was.
func TestClaimStartedRelease(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	seedDue(t, st, "q1", "q2", "q3")
	type row struct {
		phase, reconciling string
		leased, started    bool
	}
	read := func(name string) row {
		t.Helper()
		var r row
		var cj []byte
		if err := st.pool.QueryRow(ctx, `SELECT phase, conditions, lease_owner IS NOT NULL, started_at IS NOT NULL FROM resources JOIN resource_queue USING (id) WHERE name = $1`, name).
			Scan(&r.phase, &cj, &r.leased, &r.started); err != nil {
			t.Fatal(err)
		}
		var conds []status.Condition
		if err := json.Unmarshal(cj, &conds); err != nil {
			t.Fatal(err)
		}
		if c, ok := status.Get(conds, status.Reconciling); ok {
			r.reconciling = c.Status + "/" + c.Reason
		}
		return r
	}
	before, err := st.LatestChange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := st.Claim(ctx, "a", 10, time.Minute)
	if err != nil || len(claimed) != 3 {
		t.Fatalf("claim: %d, %v", len(claimed), err)
	}
	by := map[string]Claimed{}
	for _, c := range claimed {
		by[c.Name] = c
	}
	for _, n := range []string{"q1", "q2", "q3"} {
		if got := read(n); got != (row{phase: "Pending", leased: true}) {
			t.Errorf("%s claimed: %+v, want Pending, leased, not started", n, got)
		}
	}
	if cs, err := st.ChangesSince(ctx, before, 100); err != nil || len(cs) != 0 {
		t.Errorf("a claim wrote %d changes (%v), want none", len(cs), err)
	}

	start := func(names ...string) []Start {
		var out []Start
		for _, n := range names {
			c := by[n]
			out = append(out, Start{ID: c.ID, Token: c.LeaseToken, Generation: c.Generation, Deleting: c.Deleting, Namespace: c.Namespace, Kind: c.Kind, Name: c.Name, Source: c.Source})
		}
		return out
	}
	if _, err := st.Started(ctx, start("q1", "q2")); err != nil {
		t.Fatal(err)
	}
	running := row{phase: status.PhaseReconciling, reconciling: status.True + "/" + status.ReasonProgressing, leased: true, started: true}
	for _, n := range []string{"q1", "q2"} {
		if got := read(n); got != running {
			t.Errorf("%s started: %+v, want %+v", n, got, running)
		}
	}
	cs, err := st.ChangesSince(ctx, before, 100)
	if err != nil || len(cs) != 2 || cs[0].Phase != status.PhaseReconciling || cs[1].Phase != status.PhaseReconciling {
		t.Errorf("changes after two starts: %+v (%v), want two Reconciling", cs, err)
	}

	// q2's result is written; a start stored late (its token is spent) changes nothing.
	q2 := by["q2"]
	if err := st.Complete(ctx, q2.ID, q2.LeaseToken, func(cur Current) Update {
		phase, conds, observed := status.Apply(cur.Conditions, cur.ObservedGeneration, status.Outcome{Generation: 1, CurrentGeneration: 1, Done: true}, time.Now())
		return Update{Phase: phase, Conditions: conds, ObservedGeneration: observed}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Started(ctx, start("q2")); err != nil {
		t.Fatal(err)
	}
	if got := read("q2"); got != (row{phase: status.PhaseReady}) {
		t.Errorf("q2 after its result and a late start: %+v, want Ready, unleased", got)
	}

	// Shutdown gives q1 (its call started) and q3 (never started) back.
	if err := st.Release(ctx, "a", []int64{by["q1"].ID, by["q3"].ID}, []string{by["q1"].LeaseToken, by["q3"].LeaseToken}); err != nil {
		t.Fatal(err)
	}
	if got, want := read("q1"), (row{phase: status.PhaseReconciling, reconciling: status.True + "/" + status.ReasonInterrupted}); got != want {
		t.Errorf("q1 released after its call started: %+v, want %+v", got, want)
	}
	if got := read("q3"); got != (row{phase: "Pending"}) {
		t.Errorf("q3 released before its call started: %+v, want Pending as before", got)
	}
	var hist int
	if err := st.pool.QueryRow(ctx, "SELECT count(*) FROM reconcile_history WHERE name IN ('q1', 'q3')").Scan(&hist); err != nil || hist != 0 {
		t.Errorf("history rows for given-back items: %d (%v), want none", hist, err)
	}
}

// TestReleaseRacingStarted: a start committed while Release waits for the row is seen by
// Release (the row is locked before started_at is read), so the attempt shows Interrupted;
// it is never left Reconciling with no lease and no call.
func TestReleaseRacingStarted(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	seedDue(t, st, "r1")
	claimed, err := st.Claim(ctx, "a", 10, time.Minute)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %d, %v", len(claimed), err)
	}
	c := claimed[0]
	hold, err := st.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hold.Rollback(ctx) }()
	if _, err := hold.Exec(ctx, "SELECT 1 FROM resources WHERE id = $1 FOR UPDATE", c.ID); err != nil {
		t.Fatal(err)
	}
	// waitBlocked polls until n sessions of this database wait for a lock.
	waitBlocked := func(n int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var got int
			if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d sessions wait for a lock, want %d", got, n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	startErr, releaseErr := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := st.Started(ctx, []Start{{ID: c.ID, Token: c.LeaseToken, Generation: c.Generation, Deleting: c.Deleting,
			Namespace: c.Namespace, Kind: c.Kind, Name: c.Name, Source: c.Source}})
		startErr <- err
	}()
	waitBlocked(1)
	go func() { releaseErr <- st.Release(ctx, "a", []int64{c.ID}, []string{c.LeaseToken}) }()
	waitBlocked(2)
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-startErr; err != nil {
		t.Fatal(err)
	}
	if err := <-releaseErr; err != nil {
		t.Fatal(err)
	}
	phase, rc, leased, started := startedRow(ctx, t, st, "id = $1", c.ID)
	if leased || started || rc.Reason != status.ReasonInterrupted {
		t.Errorf("after a start and a release racing: phase %s, Reconciling %s/%s, leased %v, started %v; want Interrupted, unleased",
			phase, rc.Status, rc.Reason, leased, started)
	}
}

// TestRetireReleasesStartedInterrupted: a replica retiring with rows still leased shows a
// started call interrupted (status.Released, with a history row) and gives a claim that never
// started back as it was.
func TestRetireReleasesStartedInterrupted(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	seedDue(t, st, "t1", "t2")
	claimed, err := st.Claim(ctx, "a", 10, time.Minute)
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claim: %d, %v", len(claimed), err)
	}
	for _, c := range claimed {
		if c.Name == "t1" {
			if _, err := st.Started(ctx, []Start{{ID: c.ID, Token: c.LeaseToken, Generation: c.Generation, Deleting: c.Deleting,
				Namespace: c.Namespace, Kind: c.Kind, Name: c.Name, Source: c.Source}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := st.Retire(ctx, "a", 1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, phase, reconciling string }{
		{"t1", status.PhaseReconciling, status.ReasonInterrupted},
		{"t2", "Pending", ""},
	} {
		phase, rc, leased, started := startedRow(ctx, t, st, "name = $1", tc.name)
		if rc.Reason == status.ReasonPending {
			rc.Reason = ""
		}
		if phase != tc.phase || rc.Reason != tc.reconciling || leased || started {
			t.Errorf("%s after retire: phase %s, Reconciling %s, leased %v, started %v; want %s %q, unleased", tc.name, phase, rc.Reason, leased, started,
				tc.phase, tc.reconciling)
		}
	}
	var hist []string
	rows, err := st.pool.Query(ctx, "SELECT name || '/' || result FROM reconcile_history WHERE name IN ('t1', 't2')")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			t.Fatal(err)
		}
		hist = append(hist, h)
	}
	rows.Close()
	if len(hist) != 1 || hist[0] != "t1/"+HistoryInterrupted {
		t.Errorf("history after retire: %v, want one t1/%s", hist, HistoryInterrupted)
	}
}

// startedRow reads the row matching where (one placeholder, arg): its phase, its Reconciling
// condition, and whether it is leased and its call's start stored.
func startedRow(ctx context.Context, t *testing.T, st *Store, where string, arg any) (phase string, rc status.Condition, leased, started bool) {
	t.Helper()
	var cj []byte
	if err := st.pool.QueryRow(ctx, `SELECT phase, conditions, lease_owner IS NOT NULL, started_at IS NOT NULL FROM resources JOIN resource_queue USING (id) WHERE `+where, arg).
		Scan(&phase, &cj, &leased, &started); err != nil {
		t.Fatal(err)
	}
	var conds []status.Condition
	if err := json.Unmarshal(cj, &conds); err != nil {
		t.Fatal(err)
	}
	rc, _ = status.Get(conds, status.Reconciling)
	return phase, rc, leased, started
}

// seedDue seeds Pending resources of source infra at generation 1, all due now.
func seedDue(t *testing.T, st *Store, names ...string) {
	t.Helper()
	rows := make([]seedRow, len(names))
	for i, n := range names {
		rows[i] = seedRow{name: n, source: "infra", revision: "r1", phase: "Pending", generation: 1}
	}
	seed(t, st, rows...)
	if _, err := st.pool.Exec(context.Background(), "UPDATE resource_queue SET run_at = now()"); err != nil {
		t.Fatal(err)
	}
}
