package preview

import (
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/graph"
)

func TestResolveRefs(t *testing.T) {
	t.Parallel()
	outputs := map[graph.ID]map[string]any{
		{Kind: "network", Namespace: "prod", Name: "core"}: {"cidr": "10.0.0.0/16", "port": 5432, "tls": true,
			"peers": map[string]any{"a": "10.1.0.0/16", "n": []any{"x-peer", 7}}},
	}
	for _, tc := range []struct{ in, want, values string }{
		{`{"a":1}`, `{"a":1}`, ""},
		{`{"net":"${{ Network/core.outputs.cidr }}"}`, `{"net":"10.0.0.0/16"}`, "10.0.0.0/16"},
		{`{"port":"${{ Network/prod/core.outputs.port }}"}`, `{"port":5432}`, "5432"},
		{`{"url":"db:${{ Network/core.outputs.port }}/x"}`, `{"url":"db:5432/x"}`, "5432"},
		// Every leaf of an object; booleans are not values to scrub.
		{`{"p":"${{ Network/core.outputs.peers }}","tls":"${{ Network/core.outputs.tls }}"}`,
			`{"p":{"a":"10.1.0.0/16","n":["x-peer",7]},"tls":true}`, "10.1.0.0/16 7 x-peer"},
		// Not resolvable now: left as written.
		{`{"x":"${{ Network/other.outputs.cidr }}"}`, `{"x":"${{ Network/other.outputs.cidr }}"}`, ""},
		{`{"x":"${{ Network/core.outputs.nope }}"}`, `{"x":"${{ Network/core.outputs.nope }}"}`, ""},
	} {
		got, values := resolveRefs([]byte(tc.in), "prod", outputs)
		if string(got) != tc.want || strings.Join(values, " ") != tc.values {
			t.Errorf("resolveRefs(%s) = %s, values %q; want %s, %q", tc.in, got, values, tc.want, tc.values)
		}
	}
}
