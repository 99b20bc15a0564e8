package actions

import (
	"encoding/json"
	"testing"
)

func TestPlanFromOutputs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		out  map[string]any
		want Plan
		err  string
	}{
		{"full", map[string]any{"changes": true, "summary": "1 to add", "plan": "+ x", "other": 1}, Plan{Changes: true, Summary: "1 to add", Text: "+ x"}, ""},
		{"no changes, nothing else", map[string]any{"changes": false}, Plan{}, ""},
		{"null summary", map[string]any{"changes": true, "summary": nil}, Plan{Changes: true}, ""},
		{"changes missing", map[string]any{"summary": "x"}, Plan{}, `want a boolean "changes"`},
		{"changes a string", map[string]any{"changes": "true"}, Plan{}, `want a boolean "changes"`},
		{"summary a number", map[string]any{"changes": true, "summary": 3.0}, Plan{}, `"summary" is not a string`},
		{"counts and hash", map[string]any{"changes": true, "add": 1.0, "destroy": json.Number("2"), "hash": "h1"},
			Plan{Changes: true, Counted: true, Add: 1, Destroy: 2, Hash: "h1"}, ""},
		{"a negative count", map[string]any{"changes": true, "replace": -1.0}, Plan{}, `"replace": want a non-negative integer up to 2147483647, got a negative number`},
		{"a hash not a string", map[string]any{"changes": true, "hash": 3.0}, Plan{}, `"hash": want a string, got a number`},
		{"plan an object", map[string]any{"changes": true, "plan": map[string]any{}}, Plan{}, `"plan" is not a string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := PlanFromOutputs(tc.out, nil)
			switch {
			case tc.err != "" && (err == nil || err.Error() != tc.err):
				t.Fatalf("err = %v, want %q", err, tc.err)
			case tc.err == "" && (err != nil || got != tc.want):
				t.Fatalf("PlanFromOutputs = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
