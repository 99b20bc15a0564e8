package render

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/sources"
)

// gitTrap puts a git that records being run first (and alone) on PATH; the returned func
// reports what it was run with.
func gitTrap(t testing.TB) func() string {
	bin, marker := t.TempDir(), filepath.Join(t.TempDir(), "ran")
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte("#!/bin/sh\necho \"$@\" >> "+marker+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	return func() string {
		ran, _ := os.ReadFile(marker)
		return string(ran)
	}
}

const cmDoc = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: db}\n"

// A folder or file whose name kustomize's URL parser reads as a repository is refused even
// though it exists: kustomize tries the parser before the file system, and clones.
func TestKustomizeRepoNamedEntries(t *testing.T) {
	ran := gitTrap(t)
	for _, entry := range []string{
		"github.com/evil/repo", "GitHub.com/evil/repo/sub", "github.com:evil/repo", "GITHUB.COM/evil/repo",
		"a@evil.example:org/repo", "x@evil.example/org/repo", "git::github.com/evil/repo",
		"u@dev.example/org/project/_git/repo", "x@evil.example/org/repo.git/sub",
	} {
		t.Run(entry, func(t *testing.T) {
			files := []sources.File{
				{Path: "kustomization.yaml", Data: []byte("resources:\n- " + entry + "\n")},
				{Path: entry + "/kustomization.yaml", Data: []byte("resources: [db.yaml]\n")},
				{Path: entry + "/db.yaml", Data: []byte(cmDoc)},
			}
			_, err := Kustomize(context.Background(), files, Options{Timeout: 20 * time.Second})
			if err == nil || !strings.Contains(err.Error(), "is a remote base") {
				t.Errorf("error = %v, want the entry refused as a remote base", err)
			}
		})
	}
	// A file that does not load as resources is tried as a base (FileLoader.New): a file
	// named like a repository is refused too.
	t.Run("file", func(t *testing.T) {
		files := []sources.File{
			{Path: "kustomization.yaml", Data: []byte("resources:\n- github.com/evil/repo\n")},
			{Path: "github.com/evil/repo", Data: []byte("not: [yaml\n")},
		}
		_, err := Kustomize(context.Background(), files, Options{Timeout: 20 * time.Second})
		if err == nil || !strings.Contains(err.Error(), "is a remote base") {
			t.Errorf("error = %v, want the entry refused as a remote base", err)
		}
	})
	if s := ran(); s != "" {
		t.Errorf("git was run: %s", s)
	}
}
