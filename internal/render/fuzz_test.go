package render

import (
	"context"
	"net/http"
	"path"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/sources"
)

// FuzzPrecheck feeds hostile kustomizations and file and folder names to the pre-check: it
// never panics, it lets only files of the revision be read, and what it lets through builds
// without an error that shows the in-memory folder, without running git and without an
// HTTP request (to a trap server, whose address TRAP in the kustomization stands for, or
// anywhere else).
func FuzzPrecheck(f *testing.F) {
	for _, seed := range []struct{ kust, name string }{
		{"resources: [../../base]\nnamePrefix: p-\n", "sub"},
		{"resources:\n- github.com/x/y//base?ref=v1\n", "sub"},
		{"resources: [TRAP/x.yaml]\n", "sub"},
		{"resources: [/etc/passwd]\n", "sub"},
		{"resources: [../../../../x]\n", "sub"},
		{"generators:\n- |\n  apiVersion: v1\n  kind: G\n  metadata: {name: g, annotations: {config.kubernetes.io/function: 'exec: {path: /bin/sh}'}}\n", "sub"},
		{"helmCharts: [{name: x}]\n", "sub"},
		{"configMapGenerator: [{name: c, files: [k=../../base/db.yaml]}]\n", "sub"},
		{"patchesStrategicMerge: [p.yaml]\n", "sub"},
		{"patchesStrategicMerge: ['TRAP/x?a=: b']\n", "sub"},
		{"components: [.]\n", "sub"},
		{"resources: [github.com/evil/repo]\n", "github.com/evil/repo"},
		{"resources: [GitHub.com:evil/repo]\n", "GitHub.com:evil/repo"},
		{"resources: [a@evil.example:org/repo]\n", "a@evil.example:org/repo"},
		{"resources: [git::x@evil.example/org/repo.git]\n", "git::x@evil.example/org/repo.git"},
		{"resources: [u@dev.example/org/p/_git/repo]\n", "u@dev.example/org/p/_git/repo"},
		{"resources: [sub]\ntransformers: [sub/t.yaml]\n", "sub"},
		{"transformers:\n- |\n  apiVersion: builtin\n  kind: PatchTransformer\n  metadata: {name: p}\n  path: TRAP/p.yaml\n", "sub"},
		{"generators:\n- |\n  apiVersion: builtin\n  kind: ConfigMapGenerator\n  metadata: {name: c}\n  files: [TRAP/f]\n", "sub"},
	} {
		f.Add(seed.kust, seed.name)
	}
	ran := gitTrap(f)
	srv, hits := httpTrap(f)
	// Requests anywhere else are counted too.
	var requests atomic.Int32
	orig := http.DefaultTransport
	http.DefaultTransport = roundTripper(func(r *http.Request) (*http.Response, error) {
		requests.Add(1)
		return orig.RoundTrip(r)
	})
	f.Cleanup(func() { http.DefaultTransport = orig })
	base := []sources.File{
		{Path: "base/kustomization.yaml", Data: []byte("resources: [db.yaml]\n")},
		{Path: "base/db.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: db}\n")},
	}
	f.Fuzz(func(t *testing.T, kust, name string) {
		kust = strings.ReplaceAll(kust, "TRAP", srv.URL)
		files := append([]sources.File{{Path: "overlays/x/kustomization.yaml", Data: []byte(kust)}}, base...)
		// A folder of that name with a kustomization, and a builtin plugin configuration in
		// it, when the name is a path a source can hold.
		if dir := path.Join("overlays/x", name); name != "" && path.Clean(name) == name && !path.IsAbs(name) && !strings.HasPrefix(name, "..") && !strings.ContainsAny(name, "\x00\n") {
			files = append(files,
				sources.File{Path: dir + "/kustomization.yaml", Data: []byte("resources: [db.yaml]\n")},
				sources.File{Path: dir + "/db.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sub}\n")},
				sources.File{Path: dir + "/t.yaml", Data: []byte("apiVersion: builtin\nkind: LabelTransformer\nmetadata: {name: l}\nlabels: {a: b}\n")},
			)
		}
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
		if s := ran(); s != "" {
			t.Fatalf("git was run for %q, %q: %s", kust, name, s)
		}
		if n := hits.Load() + requests.Load(); n != 0 {
			t.Fatalf("%d HTTP requests for %q, %q", n, kust, name)
		}
		if err != nil && strings.Contains(err.Error(), srcDir+"/") {
			t.Fatalf("error shows the in-memory folder: %v", err)
		}
	})
}
