package server

import "testing"

func TestTraceLink(t *testing.T) {
	t.Parallel()
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	for _, tc := range []struct{ pattern, id, want string }{
		{"https://jaeger.example.com/trace/{traceId}", id, "https://jaeger.example.com/trace/" + id},
		{"https://grafana.example.com/explore?traceId={traceId}&x={traceId}", id, "https://grafana.example.com/explore?traceId=" + id + "&x=" + id},
		{"", id, ""},
		{"https://jaeger.example.com/trace/{traceId}", "", ""},
	} {
		if got := traceLink(tc.pattern, tc.id); got != tc.want {
			t.Errorf("traceLink(%q, %q) = %q, want %q", tc.pattern, tc.id, got, tc.want)
		}
	}
}
