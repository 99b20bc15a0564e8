package terraform

import (
	"testing"

	"github.com/trueup-dev/trueup/actions"
)

func TestPlanLockNeverWaits(t *testing.T) {
	t.Parallel()
	var l keyLocks
	ctx := t.Context()

	// A held lock refuses a plan at once.
	unlock, err := l.lock(ctx, "ws")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.tryLock("ws"); ok {
		t.Fatal("a plan took a lock a reconcile holds")
	}
	unlock()

	// A call waits for a plan's lock; it gets it when the plan lets go.
	planUnlock, ok := l.tryLock("ws")
	if !ok {
		t.Fatal("a plan could not take a free lock")
	}
	got := make(chan error, 1)
	go func() {
		u, err := l.lock(ctx, "ws")
		if err == nil {
			u()
		}
		got <- err
	}()
	planUnlock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if len(l.m) != 0 {
		t.Fatalf("lock entries left: %v", l.m)
	}
}

// A terraform instance asks the host for arbitration, and has a gate of its own when the
// host shares none.
func TestTerraformPlansAreArbitrated(t *testing.T) {
	t.Parallel()
	if actions.GateFor(nil, &Action{}) == nil {
		t.Fatal("terraform plans are not arbitrated")
	}
}
