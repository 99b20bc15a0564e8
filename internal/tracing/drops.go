package tracing

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"golang.org/x/time/rate"
)

// defaultQueueSize is the batch span processor's queue when OTEL_BSP_MAX_QUEUE_SIZE is unset
// (the SDK's default).
const defaultQueueSize = 2048

// queueSize is the span queue's size: OTEL_BSP_MAX_QUEUE_SIZE as the SDK reads it (a positive
// integer, else the default). The variable is OpenTelemetry's own; it is read here because
// the gate must know the queue it guards.
func queueSize() int {
	if n, err := strconv.Atoi(os.Getenv("OTEL_BSP_MAX_QUEUE_SIZE")); err == nil && n > 0 {
		return n
	}
	return defaultQueueSize
}

// gate stands before the batch span processor and counts the spans it drops. The SDK's
// processor drops a span silently when its queue is full (its own count is only reachable
// through the experimental OTEL_GO_X_OBSERVABILITY metrics on a global meter provider). The
// gate admits a sampled span only while fewer than size spans are queued or being exported
// (counted down when the exporter returns), and the processor's queue has size places, so the
// processor never drops one itself: every drop is the gate's, counted and warned about.
type gate struct {
	sdktrace.SpanProcessor // the batch span processor
	size                   int64
	inFlight               atomic.Int64
	dropped                atomic.Uint64
	warn                   rate.Sometimes
	log                    *slog.Logger
}

// newGate returns the batch span processor exporting to exp, behind its gate.
func newGate(exp sdktrace.SpanExporter, size int, log *slog.Logger, opts ...sdktrace.BatchSpanProcessorOption) *gate {
	g := &gate{size: int64(size), log: log, warn: rate.Sometimes{First: 1, Interval: time.Minute}}
	g.SpanProcessor = sdktrace.NewBatchSpanProcessor(countingExporter{exp, g}, append(opts, sdktrace.WithMaxQueueSize(size))...)
	return g
}

func (g *gate) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return // the batch processor exports only sampled spans
	}
	if g.inFlight.Add(1) > g.size {
		g.inFlight.Add(-1)
		n := g.dropped.Add(1)
		g.warn.Do(func() {
			g.log.Warn("trace spans dropped: the export queue is full (see trueup_trace_spans_dropped_total; OTEL_BSP_MAX_QUEUE_SIZE, tracing.sampleRatio)",
				"dropped_total", n, "queue_size", g.size)
		})
		return
	}
	g.SpanProcessor.OnEnd(s)
}

// countingExporter frees the gate's places of the spans it exported (or failed to).
type countingExporter struct {
	sdktrace.SpanExporter
	g *gate
}

func (e countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	defer e.g.inFlight.Add(-int64(len(spans)))
	return e.SpanExporter.ExportSpans(ctx, spans)
}
