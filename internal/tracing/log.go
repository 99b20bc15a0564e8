package tracing

import (
	"context"
	"log/slog"
	"regexp"

	"go.opentelemetry.io/otel/trace"
)

// LogHandler wraps h so that a record logged with a context holding a sampled span (the
// *Context methods of slog.Logger) carries trace_id and span_id: a log line about a slow
// reconcile leads to its trace. Spans not sampled are not named; they are never exported.
func LogHandler(h slog.Handler) slog.Handler { return logHandler{h} }

type logHandler struct{ slog.Handler }

func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		r = r.Clone()
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return logHandler{h.Handler.WithAttrs(as)}
}

func (h logHandler) WithGroup(name string) slog.Handler { return logHandler{h.Handler.WithGroup(name)} }

// quoted is a quoted part of an error's text: the input it failed on.
var quoted = regexp.MustCompile(`"[^"]*"`)

// otelLogHandler is the handler of OpenTelemetry's own logger (otel.SetLogger), over the
// scrubbing log sink. The sink scrubs the config's secrets only; OpenTelemetry reports a
// malformed OTEL_EXPORTER_OTLP_* variable with its raw text (a header value: an API key), so
// the attributes that hold it (input, value, key) are dropped, and the quoted parts of an
// error (url.Parse, time.ParseDuration and url.PathUnescape quote what they failed on) too.
func otelLogHandler(h slog.Handler) slog.Handler { return otelHandler{h} }

type otelHandler struct{ slog.Handler }

func (h otelHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redact(a))
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h otelHandler) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = redact(a)
	}
	return otelHandler{h.Handler.WithAttrs(clean)}
}

func (h otelHandler) WithGroup(name string) slog.Handler {
	return otelHandler{h.Handler.WithGroup(name)}
}

func redact(a slog.Attr) slog.Attr {
	switch a.Key {
	case "input", "value", "key":
		return slog.String(a.Key, "[redacted]")
	}
	switch v := a.Value.Resolve(); v.Kind() {
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, a := range g {
			clean[i] = redact(a)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, quoted.ReplaceAllString(err.Error(), `"[redacted]"`))
		}
	case slog.KindString:
		return slog.String(a.Key, quoted.ReplaceAllString(v.String(), `"[redacted]"`))
	}
	return a
}
