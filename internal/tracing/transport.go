package tracing

import (
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Transport sends the W3C trace context (traceparent, tracestate) of the request context's
// sampled span with each request, so that a service called by an action (a webhook
// receiver, GitHub, GitLab) can join the call's trace. It records no span of its own:
// otelhttp's client spans would carry the request URL, which for these plugins can hold a
// token in its query, and the action span already times the call. Untraced requests pass
// through untouched.
func Transport(next http.RoundTripper) http.RoundTripper { return transport{next} }

type transport struct{ next http.RoundTripper }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !trace.SpanContextFromContext(req.Context()).IsSampled() {
		return t.next.RoundTrip(req)
	}
	req = req.Clone(req.Context()) // a RoundTripper must not change its caller's request
	propagation.TraceContext{}.Inject(req.Context(), propagation.HeaderCarrier(req.Header))
	return t.next.RoundTrip(req)
}
