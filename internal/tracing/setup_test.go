package tracing

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"

	"github.com/trueup-dev/trueup/internal/config"
)

// TestSetupEnv: without tracing.headers, OTEL_EXPORTER_OTLP_HEADERS reach the collector; a
// malformed one is reported through the logger given, without its raw text.
// Not parallel: it sets the environment and installs the global provider.
func TestSetupEnv(t *testing.T) {
	var mu sync.Mutex
	var got []http.Header
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer col.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-env=from-env,x-bad=%zzsekrit-one,sekrit-two")
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	run, err := Setup(context.Background(), &config.Tracing{Endpoint: col.URL}, Service{}, logger)
	if err != nil {
		t.Fatal(err)
	}
	_, span := otel.Tracer("test").Start(context.Background(), "reconcile")
	span.End()
	run.Shutdown() // flushes
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || got[0].Get("X-Env") != "from-env" {
		t.Errorf("OTEL_EXPORTER_OTLP_HEADERS did not reach the collector: %v", got)
	}
	out := logs.String()
	if !strings.Contains(out, "parse headers") || !strings.Contains(out, "escape header value") {
		t.Errorf("the malformed headers were not reported through the logger:\n%s", out)
	}
	if strings.Contains(out, "sekrit") {
		t.Errorf("a raw header value reached the log:\n%s", out)
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(otelLogHandler(slog.NewTextHandler(&buf, nil))).With("input", "a-sekrit")
	log.Error("parse url", "err", &badURL{}, "value", "b-sekrit", "file", "/etc/ca.pem", "note", `saw "c-sekrit"`,
		slog.Group("g", "key", "d-sekrit"))
	if out := buf.String(); strings.Contains(out, "sekrit") || !strings.Contains(out, "/etc/ca.pem") || !strings.Contains(out, "parse url") {
		t.Errorf("line %s", out)
	}
}

type badURL struct{}

func (*badURL) Error() string { return `parse "https://h/?token=e-sekrit": invalid` }
