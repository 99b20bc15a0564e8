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
	// A second process may not take a live replica's name.
	if _, _, err := peer.HoldLiveness(ctx, Replica{Name: "a"}); !errors.Is(err, ErrReplicaNameInUse) {
		t.Fatalf("second holder of name a: %v, want ErrReplicaNameInUse", err)
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
	// The name is free again: a restarted a takes it.
	liveA2, _, err := dying.HoldLiveness(ctx, Replica{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	liveA2.Close()
}
