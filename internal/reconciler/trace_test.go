package reconciler

import (
	"context"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/store"
)

// BenchmarkTraceOff is what an attempt's tracing costs without a tracing: block (the global
// no-op provider): its reconcile, claim, action and write spans.
func BenchmarkTraceOff(b *testing.B) {
	r := &Reconciler{}
	c := store.Claimed{ID: 1, Kind: "App", Namespace: "default", Name: "web", Generation: 1}
	now := time.Now()
	claim := claimWindow{start: now, end: now, size: 64}
	b.ReportAllocs()
	for b.Loop() {
		ctx, span := startTrace(context.Background(), c, claim, "created")
		_, as := r.actionSpan(ctx, "reconcile", "noop", actions.Request{})
		endAction(as, nil, nil, actions.Result{Done: true})
		traceWrite(pending{c: c, span: span}, now, now, 64, false)
		span.End()
	}
}
