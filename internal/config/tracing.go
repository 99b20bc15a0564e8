package config

import (
	"math"
	"net/url"
	"sort"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/trueup-dev/trueup/internal/plaintext"
)

// Tracing exports OpenTelemetry spans of syncs and reconciles over OTLP.
// Absent, nothing is exported and no span is recorded.
type Tracing struct {
	// Endpoint is the collector's base URL, as OTEL_EXPORTER_OTLP_ENDPOINT: /v1/traces is
	// appended to its path (http://h:4318 → http://h:4318/v1/traces, https://h/otlp →
	// https://h/otlp/v1/traces), unless the path already ends with /v1/traces. No query or
	// fragment: the exporter would drop them (keys go in headers).
	Endpoint string `yaml:"endpoint"`
	// Protocol is http/protobuf, the only one supported (the default).
	Protocol string `yaml:"protocol"`
	// Headers go with every export (an API key, say); their values are scrubbed from logs.
	Headers map[string]string `yaml:"headers"`
	// Insecure allows headers over an http:// endpoint to another machine.
	Insecure bool `yaml:"insecure"`
	// SampleRatio is the share of syncs and reconciles traced, 0..1 (unset: OTEL_TRACES_SAMPLER
	// when set, else every one).
	SampleRatio *float64 `yaml:"sampleRatio"`
	// ServiceName is the service.name resource attribute (default trueup).
	ServiceName string `yaml:"serviceName"`
	// TraceURL links trace ids on the dashboard: {traceId} is replaced by the id (optional).
	TraceURL string `yaml:"traceURL"`
}

// Tracing defaults.
const (
	DefaultTracingProtocol    = "http/protobuf"
	DefaultTracingServiceName = "trueup"
	TraceURLPlaceholder       = "{traceId}"
)

func (t *Tracing) applyDefaults() {
	if t.Protocol == "" {
		t.Protocol = DefaultTracingProtocol
	}
	if t.ServiceName == "" {
		t.ServiceName = DefaultTracingServiceName
	}
}

// tracesPath is the OTLP/HTTP path of trace exports.
const tracesPath = "/v1/traces"

// TracesURL is the URL spans are posted to: Endpoint's path with /v1/traces appended, as
// OpenTelemetry does with OTEL_EXPORTER_OTLP_ENDPOINT, unless it already ends with it (a
// full traces URL, as this field took before, keeps working).
func (t *Tracing) TracesURL() string {
	u, err := url.Parse(t.Endpoint)
	if err != nil {
		return t.Endpoint
	}
	p := strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(p, tracesPath) {
		p += tracesPath
	}
	// The exporter takes the decoded path (url.URL.Path) too: an escaped one is not kept.
	u.Path, u.RawPath = p, ""
	return u.String()
}

// validateTracing checks the tracing block and records its header values for scrubbing.
func (c *Config) validateTracing(bad func(string, ...any)) {
	t := c.Tracing
	if t == nil {
		return
	}
	for _, v := range t.Headers {
		c.recordSecret(v)
	}
	// Not quoted: the endpoint may be a ${VAR} holding a token.
	u, err := url.Parse(t.Endpoint)
	switch {
	case t.Endpoint == "":
		bad("tracing.endpoint: required (the OTLP collector's URL, e.g. http://127.0.0.1:4318)")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		bad("tracing.endpoint: must be an http(s) URL such as http://127.0.0.1:4318")
	case u.User != nil:
		bad("tracing.endpoint: must not hold credentials (put them in tracing.headers)")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(t.Endpoint, "#"):
		// The exporter keeps only the host and the path: a key in the query would be dropped.
		bad("tracing.endpoint: must not hold a query or a fragment (the exporter drops them; put keys in tracing.headers)")
	default:
		if err := plaintext.Check("tracing.endpoint", u.Scheme, u.Hostname(), "the headers", len(t.Headers) > 0, t.Insecure); err != nil {
			bad("%w", err)
		}
	}
	if t.Protocol != DefaultTracingProtocol {
		bad("tracing.protocol: %q is not supported (only %s)", t.Protocol, DefaultTracingProtocol)
	}
	names := make([]string, 0, len(t.Headers))
	for k := range t.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !httpguts.ValidHeaderFieldName(k) {
			bad("tracing.headers: %q is not a valid header name", k)
		}
		if strings.ContainsAny(t.Headers[k], "\r\n") {
			bad("tracing.headers.%s: the value holds a line break", k) // not quoted: a secret
		}
	}
	// NaN compares false with everything: TraceIDRatioBased(NaN) samples all or none by platform.
	if r := t.SampleRatio; r != nil && (*r < 0 || *r > 1 || math.IsNaN(*r)) {
		bad("tracing.sampleRatio: %v is outside 0..1", *r)
	}
	if t.TraceURL != "" {
		u, err := url.Parse(strings.ReplaceAll(t.TraceURL, TraceURLPlaceholder, "x"))
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			bad("tracing.traceURL: %q is not an http(s) URL", t.TraceURL)
		case !strings.Contains(t.TraceURL, TraceURLPlaceholder):
			bad("tracing.traceURL: %q does not hold %s", t.TraceURL, TraceURLPlaceholder)
		}
	}
}
