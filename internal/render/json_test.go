package render

import (
	"bytes"
	"testing"

	"go.yaml.in/yaml/v3"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// jsonCases are resources written every way the fast JSON writer meets or refuses: fast
// says whether it writes them itself.
var jsonCases = []struct {
	doc  string
	fast bool
}{
	{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {b: c, a: d}}\ndata: {x: '1', y: \"true\", z: \"\"}\n", true},
	{"kind: W\nspec: {i: 12, n: -3, z: 0, b: true, c: False, d: TRUE, nul: null, t: ~, f: 1.5, g: 2.0, h: 1e3, list: [1, a, {x: y}], empty: {}, none: []}\n", true},
	{"kind: W\nspec:\n  text: \"line one\\nline <two> & \\\"three\\\"\\n\"\n  tab: \"a\\tb\\u2028c\\x01\"\n  uni: héllo ☃\n", true},
	{"kind: W\nspec:\n  text: |\n    line one\n    line two\n", false},
	{"kind: W\nspec:\n  folded: >\n   0\n    x\n", false},
	{"kind: W\nspec:\n  long: 'words   spaced  out over a line that is longer than eighty characters, which the encoder may fold '\n", true},
	{"kind: W\nspec: {s: !!str 12, i: !!int 12, b: !!bool true, q: !!int '12', bad: !!int x}\n", false},
	{"kind: W\nspec: {i: !!int 12, n: !!null null, s: !!str x}\n", false},
	{"kind: W\nspec: {e: , s: x}\n", false},
	{"kind: W\nspec: {f: !!float 1}\n", false},
	{"kind: W\nspec: {hex: 0x1F, oct: 0o17, under: 1_000, plus: +5, lead: 012, minus0: -0}\n", false},
	{"kind: W\nspec: {big: 123456789012345678901234567890}\n", true},
	{"kind: W\nspec: {edge: 999999999999999999, neg: -999999999999999999}\n", true},
	{"kind: W\nspec: {date: 2001-12-14, ts: 2001-12-14T21:59:43.10Z}\n", false},
	{"kind: W\nspec: {inf: .inf, nan: .nan}\n", false},
	{"kind: W\nbase: &b {x: 1}\nspec: {<<: *b, y: 2}\n", false},
	{"kind: W\nspec: {1: a, true: b}\n", false},
	{"kind: W\nspec: {a: 1, a: 2}\n", false},
	{"kind: W\nspec: {bin: !!binary aGVsbG8=, custom: !foo bar}\n", false},
	{`{"kind": "W", "spec": {"k": "v", "n": 3, "list": ["a", 1, false, null]}}`, true},
}

// TestAppendJSONAsMarshalJSON: what the fast writer writes is byte for byte what kyaml's
// MarshalJSON writes, and it writes the usual resources itself.
func TestAppendJSONAsMarshalJSON(t *testing.T) {
	t.Parallel()
	for _, c := range jsonCases {
		rn, err := kyaml.Parse(c.doc)
		if err != nil {
			t.Fatalf("%q: %v", c.doc, err)
		}
		got, ok := appendJSON(nil, rn.YNode())
		if ok != c.fast {
			t.Errorf("%q: fast = %v, want %v", c.doc, ok, c.fast)
		}
		if !ok {
			continue
		}
		want, err := rn.MarshalJSON()
		if err != nil {
			t.Fatalf("%q: MarshalJSON: %v", c.doc, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%q:\n got %s\nwant %s", c.doc, got, want)
		}
	}
}

// FuzzAppendJSON: whatever YAML it is given, and whatever string a transformer sets as a
// value, the fast writer either declines or writes what MarshalJSON writes (and MarshalJSON
// then succeeds).
func FuzzAppendJSON(f *testing.F) {
	for _, c := range jsonCases {
		f.Add(c.doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		// A string value as kustomize's transformers build it: tagged !!str, no style.
		built := kyaml.NewRNode(&yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
			{Kind: yaml.ScalarNode, Tag: "!!str", Value: "k"},
			{Kind: yaml.ScalarNode, Tag: "!!str", Value: doc},
		}})
		if got, ok := appendJSON(nil, built.YNode()); ok {
			want, err := built.MarshalJSON()
			if err != nil {
				t.Fatalf("{k: %q}: fast JSON %s, MarshalJSON fails: %v", doc, got, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("{k: %q}:\n got %s\nwant %s", doc, got, want)
			}
		}
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(doc), &n); err != nil || len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
			return
		}
		rn := kyaml.NewRNode(n.Content[0])
		got, ok := appendJSON(nil, rn.YNode())
		if !ok {
			return
		}
		want, err := rn.MarshalJSON()
		if err != nil {
			t.Fatalf("%q: fast JSON %s, MarshalJSON fails: %v", doc, got, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%q:\n got %s\nwant %s", doc, got, want)
		}
	})
}
