package terraform

import (
	"context"
	"errors"
	"testing"

	"github.com/trueup-dev/trueup/actions"
)

func TestPlanLockGivesWay(t *testing.T) {
	t.Parallel()
	var l keyLocks
	ctx := t.Context()

	// A held lock refuses a plan at once, saying whether a plan holds it.
	unlock, err := l.lock(ctx, "ws")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.tryLockPlan("ws", func(error) {}); !errors.Is(err, actions.ErrPlanBusy) {
		t.Fatalf("a plan of a lock a reconcile holds: %v, want ErrPlanBusy", err)
	}
	unlock()

	// A plan holding the lock refuses another plan, and is cancelled when a call asks for
	// it; the call gets it when the plan lets go.
	planCtx, preempt := context.WithCancelCause(ctx)
	planUnlock, err := l.tryLockPlan("ws", preempt)
	if err != nil {
		t.Fatalf("a plan could not take a free lock: %v", err)
	}
	if _, err := l.tryLockPlan("ws", func(error) {}); !errors.Is(err, actions.ErrPlanInProgress) {
		t.Fatalf("a second plan: %v, want ErrPlanInProgress", err)
	}
	got := make(chan error, 1)
	go func() {
		u, err := l.lock(ctx, "ws")
		if err == nil {
			u()
		}
		got <- err
	}()
	<-planCtx.Done()
	if !errors.Is(context.Cause(planCtx), actions.ErrPlanBusy) {
		t.Fatalf("plan's cause %v", context.Cause(planCtx))
	}
	if _, err := l.tryLockPlan("ws", func(error) {}); !errors.Is(err, actions.ErrPlanBusy) {
		t.Fatalf("a second plan while a call waits: %v, want ErrPlanBusy", err)
	}
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
