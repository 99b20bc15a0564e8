package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/tracing"
)

// startTracing exports every span of the run to a collector on loopback that reads and
// drops each export (-tracing: the figures with tracing on, every attempt sampled). It
// returns the flush and how many bytes of spans were received.
func startTracing(ctx context.Context, log *slog.Logger) (stop func(), received *atomic.Int64, err error) {
	received = &atomic.Int64{}
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		received.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	ratio := 1.0
	cfg := &config.Tracing{Endpoint: col.URL, Protocol: config.DefaultTracingProtocol, ServiceName: "trueup-bench", SampleRatio: &ratio}
	traces, err := tracing.Setup(ctx, cfg, tracing.Service{Version: "bench", Instance: "bench"}, log)
	if err != nil {
		col.Close()
		return nil, nil, err
	}
	return func() { traces.Shutdown(); col.Close() }, received, nil
}
