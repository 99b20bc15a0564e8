package reconciler

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/tracing"
)

// tracer records a trace per reconcile attempt: reconcile <Kind>/<ns>/<name> from the claim
// to the write, with children claim, action.<operation> and write. The claim and the write
// serve a batch; each attempt's trace gets its own claim and write spans stretched over the
// batch's real start and end (with the batch's size as an attribute) rather than a link to
// a batch span in a trace of its own: one trace then tells the whole attempt, and the
// dashboard's link from a history row leads to everything it took.
//
// With tracing off (tracing.On false) no span is started at all, not even the no-op
// provider's: an attempt costs an atomic load (BenchmarkTraceOff). Spans are named and given
// attributes only when they record.
var tracer = otel.Tracer("github.com/trueup-dev/trueup/internal/reconciler")

// startTrace opens c's reconcile span, started when its claim started (started when there
// was no claim window), and records the claim.
func startTrace(ctx context.Context, c store.Claimed, claim claimWindow, started time.Time, trigger string) (context.Context, trace.Span) {
	if !tracing.On() {
		return ctx, trace.SpanFromContext(ctx) // the no-op span, without an allocation
	}
	start := claim.start
	if start.IsZero() {
		start = started
	}
	ctx, span := tracer.Start(ctx, "reconcile", trace.WithTimestamp(start))
	if !span.IsRecording() {
		return ctx, span
	}
	span.SetName("reconcile " + c.Kind + "/" + c.Namespace + "/" + c.Name)
	span.SetAttributes(attribute.String("trueup.kind", c.Kind), attribute.String("trueup.namespace", c.Namespace),
		attribute.String("trueup.name", c.Name), attribute.String("trueup.source", c.Source), attribute.String("trueup.revision", c.Revision),
		attribute.Int64("trueup.generation", c.Generation), attribute.String("trueup.trigger", trigger), attribute.Int64("trueup.resource_id", c.ID))
	if !claim.start.IsZero() {
		tracing.Stretch(ctx, tracer, "claim", claim.start, claim.end, "", trace.WithAttributes(attribute.Int("trueup.batch_size", claim.size)))
	}
	return ctx, span
}

// actionSpan opens the span of one plugin call (operation reconcile, delete or observe); the
// plugin gets its context, so that its own calls can carry the trace (traceparent).
func (r *Reconciler) actionSpan(ctx context.Context, op, action string, req actions.Request) (context.Context, trace.Span) {
	if parent := trace.SpanFromContext(ctx); !parent.IsRecording() {
		return ctx, parent // tracing off, or the attempt not sampled: nothing to record
	}
	ctx, span := tracer.Start(ctx, "action")
	if !span.IsRecording() {
		return ctx, span
	}
	span.SetName("action." + op)
	span.SetAttributes(attribute.String("trueup.action.name", action), attribute.String("trueup.action.type", r.actionType(action)),
		attribute.String("trueup.operation", op), attribute.Int64("trueup.generation", req.Resource.Generation))
	return ctx, span
}

// endAction ends an action span with the call's outcome, its error scrubbed.
func endAction(span trace.Span, err error, scrub func(string) string, res actions.Result) {
	if span.IsRecording() {
		if err != nil {
			tracing.Fail(span, scrub(err.Error()))
		} else {
			span.SetAttributes(attribute.Bool("trueup.done", res.Done))
		}
	}
	span.End()
}

// writeOutcome is what the batch writer did with one item's result.
type writeOutcome int

const (
	written      writeOutcome = iota // stored as the attempt's result
	writeRefused                     // the database refused it; a Failed row says so (unstorable)
	writeFailed                      // nothing was stored; the lease expires and the work is repeated
	writeLost                        // the lease was gone; the result was discarded
)

// resultInterrupted is the trace result of an attempt whose result was not stored by this
// replica (shutdown, lease gone): as history names an attempt another replica takes over.
const resultInterrupted = store.HistoryInterrupted

// traceOutcome is what an attempt's trace says, given what the writer did with its result:
// trueup.result (what history holds; "Error" when nothing was written), the root span's
// failure and the write span's failure ("" for none). The trace must not contradict the
// history row that links to it.
func traceOutcome(a attempt, w writeOutcome) (result, rootFailure, writeFailure string) {
	switch w {
	case writeRefused:
		const msg = "the action's result could not be stored"
		return resultFailed, "attempt " + resultFailed + ": " + msg, msg
	case writeFailed:
		const msg = "the result was not written; the work is repeated"
		return "Error", msg, msg
	case writeLost:
		const msg = "lease lost; result discarded"
		return resultInterrupted, msg, msg
	}
	result = historyResult(a)
	if a.err != nil {
		rootFailure = "attempt " + result
	}
	return result, rootFailure, ""
}

// traceWrite records the batch write of p's result over [start, end] and ends p's trace.
func traceWrite(p pending, start, end time.Time, size int, w writeOutcome) {
	if !p.span.IsRecording() {
		return
	}
	ctx := trace.ContextWithSpan(context.Background(), p.span)
	result, rootFailure, writeFailure := traceOutcome(p.a, w)
	tracing.Stretch(ctx, tracer, "write", start, end, writeFailure, trace.WithAttributes(attribute.Int("trueup.batch_size", size)))
	p.span.SetAttributes(attribute.String("trueup.result", result))
	if rootFailure != "" {
		tracing.Fail(p.span, rootFailure)
	}
	p.span.End(trace.WithTimestamp(end))
}

// traceReleased marks an attempt's trace whose item was given up without a write (shutdown,
// lease gone): Interrupted, as history will name it, and failed with why.
func traceReleased(span trace.Span, why string) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String("trueup.result", resultInterrupted))
	span.SetStatus(codes.Error, why)
}

// actionType is the plugin type of the action instance name ("" when unknown).
func (r *Reconciler) actionType(name string) string {
	if r.opts.ActionType == nil {
		return ""
	}
	return r.opts.ActionType(name)
}
