package execaction_test

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestTraceparent: a call made under a sampled span hands the command TRACEPARENT naming
// that span; an untraced call, and one not sampled, hand it nothing.
func TestTraceparent(t *testing.T) {
	t.Parallel()
	sampled, _ := sdktrace.NewTracerProvider().Tracer("test").Start(context.Background(), "action.reconcile")
	dropped, _ := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample())).Tracer("test").Start(context.Background(), "action.reconcile")
	sc := trace.SpanContextFromContext(sampled)
	cases := []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"sampled", sampled, "TRACEPARENT=00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"},
		{"not sampled", dropped, ""},
		{"untraced", context.Background(), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, config{})
			if _, err := f.action.Reconcile(tc.ctx, request()); err != nil {
				t.Fatal(err)
			}
			var got string
			for _, kv := range strings.Split(f.read(t, "env.txt"), "\n") {
				if strings.HasPrefix(kv, "TRACEPARENT=") {
					got = kv
				}
			}
			if got != tc.want {
				t.Errorf("TRACEPARENT %q, want %q", got, tc.want)
			}
		})
	}
}
