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

// The files of builtin plugin configurations (transformers, generators, validators) go
// through the same checks as the kustomization's own entries, and only the builtin plugins
// that read nothing else are run.
func TestKustomizeBuiltinPluginConfigs(t *testing.T) {
	srv, hits := httpTrap(t)
	ran := gitTrap(t)
	head := "apiVersion: builtin\nmetadata: {name: x}\n"
	cases := []struct {
		name, field, cfg, want string
	}{
		{"patch url", "transformers", head + "kind: PatchTransformer\npath: " + srv.URL + "/p.yaml\n", `transformers[0].path: "` + srv.URL + `/p.yaml" is a remote base`},
		{"patch url, field in capitals", "transformers", head + "kind: PatchTransformer\nPath: " + srv.URL + "/p.yaml\n", `transformers[0].path: "` + srv.URL + `/p.yaml" is a remote base`},
		{"patch twice", "transformers", head + "kind: PatchTransformer\npath: p.yaml\nPATH: " + srv.URL + "/p.yaml\n", "is given twice"},
		{"json6902 url", "transformers", head + "kind: PatchJson6902Transformer\ntarget: {kind: ConfigMap, name: db}\npath: " + srv.URL + "/p.json\n", "transformers[0].path"},
		{"strategic merge url", "transformers", head + "kind: PatchStrategicMergeTransformer\npaths: ['" + srv.URL + "/x?a=: b']\n", "transformers[0].paths[0]"},
		{"replacement url", "transformers", head + "kind: ReplacementTransformer\nreplacements: [{path: " + srv.URL + "/r.yaml}]\n", "transformers[0].replacements[0].path"},
		{"configmap url", "generators", head + "kind: ConfigMapGenerator\nfiles: [" + srv.URL + "/f]\n", "generators[0].files[0]"},
		{"configmap env url", "generators", head + "kind: ConfigMapGenerator\nenvs: [" + srv.URL + "/f]\n", "generators[0].envs[0]"},
		{"secret url", "generators", head + "kind: SecretGenerator\nfiles: [k=" + srv.URL + "/f]\n", "generators[0].files[0]"},
		{"configmap escape", "generators", head + "kind: ConfigMapGenerator\nfiles: [../../etc/passwd]\n", "leads out of the source's path"},
		{"unknown field", "transformers", head + "kind: PatchTransformer\npatch: '{}'\nfetch: " + srv.URL + "\n", `unknown field "fetch"`},
		{"helm", "generators", head + "kind: HelmChartInflationGenerator\nname: minecraft\nrepo: " + srv.URL + "\n", `the builtin plugin "HelmChartInflationGenerator" is not supported`},
		{"iam", "generators", head + "kind: IAMPolicyGenerator\ncloud: gke\n", `the builtin plugin "IAMPolicyGenerator" is not supported`},
		{"second document", "transformers", head + "kind: LabelTransformer\nlabels: {a: b}\n---\n" + head + "kind: PatchTransformer\npath: " + srv.URL + "/p.yaml\n", "is a remote base"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := []sources.File{
				{Path: "kustomization.yaml", Data: []byte("resources: [db.yaml]\n" + tc.field + ": [t.yaml]\n")},
				{Path: "db.yaml", Data: []byte(cmDoc)},
				{Path: "t.yaml", Data: []byte(tc.cfg)},
			}
			_, err := Kustomize(context.Background(), files, Options{Timeout: 20 * time.Second})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v\nwant it to contain %s", err, tc.want)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d HTTP requests were made", n)
	}
	if s := ran(); s != "" {
		t.Errorf("git was run: %s", s)
	}

	// The builtin plugins that read the revision's files still build.
	files := []sources.File{
		{Path: "kustomization.yaml", Data: []byte("resources: [db.yaml]\ntransformers: [t.yaml]\ngenerators: [g.yaml]\n")},
		{Path: "db.yaml", Data: []byte(cmDoc)},
		{Path: "t.yaml", Data: []byte(head + "kind: PatchTransformer\npath: p.yaml\n---\n" + head + "kind: LabelTransformer\nlabels: {team: a}\nfieldSpecs: [{path: metadata/labels, create: true}]\n")},
		{Path: "p.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: db}\ndata: {size: '3'}\n")},
		{Path: "g.yaml", Data: []byte("apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: gen}\nfiles: [p.yaml]\noptions: {disableNameSuffixHash: true}\n")},
	}
	out, err := Kustomize(context.Background(), files, Options{Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var all string
	for _, f := range out {
		all += string(f.Data)
	}
	for _, want := range []string{`"size":"3"`, `"team":"a"`, `"name":"gen"`} {
		if !strings.Contains(all, want) {
			t.Errorf("output lacks %q:\n%s", want, all)
		}
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
	if err != nil || len(out) != 1 || !strings.Contains(string(out[0].Data), `"a":"b"`) {
		t.Fatalf("out = %v, err = %v", out, err)
	}
}
