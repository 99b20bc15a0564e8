package tracing

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

func TestTransport(t *testing.T) {
	t.Parallel()
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got <- r.Header.Get("Traceparent") }))
	defer srv.Close()
	client := &http.Client{Transport: Transport(http.DefaultTransport)}
	sampled, _ := sdktrace.NewTracerProvider().Tracer("test").Start(context.Background(), "action.reconcile")
	dropped, _ := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample())).Tracer("test").Start(context.Background(), "action.reconcile")
	sc := trace.SpanContextFromContext(sampled)
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"sampled", sampled, "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"},
		{"not sampled", dropped, ""},
		{"untraced", context.Background(), ""},
	} {
		req, _ := http.NewRequestWithContext(tc.ctx, http.MethodPost, srv.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if h := <-got; h != tc.want {
			t.Errorf("%s: traceparent %q, want %q", tc.name, h, tc.want)
		}
		if req.Header.Get("Traceparent") != "" {
			t.Errorf("%s: the caller's request was changed", tc.name)
		}
	}
}
