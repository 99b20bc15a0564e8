// Package tracing owns trueup's OpenTelemetry traces (issue 14, point 5): the OTLP exporter
// and tracer provider that the `tracing:` block configures, the small helpers the syncer and
// the reconciler record their spans with, and the log handler that puts the active span's
// ids on log lines.
//
// Packages take their tracer from the global provider (otel.Tracer): without a `tracing:`
// block it stays OpenTelemetry's no-op provider, whose spans record nothing and cost an
// allocation or two. Setup installs the SDK's provider for the life of `trueup serve`.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/trueup-dev/trueup/internal/config"
)

// on is set while Setup's provider is installed: hot paths skip even the no-op provider's
// spans without it (On).
var on atomic.Bool

// On reports whether Setup installed a provider: without one, a caller on a hot path (a
// span per reconcile attempt) need not start its no-op spans at all.
func On() bool { return on.Load() }

// Service identifies the process in the resource attributes of its spans.
type Service struct {
	Version  string // service.version
	Instance string // service.instance.id: the replica's name
}

// ShutdownTimeout bounds the flush of the spans still queued when serve exits.
const ShutdownTimeout = 5 * time.Second

// Running is the provider Setup installed (none for a nil cfg).
type Running struct {
	gate     *gate
	shutdown func()
}

// Shutdown flushes and stops the provider (bounded by ShutdownTimeout) and puts back the one
// that was there before.
func (r *Running) Shutdown() {
	if r.shutdown != nil {
		r.shutdown()
	}
}

// SpansDropped counts the sampled spans dropped because the export queue was full
// (trueup_trace_spans_dropped_total).
func (r *Running) SpansDropped() uint64 {
	if r.gate == nil {
		return 0
	}
	return r.gate.dropped.Load()
}

// Setup installs the global tracer provider that exports spans as cfg says. With a nil cfg
// nothing is installed: spans stay no-ops. Spans dropped because the export queue
// (OTEL_BSP_MAX_QUEUE_SIZE) is full are counted and warned about. Export failures are
// logged to logger (the scrubbed log sink), and so are OpenTelemetry's own log lines, with
// the raw text of a malformed variable left out (otelLogHandler): no header reaches a log
// unscrubbed. The exporter also reads the standard OTEL_EXPORTER_OTLP_* variables (headers
// only when cfg sets none; the endpoint is always cfg's). Call it once per process: the
// packages' tracers stay bound to the first provider installed (otel's global delegate).
func Setup(ctx context.Context, cfg *config.Tracing, svc Service, logger *slog.Logger) (*Running, error) {
	if cfg == nil {
		return &Running{}, nil
	}
	// Before the exporter reads its OTEL_EXPORTER_OTLP_* variables: it reports a malformed one
	// through this logger, which otherwise writes to stderr unscrubbed.
	otel.SetLogger(logr.FromSlogHandler(otelLogHandler(logger.Handler())))
	client, err := exportClient(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	expOpts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(cfg.TracesURL()), otlptracehttp.WithHTTPClient(client)}
	if len(cfg.Headers) > 0 {
		// Only then: WithHeaders replaces OTEL_EXPORTER_OTLP_HEADERS, even given no header.
		// The request timeout is exportClient's (OTEL_EXPORTER_OTLP_TIMEOUT, else 10 s).
		expOpts = append(expOpts, otlptracehttp.WithHeaders(cfg.Headers))
	}
	exp, err := otlptracehttp.New(ctx, expOpts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	// Attributes written last win over OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME.
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(cfg.ServiceName), semconv.ServiceVersion(svc.Version), semconv.ServiceInstanceID(svc.Instance)))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	g := newGate(exp, queueSize(), logger)
	opts := []sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(g), sdktrace.WithResource(res)}
	if r := cfg.SampleRatio; r != nil {
		// A parent's decision wins (a call that arrives with a traceparent); the root is sampled
		// by its trace id, so every replica decides the same for one trace.
		opts = append(opts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(*r))))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { logger.Warn("export traces", "err", err) }))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	on.Store(true)
	return &Running{gate: g, shutdown: func() {
		on.Store(false)
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			logger.Warn("flush traces at shutdown", "err", err)
		}
		otel.SetTracerProvider(prevTP)
		otel.SetTextMapPropagator(prevProp)
	}}, nil
}

// TraceID returns the id of span's trace when it is sampled (exported), "" otherwise: a
// history row or a log line names only a trace that can be found.
func TraceID(span trace.Span) string {
	if sc := span.SpanContext(); sc.IsSampled() {
		return sc.TraceID().String()
	}
	return ""
}

// Fail marks span failed with msg, which the caller has scrubbed of secrets.
func Fail(span trace.Span, msg string) {
	if !span.IsRecording() {
		return
	}
	span.RecordError(errors.New(msg))
	span.SetStatus(codes.Error, msg)
}

// Stretch records a finished child span of ctx's span named name over [start, end]: a step
// shared by a batch (a claim, a write) that each item's trace shows as its own. A non-empty
// failure (scrubbed by the caller) marks it failed.
func Stretch(ctx context.Context, tracer trace.Tracer, name string, start, end time.Time, failure string, opts ...trace.SpanStartOption) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return
	}
	_, span := tracer.Start(ctx, name, append(opts, trace.WithTimestamp(start))...)
	if failure != "" {
		Fail(span, failure)
	}
	span.End(trace.WithTimestamp(end))
}
