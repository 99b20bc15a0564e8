package manifest

import (
	"reflect"
	"testing"
)

// TestDefaulterFillOwned: filling defaults in place (a spec decoded for its check) gives what
// apply gives with copies, apply leaves its value as it was, and neither changes the
// schema's default values (shared by every spec they fill).
func TestDefaulterFillOwned(t *testing.T) {
	t.Parallel()
	schema := `{"type": "object", "properties": {
		"color": {"type": "string", "default": "blue"},
		"size": {"type": "integer"},
		"box": {"type": "object", "default": {}, "properties": {"w": {"type": "integer", "default": 1}}},
		"tags": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string", "default": "x"}}}},
		"deep": {"type": "object", "properties": {"in": {"type": "object", "properties": {"z": {"default": [1]}}}}}}}`
	d := buildDefaulter(mustDecode(t, schema), 0)
	fresh := func() *defaulter { return buildDefaulter(mustDecode(t, schema), 0) }
	for _, value := range []string{`{}`, `{"size": 1}`, `{"color": "red", "box": {"w": 5}}`, `{"box": {}}`,
		`{"tags": [{}, {"k": "y"}, {"other": 1}]}`, `{"deep": {"in": {}}}`, `{"deep": {}}`, `{"tags": []}`} {
		copied := mustDecode(t, value)
		want, wantChanged := d.apply(copied)
		if !reflect.DeepEqual(copied, mustDecode(t, value)) {
			t.Fatalf("%s: apply changed its value: %#v", value, copied)
		}
		owned := mustDecode(t, value)
		got, changed := d.fill(owned, true)
		if changed != wantChanged || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: filled in place %#v (%t), apply %#v (%t)", value, got, changed, want, wantChanged)
		}
		if _, isMap := owned.(map[string]any); isMap && changed && !reflect.DeepEqual(owned, got) {
			t.Fatalf("%s: not filled in place: %#v, result %#v", value, owned, got)
		}
		// The filled values hold the schema's default values: filling more must not reach them.
		if again, _ := d.fill(got, true); !reflect.DeepEqual(again, want) {
			t.Fatalf("%s: filled twice %#v", value, again)
		}
	}
	if !reflect.DeepEqual(d, fresh()) {
		t.Fatal("the schema's default values changed")
	}
}

func mustDecode(t *testing.T, s string) any {
	t.Helper()
	v, err := decodeWithJSON(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
