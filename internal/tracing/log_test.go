package tracing

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestLogHandler(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	sampled := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	dropped := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample())).Tracer("test")
	ctx, span := sampled.Start(context.Background(), "reconcile")
	defer span.End()
	unsampledCtx, unsampled := dropped.Start(context.Background(), "reconcile")
	defer unsampled.End()

	cases := []struct {
		name string
		ctx  context.Context
		want bool
	}{
		{"sampled span", ctx, true},
		{"span not sampled", unsampledCtx, false},
		{"no span", context.Background(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			log := slog.New(LogHandler(slog.NewJSONHandler(&buf, nil))).With("replica", "r1").WithGroup("g")
			log.InfoContext(tc.ctx, "applied revision", "revision", "abc")
			var line map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatal(err)
			}
			g, _ := line["g"].(map[string]any)
			id, ok := g["trace_id"]
			if ok != tc.want {
				t.Fatalf("line %s: trace_id present %v, want %v", buf.String(), ok, tc.want)
			}
			if tc.want && (id != span.SpanContext().TraceID().String() || g["span_id"] != span.SpanContext().SpanID().String()) {
				t.Errorf("line %s: ids are not the span's", buf.String())
			}
			if line["replica"] != "r1" || g["revision"] != "abc" {
				t.Errorf("line %s lost its attributes", buf.String())
			}
		})
	}
}
