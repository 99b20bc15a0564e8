package doccheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

func TestCheck(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"README.md": file("# trueup\n[docs](docs/index.md) [gone](docs/gone.md)\n" +
			"[anchor](docs/index.md#where-to-go) [bad anchor](docs/index.md#nowhere)\n" +
			"[ext](https://example.com/x.md) [dir](examples/) ![shot](docs/screenshots/a.png)\n" +
			"It works as before.\n```\n[in code](nowhere.md) (H3)\n```\n"),
		"docs/index.md":            file("# Home\n## Where to go\n[self](#home) [up](../README.md#trueup) [nope](#nope)\n"),
		"docs/concepts/a.md":       file("# A\n[out](../../../x.md)\n```\nopen\n"),
		"docs/orphan.md":           file("# Orphan\n"),
		"docs/screenshots/a.png":   file("png"),
		"docs/screenshots/note.md": file("# not a page\n"),
		"examples/x.txt":           file("x"),
		"deploy/x/README.md":       file("# X\n[doc](../../docs/index.md#home) [gone](gone.md)\n"),
		"internal/testdata/a.md":   file("[gone](gone.md) as before\n"),
		"node_modules/m/README.md": file("[gone](gone.md)\n"),
		".trueup/notes.md":         file("[gone](gone.md)\n"),
		"mkdocs.yml":               file("site_name: t\nnav:\n  - Home: index.md\n  - Concepts:\n      - concepts/a.md\n      - concepts/b.md\n  - Again: index.md\n"),
	}
	probs, err := Check(fsys)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range probs {
		got = append(got, p.String())
	}
	want := []string{
		"README.md:2: link docs/gone.md: no such file docs/gone.md",
		"README.md:3: link docs/index.md#nowhere: docs/index.md has no heading with anchor #nowhere",
		`README.md:5: "as before": history: say what it does`,
		"deploy/x/README.md:2: link gone.md: no such file deploy/x/gone.md",
		"docs/concepts/a.md:2: link ../../../x.md leaves the repository",
		"docs/concepts/a.md:3: code block opened here is never closed",
		"docs/index.md:3: link ../README.md#trueup leaves docs/, which the site serves alone: link a page of docs/ or a full URL",
		"docs/index.md:3: link #nope: docs/index.md has no heading with anchor #nope",
		"docs/orphan.md: not in the nav of mkdocs.yml",
		"mkdocs.yml:6: nav entry concepts/b.md: no such file docs/concepts/b.md",
		"mkdocs.yml:7: nav lists index.md twice",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Check problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if probs[0].Missing != "docs/gone.md" || probs[9].Missing != "docs/concepts/b.md" || probs[1].Missing != "" {
		t.Errorf("Missing fields = %q, %q, %q", probs[0].Missing, probs[9].Missing, probs[1].Missing)
	}
}

// TestDocsDirLinks: mkdocs serves docs_dir alone, so a page in it links only inside it or to
// a URL; pages outside it may link anywhere in the repository.
func TestDocsDirLinks(t *testing.T) {
	t.Parallel()
	nav := file("docs_dir: site\nnav: [index.md, guides/a.md]\n")
	for _, tt := range []struct {
		page, link string
		ok         bool
	}{
		{"site/index.md", "guides/a.md#a", true},
		{"site/guides/a.md", "../index.md", true},
		{"site/guides/a.md", "../img/", true},
		{"site/index.md", "https://github.com/trueup-dev/trueup/blob/main/README.md", true},
		{"site/index.md", "../README.md", false},
		{"site/guides/a.md", "../../README.md#a", false},
		{"site/index.md", "/README.md", false},
		{"site/index.md", "../examples/", false},
		{"README.md", "site/index.md", true},
		{"deploy/README.md", "../examples/", true},
	} {
		fsys := fstest.MapFS{
			"README.md":        file("# A\n"),
			"deploy/README.md": file("# D\n"),
			"examples/x.yaml":  file("x"),
			"site/index.md":    file("# I\n"),
			"site/img/a.png":   file("png"),
			"site/guides/a.md": file("# A\n"),
			"mkdocs.yml":       nav,
		}
		fsys[tt.page] = file("# A\n[x](" + tt.link + ")\n")
		probs, err := Check(fsys)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(probs) == 0; got != tt.ok {
			t.Errorf("%s linking %s: problems %v, want ok=%v", tt.page, tt.link, probs, tt.ok)
		}
		if !tt.ok && (len(probs) != 1 || !strings.Contains(probs[0].Msg, "leaves site/, which the site serves alone")) {
			t.Errorf("%s linking %s: problems %v, want one saying it leaves site/", tt.page, tt.link, probs)
		}
	}
}

func TestMarkdownFilesChecked(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{
		"README.md": true, "docs/a.md": true, "examples/terraform/README.md": true,
		"internal/manifest/testdata/valid/README.md": false, "testdata/a.md": false,
		"web/node_modules/x/README.md": false, "docs/a.png": false, "docs/a.mdx": false,
	} {
		if got := Checked(p); got != want {
			t.Errorf("Checked(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestCheckReadmeLength(t *testing.T) {
	t.Parallel()
	nav := file("nav: [index.md]\n")
	page := file("# Home\n")
	for _, tt := range []struct {
		lines int
		want  []string
	}{
		{MaxReadmeLines, nil},
		{MaxReadmeLines + 1, []string{"README.md: 201 lines, more than 200"}},
	} {
		fsys := fstest.MapFS{
			"README.md":     file(strings.Repeat("line\n", tt.lines)),
			"docs/index.md": page,
			"mkdocs.yml":    nav,
		}
		probs, err := Check(fsys)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range probs {
			got = append(got, p.String())
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%d lines: %q, want %q", tt.lines, got, tt.want)
		}
	}
}

func TestCheckWithoutMkdocs(t *testing.T) {
	t.Parallel()
	probs, err := Check(fstest.MapFS{"README.md": file("# x\n")})
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) != 1 || probs[0].String() != "mkdocs.yml: missing: the site's nav lists every page of docs/" {
		t.Errorf("problems = %v", probs)
	}
}

func TestCountLines(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]int{"": 0, "a": 1, "a\n": 1, "a\nb": 2, "a\n\n": 2} {
		if got := countLines(s); got != want {
			t.Errorf("countLines(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestRepositoryDocs checks every Markdown file Git tracks in this repository (but test
// inputs) and mkdocs.yml (make docs-check runs it alone).
func TestRepositoryDocs(t *testing.T) {
	t.Parallel()
	root := repositoryRoot(t)
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--", "*.md").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var pages []string
	for _, p := range strings.Split(string(out), "\x00") {
		if Checked(p) {
			pages = append(pages, p)
		}
	}
	if !slices.Contains(pages, "README.md") || !slices.Contains(pages, "docs/index.md") {
		t.Fatalf("git ls-files lists %d pages, not README.md and docs/index.md", len(pages))
	}
	probs, err := CheckFiles(os.DirFS(root), pages)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Error(p)
	}
}

// repositoryRoot is the nearest folder above the test's working directory holding go.mod.
func repositoryRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's working directory")
		}
		dir = parent
	}
}
