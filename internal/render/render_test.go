package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/sources"
)

const typeDoc = `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Database}
spec:
  group: example.com
  versions:
    - name: v1
      schema:
        type: object
        required: [size]
        properties:
          size: {type: integer, maximum: 500}
          tier: {type: string}
  action: {name: noop}
`

// fleet is a base with two overlays, prod and staging, each with a name prefix and a patch.
func fleet() map[string]string {
	return map[string]string{
		"deploy/base/kustomization.yaml": "resources: [db.yaml]\nconfigurations: [dependson.yaml]\n",
		// Types are a kustomization of their own: a name prefix would rename them.
		"deploy/types/kustomization.yaml": "resources: [types.yaml]\n",
		// dependsOn names follow namePrefix/nameSuffix: kustomize is told the field holds names.
		"deploy/base/dependson.yaml": "nameReference:\n  - kind: Database\n    fieldSpecs: [{path: dependsOn/name, kind: Database}]\n",
		"deploy/types/types.yaml":    typeDoc,
		"deploy/base/db.yaml": `apiVersion: example.com/v1
kind: Database
metadata: {name: orders, namespace: shop}
dependsOn: [{kind: Database, name: users}]
spec: {size: 10, tier: small}
---
apiVersion: example.com/v1
kind: Database
metadata: {name: users, namespace: shop}
spec: {size: 5, tier: small}
`,
		"deploy/overlays/prod/kustomization.yaml": `resources: [../../base]
namePrefix: prod-
patches:
  - path: size.yaml
  - target: {kind: Database, name: users}
    patch: |-
      - op: replace
        path: /spec/tier
        value: large
`,
		"deploy/overlays/prod/size.yaml": "apiVersion: example.com/v1\nkind: Database\nmetadata: {name: orders, namespace: shop}\nspec: {size: 100}\n",
		"deploy/overlays/staging/kustomization.yaml": `resources: [../../base]
namePrefix: staging-
patches:
  - path: size.yaml
`,
		"deploy/overlays/staging/size.yaml": "apiVersion: example.com/v1\nkind: Database\nmetadata: {name: orders, namespace: shop}\nspec: {size: 20}\n",
		"deploy/README.md":                  "not a manifest\n",
	}
}

func snapshot(m map[string]string) []sources.File {
	var out []sources.File
	for p, d := range m {
		out = append(out, sources.File{Path: p, Hash: p, Data: []byte(d)})
	}
	slices.SortFunc(out, func(a, b sources.File) int { return strings.Compare(a.Path, b.Path) })
	return out
}

func TestKustomizeOverlays(t *testing.T) {
	t.Parallel()
	out, err := Kustomize(context.Background(), snapshot(fleet()), Options{Root: "deploy", Paths: []string{"types", "overlays/*"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range out {
		got = append(got, f.Path+" by "+f.RenderedBy)
		if strings.Contains(string(f.Data), "config.kubernetes.io/origin") {
			t.Errorf("%s keeps the origin annotation:\n%s", f.Path, f.Data)
		}
	}
	want := []string{
		"deploy/base/db.yaml by deploy/overlays/prod/kustomization.yaml",
		"deploy/base/db.yaml by deploy/overlays/staging/kustomization.yaml",
		"deploy/types/types.yaml by deploy/types/kustomization.yaml",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("files:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	set, err := manifest.NewLoader().Load(out, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	specs := map[string]string{}
	for _, r := range set.Resources {
		specs[r.Name] = string(r.Spec)
		if r.Name == "prod-orders" && (len(r.DependsOn) != 1 || r.DependsOn[0].Target.Name != "prod-users") {
			t.Errorf("prod-orders dependsOn = %+v, want prod-users (renamed by the nameReference configuration)", r.DependsOn)
		}
	}
	wantSpecs := map[string]string{
		"prod-orders": `{"size":100,"tier":"small"}`, "prod-users": `{"size":5,"tier":"large"}`,
		"staging-orders": `{"size":20,"tier":"small"}`, "staging-users": `{"size":5,"tier":"small"}`,
	}
	if len(set.Resources) != len(wantSpecs) {
		t.Errorf("%d resources, want %d", len(set.Resources), len(wantSpecs))
	}
	for n, s := range wantSpecs {
		if specs[n] != s {
			t.Errorf("%s spec = %s, want %s", n, specs[n], s)
		}
	}
}

// A problem in a rendered document names the origin file and the kustomization.
func TestKustomizeOriginInErrors(t *testing.T) {
	t.Parallel()
	files := fleet()
	files["deploy/overlays/prod/size.yaml"] = strings.Replace(files["deploy/overlays/prod/size.yaml"], "size: 100", "size: 9000", 1)
	out, err := Kustomize(context.Background(), snapshot(files), Options{Root: "deploy", Paths: []string{"types", "overlays/prod"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = manifest.NewLoader().Load(out, manifest.Options{})
	if err == nil || !strings.Contains(err.Error(), "deploy/base/db.yaml (rendered by deploy/overlays/prod/kustomization.yaml): spec.size: ") {
		t.Fatalf("error = %v, want one at deploy/base/db.yaml (rendered by deploy/overlays/prod/kustomization.yaml)", err)
	}
}

func TestKustomizeRefusals(t *testing.T) {
	// Not parallel: PATH and http.DefaultTransport are the process's.
	marker := filepath.Join(t.TempDir(), "exec")
	bin := t.TempDir()
	for _, name := range []string{"git", "helm", "sh", "kustomize"} {
		script := "#!/bin/sh\necho \"$0\" >> " + marker + "\nexit 1\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"))
	}))
	defer srv.Close()
	orig := http.DefaultTransport
	http.DefaultTransport = roundTripper(func(r *http.Request) (*http.Response, error) {
		requests.Add(1)
		return orig.RoundTrip(r)
	})
	t.Cleanup(func() { http.DefaultTransport = orig })

	const k = "deploy/overlays/x/kustomization.yaml"
	encrypted := "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {a: ENC[AES256_GCM,data:xx,type:str]}\nsops:\n  version: 3.8.1\n"
	cases := []struct {
		name  string
		kust  string
		extra map[string]string
		want  string
	}{
		{"remote git base", "resources:\n- github.com/example/nope//base?ref=v1\n", nil,
			k + `: resources[0]: "github.com/example/nope//base?ref=v1" is a remote base; render: kustomize reads only the revision's files`},
		{"remote host path", "resources: [github.com/example/nope/base]\n", nil, `resources[0]: "github.com/example/nope/base" is a remote base`},
		{"https resource", "resources: [" + srv.URL + "/x.yaml]\n", nil, `resources[0]: "` + srv.URL + `/x.yaml" is a remote base`},
		{"git ssh", "resources:\n- git@github.com:example/nope.git\n", nil, "is a remote base"},
		{"https patch", "resources: [../../base]\npatchesStrategicMerge: [" + srv.URL + "/p.yaml]\n", nil, `patchesStrategicMerge[0]: "` + srv.URL + `/p.yaml" is a remote base`},
		{"https component", "components: [" + srv.URL + "/c]\n", nil, "components[0]"},
		{"escape", "resources: [../../../outside]\n", nil, `resources[0]: "../../../outside" leads out of the source's path "deploy"`},
		{"absolute", "resources: [/etc/passwd]\n", nil, `resources[0]: "/etc/passwd" is an absolute path`},
		{"missing", "resources: [../../nothere]\n", nil, `resources[0]: "../../nothere" does not exist in the revision`},
		{"missing patch", "resources: [../../base]\npatches: [{path: missing.yaml}]\n", nil, `patches[0].path: "missing.yaml" does not exist in the revision`},
		{"helm", "helmCharts: [{name: redis, repo: https://charts.example.com}]\n", nil, "helmCharts: Helm charts are not rendered"},
		{"exec generator", "generators: [gen.yaml]\n", map[string]string{"deploy/overlays/x/gen.yaml": "apiVersion: example.com/v1\nkind: Gen\nmetadata:\n  name: g\n  annotations:\n    config.kubernetes.io/function: |\n      exec: {path: ./gen.sh}\n"},
			"generators[0]: Gen is a KRM function (config.kubernetes.io/function)"},
		{"container transformer", "transformers: [t.yaml]\n", map[string]string{"deploy/overlays/x/t.yaml": "apiVersion: example.com/v1\nkind: T\nmetadata:\n  name: t\n  annotations:\n    config.kubernetes.io/function: |\n      container: {image: evil}\n"},
			"transformers[0]: T is a KRM function"},
		{"go plugin", "transformers: [t.yaml]\n", map[string]string{"deploy/overlays/x/t.yaml": "apiVersion: someteam.example.com/v1\nkind: ChartInflator\nmetadata: {name: t}\n"},
			`transformers[0]: ChartInflator (apiVersion "someteam.example.com/v1") is not a builtin plugin`},
		{"inline exec", "generators:\n- |\n  apiVersion: v1\n  kind: G\n  metadata:\n    name: g\n    annotations:\n      config.kubernetes.io/function: 'exec: {path: /bin/sh}'\n", nil, "generators[0]: G is a KRM function"},
		{"encrypted", "resources: [secret.yaml]\n", map[string]string{"deploy/overlays/x/secret.yaml": encrypted}, "resources[0]: deploy/overlays/x/secret.yaml is SOPS-encrypted"},
		{"configmap from url", "configMapGenerator: [{name: c, files: [" + srv.URL + "/f]}]\n", nil, "configMapGenerator[0].files[0]"},
		{"openapi", "resources: [../../base]\nopenapi: {path: schema.json}\n", map[string]string{"deploy/overlays/x/schema.json": "{}"}, "openapi: a custom OpenAPI schema is not supported"},
		{"cycle", "resources: [../y]\n", map[string]string{"deploy/overlays/y/kustomization.yaml": "resources: [../x]\n"}, "form a cycle"},
		{"unknown field", "resourcez: [a.yaml]\n", nil, k + `: json: unknown field "resourcez"`},
		{"broken resource yaml", "resources: [broken.yaml]\n", map[string]string{"deploy/overlays/x/broken.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [\n"}, k + ": kustomize: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := fleet()
			files[k] = tc.kust
			for p, d := range tc.extra {
				files[p] = d
			}
			_, err := Kustomize(context.Background(), snapshot(files), Options{Root: "deploy", Paths: []string{"overlays/x"}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v\nwant it to contain %s", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "deploy/overlays/") {
				t.Errorf("error %q does not start with the kustomization", err)
			}
			if strings.Contains(err.Error(), srcDir+"/") {
				t.Errorf("error %q shows the in-memory folder", err)
			}
		})
	}
	if _, err := os.Stat(marker); err == nil {
		data, _ := os.ReadFile(marker)
		t.Errorf("a program was run: %s", data)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d HTTP requests were made", n)
	}

	// The harness sees what kustomize does without the pre-check: it runs git.
	fs := filesys.MakeFsInMemory()
	_ = fs.WriteFile("/src/kustomization.yaml", []byte("resources:\n- github.com/example/nope//base?ref=v1\n"))
	if _, err := krusty.MakeKustomizer(options()).Run(fs, "/src"); err == nil {
		t.Fatal("kustomize built a remote base without git")
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the exec probe did not see kustomize run git: %v", err)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestKustomizeLimits(t *testing.T) {
	t.Parallel()
	files := fleet()
	_, err := Kustomize(context.Background(), snapshot(files), Options{Root: "deploy", Paths: []string{"overlays/prod"}, MaxResources: 1})
	if err == nil || !strings.Contains(err.Error(), "deploy/overlays/prod/kustomization.yaml: about 2 resources, more than the limit of 1 per kustomization") {
		t.Fatalf("error = %v", err)
	}
	_, err = Kustomize(context.Background(), snapshot(files), Options{Root: "deploy", Paths: []string{"nothing/*"}})
	if err == nil || !strings.Contains(err.Error(), `"nothing/*" matches no folder with a kustomization`) {
		t.Fatalf("error = %v", err)
	}
	_, err = Kustomize(context.Background(), snapshot(files), Options{Root: "deploy", Paths: []string{"base/.."}})
	if err == nil || !strings.Contains(err.Error(), "deploy: no kustomization.yaml in the folder") {
		t.Fatalf("error = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Kustomize(ctx, snapshot(files), Options{Root: "deploy", Paths: []string{"overlays/*"}})
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("error = %v, want the cancellation", err)
	}
}

// A revision renders again only the kustomizations whose files changed.
func TestKustomizeCache(t *testing.T) {
	t.Parallel()
	files := fleet()
	opt := Options{Root: "deploy", Paths: []string{"overlays/*"}, Cache: NewCache()}
	first, err := Kustomize(context.Background(), snapshot(files), opt)
	if err != nil {
		t.Fatal(err)
	}
	files["deploy/overlays/staging/size.yaml"] = strings.Replace(files["deploy/overlays/staging/size.yaml"], "size: 20", "size: 25", 1)
	second, err := Kustomize(context.Background(), snapshot(files), opt)
	if err != nil {
		t.Fatal(err)
	}
	if first[0].RenderedBy != "deploy/overlays/prod/kustomization.yaml" || &first[0].Data[0] != &second[0].Data[0] {
		t.Error("the unchanged prod overlay was rendered again")
	}
	if !strings.Contains(string(second[1].Data), `"size":25`) || strings.Contains(string(first[1].Data), `"size":25`) {
		t.Errorf("staging rendered %s then %s", first[1].Data, second[1].Data)
	}
	// The base is read by both: a change there renders both again.
	files["deploy/base/db.yaml"] = strings.Replace(files["deploy/base/db.yaml"], "tier: small}", "tier: medium}", 1)
	third, err := Kustomize(context.Background(), snapshot(files), opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range third {
		if !strings.Contains(string(f.Data), `"tier":"medium"`) {
			t.Errorf("%s by %s not rendered again:\n%s", f.Path, f.RenderedBy, f.Data)
		}
	}
}

// Every document of a file a kustomization lists keeps its origin, whatever its shape: JSON,
// a List, empty documents and comments, a mapping indented as a whole (which the marks in
// the text cannot follow), and a ConfigMap a base generates names the base.
func TestKustomizeOriginOfEveryShape(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"base/kustomization.yaml": "resources: [json.yaml, list.yaml, docs.yaml, indented.yaml]\n" +
			"configMapGenerator: [{name: settings, literals: [a=1]}]\n",
		"base/json.yaml": `{"apiVersion": "example.com/v1", "kind": "Database", "metadata": {"name": "j"}, "spec": {"size": 1}}`,
		"base/list.yaml": "apiVersion: v1\nkind: DatabaseList\nitems:\n  - {apiVersion: example.com/v1, kind: Database, metadata: {name: l1}, spec: {size: 2}}\n" +
			"  - {apiVersion: example.com/v1, kind: Database, metadata: {name: l2}, spec: {size: 3}}\n",
		"base/docs.yaml":             "---\n# only a comment\n---\napiVersion: example.com/v1\nkind: Database\nmetadata:\n  name: d\nspec:\n  note: |+\n    kept\n\n---\n",
		"base/indented.yaml":         "  apiVersion: example.com/v1\n  kind: Database\n  metadata: {name: i}\n  spec: {size: 4}\n",
		"overlay/kustomization.yaml": "resources: [../base, db.yaml]\nnamePrefix: o-\n",
		"overlay/db.yaml":            "apiVersion: example.com/v1\nkind: Database\nmetadata: {name: o, annotations: {keep: \"yes\"}}\nspec: {size: 5}\n",
	}
	out, err := Kustomize(context.Background(), snapshot(files), Options{Paths: []string{"overlay"}})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string][]string{}
	for _, f := range out {
		if f.RenderedBy != "overlay/kustomization.yaml" {
			t.Errorf("%s rendered by %s", f.Path, f.RenderedBy)
		}
		if strings.Contains(string(f.Data), "trueup.dev/origin") {
			t.Errorf("%s keeps the origin mark:\n%s", f.Path, f.Data)
		}
		// The output is one JSON document a line, between --- lines.
		for _, doc := range strings.Split(string(f.Data), "\n") {
			if doc == "---" || doc == "" {
				continue
			}
			var r struct {
				Metadata struct{ Name string } `json:"metadata"`
			}
			if err := json.Unmarshal([]byte(doc), &r); err != nil {
				t.Fatalf("%s: %v:\n%s", f.Path, err, f.Data)
			}
			names[f.Path] = append(names[f.Path], r.Metadata.Name)
		}
	}
	want := map[string][]string{
		"base/json.yaml": {"o-j"}, "base/list.yaml": {"o-l1", "o-l2"}, "base/docs.yaml": {"o-d"},
		"base/indented.yaml": {"o-i"}, "overlay/db.yaml": {"o-o"}, "base/kustomization.yaml": {"o-settings-" + settingsHash(t)},
	}
	for p, w := range want {
		if !slices.Equal(names[p], w) {
			t.Errorf("%s: %v, want %v (all: %v)", p, names[p], w, names)
		}
	}
	for _, f := range out {
		switch f.Path {
		case "overlay/db.yaml":
			if !strings.Contains(string(f.Data), `"annotations":{"keep":"yes"}`) {
				t.Errorf("the annotations of %s are lost:\n%s", f.Path, f.Data)
			}
		case "base/docs.yaml":
			if !strings.Contains(string(f.Data), `"note":"kept\n\n"`) {
				t.Errorf("the kept block scalar of %s changed:\n%s", f.Path, f.Data)
			}
		}
	}
}

// settingsHash is the name suffix kustomize gives the generated ConfigMap settings (a=1)
// when nothing marks it.
func settingsHash(t *testing.T) string {
	fs := filesys.MakeFsInMemory()
	if err := fs.WriteFile("/k/kustomization.yaml", []byte("configMapGenerator: [{name: settings, literals: [a=1]}]\n")); err != nil {
		t.Fatal(err)
	}
	m, err := krusty.MakeKustomizer(options()).Run(fs, "/k")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(m.Resources()[0].GetName(), "settings-")
}

// A render whose context is done starts no build, and its error is not a problem of the
// revision: the sync is retried rather than the revision rejected.
func TestKustomizeInterrupted(t *testing.T) {
	var files []sources.File
	for i := range 20 {
		d := fmt.Sprintf("o%d", i)
		files = append(files,
			sources.File{Path: d + "/kustomization.yaml", Data: []byte("namePrefix: p-\nresources: [db.yaml]\n")},
			sources.File{Path: d + "/db.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: db}\n")})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := runs.Load()
	_, err := Kustomize(ctx, files, Options{Paths: []string{"*"}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want the cancellation", err)
	}
	if _, ok := Problems(err); ok {
		t.Errorf("the cancellation is a problem of the revision: %v", err)
	}
	if n := runs.Load() - before; n != 0 {
		t.Errorf("%d builds started after the cancellation", n)
	}
	// A kustomize failure still is one.
	files = []sources.File{{Path: "kustomization.yaml", Data: []byte("resources: [db.yaml]\n")}, {Path: "db.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [\n")}}
	if _, err := Kustomize(context.Background(), files, Options{}); err == nil {
		t.Fatal("a broken file rendered")
	} else if _, ok := Problems(err); !ok {
		t.Errorf("a kustomize failure is not a problem of the revision: %v", err)
	}
}

// kustomize's messages show paths of the revision, not of the in-memory folder, also for a
// source whose path is the repository's root.
func TestKustomizeErrorsAtRoot(t *testing.T) {
	t.Parallel()
	for msg, want := range map[string]string{
		"must build at directory: '/src': file is not directory": "must build at directory: '.': file is not directory",
		"'/src/.' is not a kustomization":                        "'.' is not a kustomization",
		"/src: no kustomization":                                 ".: no kustomization",
		"at /src":                                                "at .",
		"from '/src/db.yaml' and /src/./p.yaml":                  "from 'db.yaml' and ./p.yaml",
		"/srcs/x and a/src":                                      "/srcs/x and a/src",
	} {
		if got := stripSrc(msg); got != want {
			t.Errorf("stripSrc(%q) = %q, want %q", msg, got, want)
		}
	}
	for _, k := range []string{
		"resources: [db.yaml]\npatches: [{path: p.yaml}]\n",
		"resources: [db.yaml]\ncomponents: [db.yaml]\n",
		"resources: [db.yaml, db.yaml]\n",
		"resources: [db.yaml]\ncrds: [db.yaml]\n",
	} {
		files := []sources.File{{Path: "kustomization.yaml", Data: []byte(k)}, {Path: "db.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: db}\n")}, {Path: "p.yaml", Data: []byte("x")}}
		for _, root := range []string{"", ".", "/"} {
			_, err := Kustomize(context.Background(), files, Options{Root: root})
			if err == nil || strings.Contains(err.Error(), srcDir) {
				t.Errorf("root %q, %q: error %v", root, k, err)
			}
		}
	}
}
