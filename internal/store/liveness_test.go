package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestLivenessDeadReplicaReleased: a replica's liveness session ends (its store closes: the
// process died); a peer finds it in pg_locks at once, releases its source lease and leased
// resource (recorded as Interrupted, naming it) — once, whoever tries again — while a live
// replica is never reported.
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

	seed(t, peer, seedRow{name: "q1", source: "infra", revision: "r1", phase: "Pending", generation: 1})
	if _, err := peer.pool.Exec(ctx, "UPDATE resources SET run_at = now()"); err != nil {
		t.Fatal(err)
	}
	claimed, err := dying.Claim(ctx, "a", 10, time.Minute)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v, %v", claimed, err)
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
	if err != nil || !done || n != 1 {
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
	if err := peer.pool.QueryRow(ctx, "SELECT lease_owner, phase, conditions::text FROM resources WHERE name = 'q1'").Scan(&owner, &phase, &conds); err != nil {
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
