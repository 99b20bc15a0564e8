package policy

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestChangedPaths(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		old, new string
		want     []string
	}{
		{"equal", `{"size": 1, "tags": {"env": "prod"}}`, `{"tags": {"env": "prod"}, "size": 1.0}`, nil},
		{"a field", `{"size": 1, "region": "eu"}`, `{"size": 2, "region": "eu"}`, []string{"spec.size"}},
		{"nested", `{"tags": {"env": "prod", "team": "a"}}`, `{"tags": {"env": "dev", "team": "a"}}`, []string{"spec.tags.env"}},
		{"added and removed", `{"a": 1}`, `{"b": 1}`, []string{"spec.a", "spec.b"}},
		{"a list is one path", `{"zones": ["a", "b"]}`, `{"zones": ["a", "c"]}`, []string{"spec.zones"}},
		{"an object becomes a value", `{"db": {"size": 1}}`, `{"db": "small"}`, []string{"spec.db"}},
		{"first apply", ``, `{"size": 1}`, []string{"spec"}},
	} {
		if got := ChangedPaths(json.RawMessage(tc.old), json.RawMessage(tc.new)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
