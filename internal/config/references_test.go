package config

import (
	"testing"
)

func TestParseReferences(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(secretsSources+`
references:
  expose:
    - {namespace: production, kinds: [Db], outputs: [host, port], to: [{namespace: staging}, {namespace: "qa-*"}]}
    - {namespace: "*", kinds: ["*"], outputs: ["*"], to: [{namespace: ops}]}
`), "/x", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	e := c.References.Expose
	if len(e) != 2 || e[0].Namespace != "production" || len(e[0].Outputs) != 2 || e[0].To[1].Namespace != "qa-*" || e[1].Kinds[0] != "*" {
		t.Fatalf("references %+v", c.References)
	}
}

func TestReferencesErrors(t *testing.T) {
	t.Parallel()
	expose := func(e string) string { return secretsSources + "references:\n  expose:\n    - " + e + "\n" }
	tests := []struct{ name, yaml, want string }{
		{"unknown field", expose("{namespace: p, kinds: [Db], outputs: [host], to: [{namespace: s}], output: [x]}"), "field output not found"},
		{"unknown field in to", expose("{namespace: p, kinds: [Db], outputs: [host], to: [{namespace: s, source: x}]}"), "field source not found"},
		{"unknown field in block", secretsSources + "references:\n  grants: []\n", "field grants not found"},
		{"without namespace", expose("{kinds: [Db], outputs: [host], to: [{namespace: s}]}"), "references.expose[0].namespace: required"},
		{"without kinds", expose("{namespace: p, outputs: [host], to: [{namespace: s}]}"), `references.expose[0].kinds: required (write "*" to allow every one)`},
		{"without outputs", expose("{namespace: p, kinds: [Db], to: [{namespace: s}]}"), `references.expose[0].outputs: required (write "*" to allow every one, or [] to allow dependsOn only)`},
		{"null outputs", expose("{namespace: p, kinds: [Db], outputs: null, to: [{namespace: s}]}"), `references.expose[0].outputs: required`},
		{"empty kinds", expose("{namespace: p, kinds: [], outputs: [], to: [{namespace: s}]}"), `references.expose[0].kinds: required`},
		{"without to", expose("{namespace: p, kinds: [Db], outputs: [host]}"), "references.expose[0].to: required"},
		{"empty to namespace", expose("{namespace: p, kinds: [Db], outputs: [host], to: [{}]}"), "references.expose[0].to[0].namespace: required"},
		{"bad pattern", expose("{namespace: 'p[', kinds: [Db], outputs: [host], to: [{namespace: s}]}"), `references.expose[0].namespace: "p[" is not a valid pattern`},
		{"empty kind", expose("{namespace: p, kinds: [''], outputs: [host], to: [{namespace: s}]}"), "references.expose[0].kinds[0]: required"},
	}
	checkParse(t, tests, "")
}

// TestReferencesOrderingOnly: `outputs: []` is a grant of dependsOn alone (no output).
func TestReferencesOrderingOnly(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(secretsSources+"references:\n  expose:\n    - {namespace: p, kinds: [Db], outputs: [], to: [{namespace: s}]}\n"), "/x", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if o := c.References.Expose[0].Outputs; o == nil || len(o) != 0 {
		t.Fatalf("outputs %#v, want empty", o)
	}
}

// TestDiffReferences: the references block is read live, so a reload applies it (it is not
// restart-only) and reports it changed.
func TestDiffReferences(t *testing.T) {
	t.Parallel()
	old, err := Parse([]byte(secretsSources), "/x", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	next, err := Parse([]byte(secretsSources+"references:\n  expose:\n    - {namespace: p, kinds: [Db], outputs: [host], to: [{namespace: s}]}\n"), "/x", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	ch := Diff(old, next)
	if !ch.References || ch.None() || len(ch.RestartRequired) != 0 {
		t.Fatalf("changes %+v", ch)
	}
	if ch := Diff(next, next); ch.References || !ch.None() {
		t.Fatalf("no change: %+v", ch)
	}
}
