package manifest

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/trueup-dev/trueup/internal/graph"
)

// Label values that encoding/json escapes, or might be thought to.
var trickyStrings = map[string]string{
	"app.kubernetes.io/name": "db",
	"quote":                  `say "hi" \ bye`,
	"html":                   "<a & b>",
	"unicode":                "ünïcödé ✓",
	"separators":             "line\u2028para\u2029",
	"control":                "tab\tnewline\n\x01",
	"":                       "empty key",
	"del":                    "\x7f",
	`"key"`:                  `\`,
}

// MetaHash is stored by the store and compared across versions of trueup: the hasher's
// hand-built JSON must match what encoding/json makes of the same values, byte for byte.
func TestMetaHashMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                string
		apiVersion, file    string
		labels, annotations map[string]string
		dependsOn           []graph.ID
	}{
		{"plain", "example.com/v1", "apps/db.yaml", map[string]string{"team": "a", "tier": "gold"}, nil, nil},
		{"empty", "example.com/v1", "db.yaml", nil, nil, nil},
		{"tricky", "example.com/v1", `dir "q"/ü<&>.yaml`, trickyStrings, trickyStrings, nil},
		{"annotations only", "x.example.com/v1beta1", "a.json", nil, map[string]string{"note": "x"}, nil},
		{"dependsOn", "example.com/v1", "db.yaml", nil, nil, []graph.ID{{Kind: "Network", Namespace: "prod", Name: "core"}, {Kind: "Vpc", Namespace: "ü\"", Name: "x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			orEmpty := func(m map[string]string) map[string]string {
				if m == nil {
					return map[string]string{}
				}
				return m
			}
			whole := map[string]any{
				"apiVersion":  tt.apiVersion,
				"labels":      orEmpty(tt.labels),
				"annotations": orEmpty(tt.annotations),
				"file":        tt.file,
			}
			var deps string
			if tt.dependsOn != nil {
				var list []map[string]string
				for _, id := range tt.dependsOn {
					list = append(list, map[string]string{"kind": id.Kind, "namespace": id.Namespace, "name": id.Name})
				}
				whole["dependsOn"] = list
				deps = encodeIDs(tt.dependsOn)
			}
			canon, err := marshalCanonical(whole)
			if err != nil {
				t.Fatal(err)
			}
			var h metaHasher
			key := metaKey{intern(tt.apiVersion), metaSets{}.get(tt.labels, tt.annotations), deps}
			if got := h.hash(tt.file, key); got != hashJSON(canon) {
				t.Errorf("hash of %s differs from encoding/json's", canon)
			}
			if got := h.hash(tt.file, key); got != hashJSON(canon) {
				t.Error("remembered hash differs")
			}
			if h.hash(tt.file+".moved", key) == hashJSON(canon) {
				t.Error("hash does not depend on the file")
			}
		})
	}
}

func TestLabelSetsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, m := range []map[string]string{
		{"team": "a"},
		{"b": "2", "a": "1", "c": ""},
		trickyStrings,
	} {
		enc := encodeStrings(m)
		canon, err := marshalCanonical(m)
		if err != nil {
			t.Fatal(err)
		}
		if enc != string(canon) {
			t.Errorf("encodeStrings = %s, encoding/json gives %s", enc, canon)
		}
		got := decodeStrings(enc)
		if !reflect.DeepEqual(got, m) {
			t.Errorf("round trip of %s = %q, want %q", enc, got, m)
		}
		got["new"] = "x"
		if again := decodeStrings(enc); !reflect.DeepEqual(again, m) {
			t.Errorf("changing one decoded map changed the next: %q", again)
		}
	}
	if encodeStrings(nil) != "" || encodeStrings(map[string]string{}) != "" {
		t.Error("an empty map must encode as the empty string")
	}
	if m := decodeStrings(""); m == nil || len(m) != 0 {
		t.Errorf(`decodeStrings("") = %v, want an empty non-nil map`, m)
	}
}

func TestMetaSetsShared(t *testing.T) {
	t.Parallel()
	sets := metaSets{}
	a := sets.get(map[string]string{"team": "a", "tier": "gold"}, nil)
	b := sets.get(map[string]string{"tier": "gold", "team": "a"}, map[string]string{})
	if a == nil || a != b {
		t.Error("equal sets are not shared")
	}
	if c := sets.get(map[string]string{"team": "a"}, map[string]string{"tier": "gold"}); c == a {
		t.Error("labels and annotations are confused")
	}
	if sets.get(nil, map[string]string{}) != nil {
		t.Error("no labels and no annotations must give nil")
	}
}

// TestMetaSetsDecodedValues: a document's sets as decoded (metaOf) and as maps of strings
// (get) find the same resourceMeta, whose encodings are encoding/json's (without HTML
// escaping), past eight keys too; both empty give nil.
func TestMetaSetsDecodedValues(t *testing.T) {
	t.Parallel()
	many := map[string]string{}
	for i := range 12 {
		many[fmt.Sprintf("k%02d", 11-i)] = fmt.Sprint(i)
	}
	for _, c := range []struct{ labels, annotations map[string]string }{
		{map[string]string{"team": "t0"}, nil},
		{nil, map[string]string{"note": "é \"q\" <b>\\ \x00"}},
		{many, map[string]string{"a": ""}},
		{map[string]string{}, map[string]string{"x.io/y": "z"}},
	} {
		ms := metaSets{}
		want := ms.get(c.labels, c.annotations)
		got := metaOf(ms, anyValues(c.labels), anyValues(c.annotations))
		if got != want || len(ms) != 1 {
			t.Fatalf("%v %v: %p and %p, %d sets", c.labels, c.annotations, got, want, len(ms))
		}
		for _, pair := range [][2]any{{c.labels, got.labels}, {c.annotations, got.annotations}} {
			m := pair[0].(map[string]string)
			j, _ := encodeCanonical(m)
			if len(m) == 0 {
				j = nil
			}
			if enc := pair[1].(string); enc != string(j) {
				t.Fatalf("%v: %s, encoding/json %s", m, enc, j)
			}
		}
	}
	if metaOf(metaSets{}, nil, map[string]any{}) != nil || (metaSets{}).get(nil, nil) != nil {
		t.Fatal("no sets, a resourceMeta")
	}
}

func anyValues(m map[string]string) map[string]any {
	if m == nil {
		return nil
	}
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}
