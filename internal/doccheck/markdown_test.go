package doccheck

import (
	"reflect"
	"testing"
)

func TestLinks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want []Link
	}{
		{"inline link", "See [the guide](guides/a.md).", []Link{{1, "guides/a.md"}}},
		{"image and link on one line", "![shot](s.png) and [x](b.md#top)", []Link{{1, "s.png"}, {1, "b.md#top"}}},
		{"title after the target", `[x](a.md "A page")`, []Link{{1, "a.md"}}},
		{"angle brackets", "[x](<my page.md>)", []Link{{1, "my page.md"}}},
		{"reference definition", "text\n[ref]: ../b.md#c", []Link{{2, "../b.md#c"}}},
		{"external kept as found", "[go](https://go.dev)", []Link{{1, "https://go.dev"}}},
		{"fenced block skipped", "```\n[x](a.md)\n```\n[y](b.md)", []Link{{4, "b.md"}}},
		{"tilde fence skipped", "~~~yaml\n[x](a.md)\n~~~\n", nil},
		{"longer closing fence", "````\n```\n[x](a.md)\n````\n[y](b.md)", []Link{{5, "b.md"}}},
		{"code span skipped", "run `[x](a.md)` then [y](b.md)", []Link{{1, "b.md"}}},
		{"double-backtick span", "``a ` [x](a.md)`` [y](b.md)", []Link{{1, "b.md"}}},
		{"unmatched backtick is text", "a ` b [y](b.md)", []Link{{1, "b.md"}}},
		{"footnote definition is no link", "a[^1]\n\n[^1]: a note [y](b.md)", []Link{{3, "b.md"}}},
		{"code span across lines", "run `a\n[x](a.md)` then\n[y](b.md)", []Link{{3, "b.md"}}},
		{"span stops at a blank line", "a `b\n\n[x](a.md) c`", []Link{{3, "a.md"}}},
		{"fence in a nested list item", "- a\n  1. b\n\n     ```\n     [x](a.md)\n     ```\n\n     [y](b.md)", []Link{{8, "b.md"}}},
		{"list ends at unindented text after a blank line", "- a\n\ntext\n    ~~~\n    [x](a.md)\n    ~~~", []Link{{5, "a.md"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Links(tt.src); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Links(%q) = %v, want %v", tt.src, got, tt.want)
			}
		})
	}
}

func TestHeadings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want []Heading
	}{
		{"atx levels", "# One\ntext\n### Three ###", []Heading{{1, "One"}, {3, "Three"}}},
		{"code span kept in text", "## `trueup graph`", []Heading{{1, "`trueup graph`"}}},
		{"hash in fence is not a heading", "```sh\n# comment\n```\n## Real", []Heading{{4, "Real"}}},
		{"no space is not a heading", "#hashtag", nil},
		{"setext", "Title\n=====\n\nSub\n---", []Heading{{1, "Title"}, {4, "Sub"}}},
		{"thematic break after a blank line", "para\n\n---", nil},
		{"table rule is not setext", "| a |\n|---|", nil},
		{"hash in an indented fence of a list item", "- step\n\n    ```sh\n    # comment\n    ```\n## Real", []Heading{{6, "Real"}}},
		{"heading after a span across lines", "`a\nb`\n## H", []Heading{{3, "H"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Headings(tt.src); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Headings(%q) = %v, want %v", tt.src, got, tt.want)
			}
		})
	}
}

func TestAnchor(t *testing.T) {
	t.Parallel()
	tests := []struct{ heading, want string }{
		{"Try it", "try-it"},
		{"How it works", "how-it-works"},
		{"`trueup graph`", "trueup-graph"},
		{"exec — any command, protocol `trueup.dev/exec/v1`", "exec--any-command-protocol-trueupdevexecv1"},
		{"Phases and conditions (Ready, Stalled)", "phases-and-conditions-ready-stalled"},
		{"snake_case stays", "snake_case-stays"},
		{"A [linked](x.md) word", "a-linked-word"},
		{"Ünïcode letters", "ünïcode-letters"},
		{"Q&A: 1.2", "qa-12"},
	}
	for _, tt := range tests {
		if got := Anchor(tt.heading); got != tt.want {
			t.Errorf("Anchor(%q) = %q, want %q", tt.heading, got, tt.want)
		}
	}
}

func TestAnchors(t *testing.T) {
	t.Parallel()
	src := "# Intro\n## Config\n## Config\n## Config\n<a id=\"custom\"></a>\n```\n# not-a-heading\n```\n"
	got := Anchors(src)
	want := map[string]bool{"intro": true, "config": true, "config-1": true, "config-2": true, "custom": true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Anchors = %v, want %v", got, want)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	tests := []struct {
		from, link string
		want       Target
		wantErr    bool
	}{
		{"README.md", "docs/index.md", Target{File: "docs/index.md"}, false},
		{"docs/concepts/status.md", "../guides/secrets.md#vault", Target{File: "docs/guides/secrets.md", Anchor: "vault"}, false},
		{"docs/concepts/status.md", "#phases", Target{File: "docs/concepts/status.md", Anchor: "phases"}, false},
		{"docs/index.md", "./concepts/./sources.md", Target{File: "docs/concepts/sources.md"}, false},
		{"docs/index.md", "/Makefile", Target{File: "Makefile"}, false},
		{"docs/index.md", "../examples/terraform/", Target{File: "examples/terraform"}, false},
		{"docs/index.md", "my%20page.md?x=1#a", Target{File: "docs/my page.md", Anchor: "a"}, false},
		{"README.md", "../outside.md", Target{}, true},
		{"README.md", "https://example.com/a.md", Target{}, true},
	}
	for _, tt := range tests {
		got, err := Resolve(tt.from, tt.link)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("Resolve(%q, %q) = %+v, %v; want %+v, error %v", tt.from, tt.link, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestIsExternal(t *testing.T) {
	t.Parallel()
	for link, want := range map[string]bool{
		"https://go.dev": true, "http://127.0.0.1:8080": true, "mailto:a@b.c": true, "//cdn/x": true,
		"docs/a.md": false, "#top": false, "../a.md#x:y": false,
	} {
		if got := IsExternal(link); got != want {
			t.Errorf("IsExternal(%q) = %v, want %v", link, got, want)
		}
	}
}

func TestUnclosedFence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want int
	}{
		{"text\n```sh\nmake run\n```\n", 0},
		{"text\n```sh\nmake run\n", 2},
		{"```\nok\n```\n\n~~~\nopen\n", 5},
		{"````\n```\n", 1},     // a shorter fence does not close a longer one
		{"```\n~~~\n```\n", 0}, // nor does another character
		{"```\n``` yaml\n", 1}, // a closing fence has no info string
		{"no code at all\n", 0},
	}
	for _, tt := range tests {
		if got := UnclosedFence(tt.src); got != tt.want {
			t.Errorf("UnclosedFence(%q) = %d, want %d", tt.src, got, tt.want)
		}
	}
}
