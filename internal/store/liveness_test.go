package store

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/status"
)

// TestLivenessDeadReplicaReleased: a replica's liveness session ends (its store closes: the
// process died); a peer finds it in pg_locks at once, releases its source lease and leased
// resource (recorded as Interrupted, naming it) — once, whoever tries again — while a live
// replica is never reported. A claim whose call had not started (q2, waiting in the dead
// replica's memory) goes back to the queue as it was, without an Interrupted attempt.
func TestLivenessDeadReplicaReleased(t *testing.T) {
	t.Parallel()
	peer := openTest(t)
	ctx := context.Background()
	dying, err := Open(ctx, peer.url, Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer dying.Close()
	liveA, released, err := dying.HoldLiveness(ctx, Replica{Name: "a"})
	if err != nil || released != 0 {
		t.Fatalf("hold a: released %d, %v", released, err)
	}
	liveB, _, err := peer.HoldLiveness(ctx, Replica{Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	defer liveB.Close()
	if dead, err := peer.DeadReplicas(ctx); err != nil || len(dead) != 0 {
		t.Fatalf("dead replicas while both live: %v, %v", dead, err)
	}

	// a claims q1 and q2; q1's call starts, q2 waits in a's memory for a worker.
	seed(t, peer, seedRow{name: "q1", source: "infra", revision: "r1", phase: "Pending", generation: 1},
		seedRow{name: "q2", source: "infra", revision: "r1", phase: "Pending", generation: 1})
	if _, err := peer.pool.Exec(ctx, "UPDATE resource_queue SET run_at = now()"); err != nil {
		t.Fatal(err)
	}
	claimed, err := dying.Claim(ctx, "a", 10, time.Minute)
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	if claimed[0].Name != "q1" {
		claimed[0], claimed[1] = claimed[1], claimed[0]
	}
	if _, err := dying.Started(ctx, []Start{{ID: claimed[0].ID, Token: claimed[0].LeaseToken, Generation: 1, Namespace: "default", Kind: "Queue", Name: "q1", Source: "infra"}}); err != nil {
		t.Fatal(err)
	}
	var q2Conds string
	if err := peer.pool.QueryRow(ctx, "SELECT conditions::text FROM resources WHERE name = 'q2'").Scan(&q2Conds); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := dying.AcquireLease(ctx, "source:infra", "a", time.Minute); !ok || err != nil {
		t.Fatalf("lease: %v %v", ok, err)
	}

	liveA.Close() // the session ends: PostgreSQL frees the lock
	var dead []DeadReplica
	deadline := time.Now().Add(10 * time.Second)
	for len(dead) == 0 && time.Now().Before(deadline) {
		if dead, err = peer.DeadReplicas(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(dead) != 1 || dead[0].Name != "a" || dead[0].Key != liveA.Key {
		t.Fatalf("dead replicas %+v, want a with key %d", dead, liveA.Key)
	}
	n, done, err := peer.ReleaseDeadReplica(ctx, dead[0], "b")
	if err != nil || !done || n != 2 {
		t.Fatalf("release: %d %v %v", n, done, err)
	}
	if n, done, err := peer.ReleaseDeadReplica(ctx, dead[0], "b"); err != nil || done || n != 0 {
		t.Fatalf("second release: %d %v %v, want nothing done", n, done, err)
	}
	// a's lease is free for b at once (a new term); a's resource is due and unleased.
	l, ok, err := peer.AcquireLease(ctx, "source:infra", "b", time.Minute)
	if err != nil || !ok || l.Term != 2 {
		t.Fatalf("b takes source:infra: %+v %v %v", l, ok, err)
	}
	var owner *string
	var phase, conds string
	if err := peer.pool.QueryRow(ctx, "SELECT lease_owner, phase, conditions::text FROM resources JOIN resource_queue USING (id) WHERE name = 'q1'").Scan(&owner, &phase, &conds); err != nil {
		t.Fatal(err)
	}
	if owner != nil || phase != "Reconciling" {
		t.Errorf("q1 after release: owner %v phase %s", owner, phase)
	}
	var res, rep, trig string
	if err := peer.pool.QueryRow(ctx, "SELECT result, replica, trigger FROM reconcile_history WHERE name = 'q1'").Scan(&res, &rep, &trig); err != nil {
		t.Fatal(err)
	}
	if res != HistoryInterrupted || rep != "a" || trig != "takeover" {
		t.Errorf("history %s by %s (%s), want Interrupted by a (takeover)", res, rep, trig)
	}
	// q2's call never started: it is due again, shown as before its claim, with no attempt
	// in its history.
	var q2Phase, q2After string
	var q2Owner *string
	if err := peer.pool.QueryRow(ctx, "SELECT lease_owner, phase, conditions::text FROM resources JOIN resource_queue USING (id) WHERE name = 'q2'").Scan(&q2Owner, &q2Phase, &q2After); err != nil {
		t.Fatal(err)
	}
	var before, after []status.Condition
	if err := json.Unmarshal([]byte(q2Conds), &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(q2After), &after); err != nil {
		t.Fatal(err)
	}
	if q2Owner != nil || q2Phase != "Pending" || !reflect.DeepEqual(before, after) {
		t.Errorf("q2 after release: owner %v phase %s conditions %s, want unleased, Pending, %s", q2Owner, q2Phase, q2After, q2Conds)
	}
	var q2Hist int
	if err := peer.pool.QueryRow(ctx, "SELECT count(*) FROM reconcile_history WHERE name = 'q2'").Scan(&q2Hist); err != nil || q2Hist != 0 {
		t.Errorf("q2 history rows %d (%v), want none", q2Hist, err)
	}
	// a's write after the release is fenced out.
	if err := dying.Complete(ctx, claimed[0].ID, claimed[0].LeaseToken, func(Current) Update { return Update{Phase: "Ready"} }); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("a's late result: %v, want ErrLeaseLost", err)
	}
	// a reconnects; its session idles (pings keep it checked) until a newer session of the
	// same name ends it: names are unique per process, so a lingering one is a cut-off
	// session of the same process.
	liveA2, _, err := dying.HoldLiveness(ctx, Replica{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer liveA2.Close()
	waited := make(chan error, 1)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { waited <- liveA2.Wait(wctx) }()
	select {
	case err := <-waited:
		t.Fatalf("an idle live session ended: %v", err)
	case <-time.After(2500 * time.Millisecond): // two pings
	}
	liveA3, _, err := peer.HoldLiveness(ctx, Replica{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer liveA3.Close()
	select {
	case err := <-waited:
		if err == nil {
			t.Fatal("the superseded session's Wait returned no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the superseded session was not ended")
	}
	if dead, err := peer.DeadReplicas(ctx); err != nil || len(dead) != 0 {
		t.Errorf("dead replicas after the takeover: %v, %v", dead, err)
	}
}
