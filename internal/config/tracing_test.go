package config

import (
	"strings"
	"testing"
)

func TestParseTracing(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(`
tracing:
  endpoint: http://127.0.0.1:4318
  headers: {Authorization: "Bearer ${OTLP_TOKEN}", X-Tenant: acme-literal}
  sampleRatio: 0.25
  traceURL: "https://jaeger.example.com/trace/{traceId}"
`), "/x", env(map[string]string{"OTLP_TOKEN": "tok-secret-1"}))
	if err != nil {
		t.Fatal(err)
	}
	tr := c.Tracing
	if tr.Protocol != "http/protobuf" || tr.ServiceName != "trueup" || *tr.SampleRatio != 0.25 {
		t.Errorf("tracing %+v", tr)
	}
	if got := tr.TracesURL(); got != "http://127.0.0.1:4318/v1/traces" {
		t.Errorf("traces URL %q", got)
	}
	// Header values are secrets, whether they came from ${VAR} or were written literally.
	secrets := strings.Join(c.Secrets(), ",")
	if !strings.Contains(secrets, "tok-secret-1") || !strings.Contains(secrets, "acme-literal") {
		t.Errorf("secrets %q lack the header values", secrets)
	}
	if c, err := Parse([]byte("sources: []\n"), "/x", env(nil)); err != nil || c.Tracing != nil {
		t.Errorf("no tracing block: %v %+v", err, c.Tracing)
	}
}

func TestTracesURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ endpoint, want string }{
		{"http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"},
		{"https://otel.example.com/", "https://otel.example.com/v1/traces"},
		{"https://otel.example.com/otlp/v1/traces", "https://otel.example.com/otlp/v1/traces"},
		{"https://otel.example.com/otlp/v1/traces/", "https://otel.example.com/otlp/v1/traces"},
		{"http://127.0.0.1:4318/v1/traces", "http://127.0.0.1:4318/v1/traces"},
		// A base path, as OTEL_EXPORTER_OTLP_ENDPOINT takes it (Grafana Cloud's /otlp).
		{"https://otlp-gateway.grafana.net/otlp", "https://otlp-gateway.grafana.net/otlp/v1/traces"},
		{"https://otlp-gateway.grafana.net/otlp/", "https://otlp-gateway.grafana.net/otlp/v1/traces"},
	} {
		if got := (&Tracing{Endpoint: tc.endpoint}).TracesURL(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.endpoint, got, tc.want)
		}
	}
}

func TestParseTracingErrors(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, yaml, want string }{
		{"unknown key", "tracing:\n  endpoint: http://127.0.0.1:4318\n  sampler: always\n", "line 3: field sampler not found"},
		{"no endpoint", "tracing: {sampleRatio: 1}\n", "tracing.endpoint: required"},
		{"bad scheme", "tracing: {endpoint: \"grpc://collector:4317\"}\n", "tracing.endpoint: must be an http(s) URL"},
		{"credentials in URL", "tracing: {endpoint: \"https://u:pw@collector\"}\n", "tracing.endpoint: must not hold credentials"},
		{"query", "tracing: {endpoint: \"https://otlp.example.com/v1/traces?api_key=abc\"}\n", "tracing.endpoint: must not hold a query or a fragment"},
		{"empty query", "tracing: {endpoint: \"https://otlp.example.com/?\"}\n", "tracing.endpoint: must not hold a query or a fragment"},
		{"fragment", "tracing: {endpoint: \"https://otlp.example.com/v1/traces#k\"}\n", "tracing.endpoint: must not hold a query or a fragment"},
		{"grpc", "tracing: {endpoint: \"http://127.0.0.1:4317\", protocol: grpc}\n", `tracing.protocol: "grpc" is not supported`},
		{"ratio", "tracing: {endpoint: \"http://127.0.0.1:4318\", sampleRatio: 1.5}\n", "tracing.sampleRatio: 1.5 is outside 0..1"},
		{"negative ratio", "tracing: {endpoint: \"http://127.0.0.1:4318\", sampleRatio: -0.1}\n", "tracing.sampleRatio: -0.1 is outside 0..1"},
		{"NaN ratio", "tracing: {endpoint: \"http://127.0.0.1:4318\", sampleRatio: .nan}\n", "tracing.sampleRatio: NaN is outside 0..1"},
		{"infinite ratio", "tracing: {endpoint: \"http://127.0.0.1:4318\", sampleRatio: .inf}\n", "tracing.sampleRatio: +Inf is outside 0..1"},
		{"bad ratio type", "tracing: {endpoint: \"http://127.0.0.1:4318\", sampleRatio: all}\n", "line 1"},
		{"headers in clear", "tracing: {endpoint: \"http://collector.example.com:4318\", headers: {X-Key: k}}\n", "tracing.endpoint"},
		{"bad header name", "tracing: {endpoint: \"http://127.0.0.1:4318\", headers: {\"X Key\": k}}\n", `tracing.headers: "X Key" is not a valid header name`},
		{"traceURL without id", "tracing: {endpoint: \"http://127.0.0.1:4318\", traceURL: \"https://j.example.com/\"}\n", "does not hold {traceId}"},
		{"traceURL not http", "tracing: {endpoint: \"http://127.0.0.1:4318\", traceURL: \"javascript:alert({traceId})\"}\n", "tracing.traceURL"},
	}
	checkParse(t, cases, "")
	// insecure allows headers over http:// to another machine.
	if _, err := Parse([]byte("tracing: {endpoint: \"http://collector.example.com:4318\", headers: {X-Key: k}, insecure: true}\n"), "/x", env(nil)); err != nil {
		t.Fatal(err)
	}
	// No error quotes a header's value.
	_, err := Parse([]byte("tracing: {endpoint: \"${EP}\", headers: {X-Key: \"${KEY}\"}}\n"), "/x",
		env(map[string]string{"EP": "http://collector.example.com:4318", "KEY": "sekrit-key"}))
	if err == nil || strings.Contains(err.Error(), "sekrit-key") {
		t.Fatalf("error %v", err)
	}
}
