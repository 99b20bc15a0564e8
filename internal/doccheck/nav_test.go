package doccheck

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseMkdocs(t *testing.T) {
	t.Parallel()
	src := `site_name: trueup
docs_dir: docs
nav:
  - Home: index.md
  - Concepts:
      - Sources: concepts/sources.md
      - concepts/status.md
  - Architecture:
      - Design:
          - DESIGN.md
  - GitHub: https://github.com/trueup-dev/trueup
`
	got, err := ParseMkdocs([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := Site{DocsDir: "docs", Nav: []NavEntry{
		{Line: 4, Title: "Home", Path: "index.md"},
		{Line: 6, Title: "Sources", Path: "concepts/sources.md"},
		{Line: 7, Path: "concepts/status.md"},
		{Line: 10, Path: "DESIGN.md"},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseMkdocs = %+v\nwant %+v", got, want)
	}
}

func TestParseMkdocsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, src, want string }{
		{"no nav", "site_name: x\n", "no nav"},
		{"nav not a list", "nav: index.md\n", "mkdocs.yml:1: nav: a list expected"},
		{"two keys in one item", "nav:\n  - {A: a.md, B: b.md}\n", "mkdocs.yml:2: nav item"},
		{"a mapping as a page", "nav:\n  - A: {x: y}\n", `mkdocs.yml:2: nav item "A"`},
		{"bad yaml", "nav: [\n", "mkdocs.yml: yaml"},
	}
	for _, tt := range tests {
		_, err := ParseMkdocs([]byte(tt.src))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
	if got, err := ParseMkdocs([]byte("nav: [a.md]\n")); err != nil || got.DocsDir != "docs" {
		t.Errorf("docs_dir default = %+v, %v; want docs", got, err)
	}
}
