package validate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/sources/gitsource"
)

func TestNodeLine(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "t.yaml")
	doc := "kind: A\n---\nkind: ResourceType\nspec:\n  versions:\n    - name: v1\n      schema:\n        properties: {}\n    - name: v2\n"
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		docLine int
		keys    []any
		want    int
	}{
		{"key of the second document", 3, []any{"spec", "versions", 0, "schema", "properties"}, 8},
		{"second item", 3, []any{"spec", "versions", 1}, 9},
		{"index beyond the list", 3, []any{"spec", "versions", 2}, 0},
		{"absent key", 3, []any{"metadata"}, 0},
		{"no document starts there", 10, []any{"spec"}, 0},
	} {
		if got := nodeLine(file, tc.docLine, tc.keys...); got != tc.want {
			t.Errorf("%s: line %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestRepositoryRoot(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	dir := filepath.Join(repo, "deploy", "manifests")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Sources: []config.Source{{Name: "infra", Git: &gitsource.Spec{Path: "deploy/manifests"}}}}
	for _, tc := range []struct {
		name, dir, source, want string
	}{
		{"the source's path taken off", dir, "infra", repo},
		{"another source, no .git above", dir, "other", ""},
	} {
		if got := repositoryRoot(tc.dir, cfg, tc.source); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := repositoryRoot(dir, cfg, "other"); got != repo {
		t.Errorf("nearest .git: %q, want %q", got, repo)
	}
}
