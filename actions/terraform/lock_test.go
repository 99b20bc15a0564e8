package terraform

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestPlanLockGivesWay(t *testing.T) {
	t.Parallel()
	var l keyLocks
	ctx := t.Context()

	// A held lock, or one a call waits for, refuses a plan at once.
	unlock, err := l.lock(ctx, "ws")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.tryLockPlan("ws", func(error) {}); ok {
		t.Fatal("a plan took a lock a reconcile holds")
	}
	unlock()

	// A plan holding the lock is cancelled when a call asks for it; the call gets it when
	// the plan lets go.
	planCtx, preempt := context.WithCancelCause(ctx)
	planUnlock, ok := l.tryLockPlan("ws", preempt)
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
	select {
	case <-planCtx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the plan was not cancelled")
	}
	if !errors.Is(context.Cause(planCtx), errPlanBusy) {
		t.Fatalf("plan's cause %v", context.Cause(planCtx))
	}
	if _, ok := l.tryLockPlan("ws", func(error) {}); ok {
		t.Fatal("a second plan took the lock while a call waits for it")
	}
	planUnlock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if len(l.m) != 0 {
		t.Fatalf("lock entries left: %v", l.m)
	}
}
