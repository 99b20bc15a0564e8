package render

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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

// httpTrap is a server that serves a manifest and counts the requests it gets.
func httpTrap(t testing.TB) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: db}\ndata: {pwned: yes}\n"))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
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

// A patchesStrategicMerge entry is a patch in place only when it is a mapping with a kind
// or an apiVersion; kustomize loads any other entry as a path, or a URL.
func TestKustomizeStrategicMergeEntries(t *testing.T) {
	srv, hits := httpTrap(t)
	for _, entry := range []string{srv.URL + "/x?a=: b", srv.URL + "/x", "HTTP://" + strings.TrimPrefix(srv.URL, "http://") + "/x?a=: b"} {
		files := []sources.File{
			{Path: "kustomization.yaml", Data: []byte("resources: [db.yaml]\npatchesStrategicMerge:\n- '" + entry + "'\n")},
			{Path: "db.yaml", Data: []byte(cmDoc)},
		}
		_, err := Kustomize(context.Background(), files, Options{Timeout: 20 * time.Second})
		if err == nil || !strings.Contains(err.Error(), "patchesStrategicMerge[0]") || !strings.Contains(err.Error(), "is a remote base") {
			t.Errorf("%s: error = %v, want the entry refused", entry, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d HTTP requests were made", n)
	}
	// A patch in place still applies.
	files := []sources.File{
		{Path: "kustomization.yaml", Data: []byte("resources: [db.yaml]\npatchesStrategicMerge:\n- |\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: db}\n  data: {a: b}\n")},
		{Path: "db.yaml", Data: []byte(cmDoc)},
	}
	out, err := Kustomize(context.Background(), files, Options{Timeout: 20 * time.Second})
	if err != nil || len(out) != 1 || !strings.Contains(string(out[0].Data), "a: b") {
		t.Fatalf("out = %v, err = %v", out, err)
	}
}
