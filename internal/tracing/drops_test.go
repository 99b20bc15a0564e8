package tracing

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestGateCountsDrops: with the queue full, further spans are dropped, counted and warned
// about once; an export frees the places of the spans it sent.
func TestGateCountsDrops(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	var logs bytes.Buffer
	// No export before ForceFlush: the queue only fills.
	g := newGate(exp, 2, slog.New(slog.NewTextHandler(&logs, nil)), sdktrace.WithBatchTimeout(time.Hour))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(g))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	unsampled := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()), sdktrace.WithSpanProcessor(g))
	end := func(n int) {
		for range n {
			_, s := tp.Tracer("test").Start(context.Background(), "reconcile")
			s.End()
		}
	}
	end(5)
	_, s := unsampled.Tracer("test").Start(context.Background(), "reconcile")
	s.End() // not sampled: neither queued nor dropped
	if d := g.dropped.Load(); d != 3 {
		t.Fatalf("dropped %d, want 3", d)
	}
	if n := strings.Count(logs.String(), "trace spans dropped"); n != 1 {
		t.Errorf("%d warnings, want 1 (rate-limited): %s", n, logs.String())
	}
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(exp.GetSpans()); n != 2 {
		t.Fatalf("%d spans exported, want 2", n)
	}
	end(2) // the export freed both places
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d, n := g.dropped.Load(), len(exp.GetSpans()); d != 3 || n != 4 {
		t.Errorf("dropped %d, exported %d; want 3 and 4", d, n)
	}
	if r := (&Running{gate: g}); r.SpansDropped() != 3 || (&Running{}).SpansDropped() != 0 {
		t.Errorf("SpansDropped %d", r.SpansDropped())
	}
}

func TestQueueSize(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want int
	}{{"", 2048}, {"10000", 10000}, {"0", 2048}, {"-3", 2048}, {"many", 2048}} {
		t.Setenv("OTEL_BSP_MAX_QUEUE_SIZE", tc.env)
		if got := queueSize(); got != tc.want {
			t.Errorf("OTEL_BSP_MAX_QUEUE_SIZE=%q: %d, want %d", tc.env, got, tc.want)
		}
	}
}
