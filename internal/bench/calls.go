package main

import (
	"context"
	"fmt"
	"time"

	"github.com/trueup-dev/trueup/actions"
)

// delayedAction is an action whose every call takes d: it measures what a claim and the start
// of a call cost when calls are neither free (noop) nor long enough to hide the database.
type delayedAction struct{ d time.Duration }

func (a delayedAction) Reconcile(ctx context.Context, _ actions.Request) (actions.Result, error) {
	t := time.NewTimer(a.d)
	defer t.Stop()
	select {
	case <-t.C:
		return actions.Result{Done: true}, nil
	case <-ctx.Done():
		return actions.Result{}, ctx.Err()
	}
}

func (a delayedAction) Delete(ctx context.Context, req actions.Request) (actions.Result, error) {
	return a.Reconcile(ctx, req)
}

var _ actions.Action = delayedAction{}

// callsThroughput reconciles n resources on one replica of 32 workers whose action calls
// take d each (reconcile_throughput_calls_<d>).
func (b *bench) callsThroughput(ctx context.Context, n int, d time.Duration) error {
	st, url, err := b.freshStore(ctx, 4)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := b.seed(ctx, st, n); err != nil {
		return err
	}
	rate, err := b.drainRate(ctx, url, st, n, 1, delayedAction{d: d})
	if err != nil {
		return err
	}
	record(fmt.Sprintf("reconcile_throughput_calls_%s", d), rate, "1/s", "", nil)
	return nil
}
