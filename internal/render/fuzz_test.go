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

// FuzzPrecheck feeds hostile kustomizations to the pre-check: it never panics, it lets only
// files of the revision be read, and what it lets through builds without an error that shows
// the in-memory folder, nor runs git.
func FuzzPrecheck(f *testing.F) {
	for _, seed := range []string{
		"resources: [../../base]\nnamePrefix: p-\n",
		"resources:\n- github.com/x/y//base?ref=v1\n",
		"resources: [https://127.0.0.1:1/x.yaml]\n",
		"resources: [/etc/passwd]\n",
		"resources: [../../../../x]\n",
		"generators:\n- |\n  apiVersion: v1\n  kind: G\n  metadata: {name: g, annotations: {config.kubernetes.io/function: 'exec: {path: /bin/sh}'}}\n",
		"helmCharts: [{name: x}]\n",
		"configMapGenerator: [{name: c, files: [k=../../base/db.yaml]}]\n",
		"patchesStrategicMerge: [p.yaml]\n",
		"components: [.]\n",
	} {
		f.Add(seed)
	}
	// A git that records being run: kustomize runs git for what it takes for a repository.
	bin, marker := f.TempDir(), filepath.Join(f.TempDir(), "ran")
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte("#!/bin/sh\necho \"$@\" >> "+marker+"\nexit 1\n"), 0o755); err != nil {
		f.Fatal(err)
	}
	f.Setenv("PATH", bin)
	base := []sources.File{
		{Path: "base/kustomization.yaml", Data: []byte("resources: [db.yaml]\n")},
		{Path: "base/db.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: db}\n")},
	}
	f.Fuzz(func(t *testing.T, kust string) {
		files := append([]sources.File{{Path: "overlays/x/kustomization.yaml", Data: []byte(kust)}}, base...)
		tr := newTree(files, "")
		c, err := tr.check("overlays/x")
		if err == nil {
			for p := range c.read {
				if _, ok := tr.files[p]; !ok || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "../") {
					t.Fatalf("the check lets %q be read", p)
				}
			}
		}
		if err == nil {
			_, err = Kustomize(context.Background(), files, Options{Paths: []string{"overlays/x"}, Timeout: 10 * time.Second})
		}
		if ran, err := os.ReadFile(marker); err == nil {
			t.Fatalf("git was run for %q: %s", kust, ran)
		}
		if err != nil && strings.Contains(err.Error(), srcDir+"/") {
			t.Fatalf("error shows the in-memory folder: %v", err)
		}
	})
}
