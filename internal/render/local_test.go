package render

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestKustomizePanicIsAnError: inputs on which kustomize panics (build annotations it cannot
// read back, annotations that are not a mapping) fail the render with an error at the
// kustomization, which the syncer reports as the revision's problem, after one build (a
// panic is not built again otherwise); the process lives on.
func TestKustomizePanicIsAnError(t *testing.T) {
	// Not parallel: no other test builds while this one counts its builds.
	for _, doc := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, annotations: [x]}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, annotations: {internal.config.kubernetes.io/previousNames: [x]}}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, annotations: {internal.config.kubernetes.io/previousKinds: 'a,b', internal.config.kubernetes.io/previousNames: a}}\n",
	} {
		// The file in the kustomization's folder, and in a plain base (inlined).
		for _, kust := range []string{"resources: [a.yaml]\nnamePrefix: p-\n", "resources: [../b]\nnamePrefix: p-\n"} {
			files := map[string]string{"k/kustomization.yaml": kust, "k/a.yaml": doc, "b/kustomization.yaml": "resources: [a.yaml]\n", "b/a.yaml": doc}
			built := runs.Load()
			_, err := Kustomize(context.Background(), snapshot(files), Options{Paths: []string{"k"}})
			problems, ok := Problems(err)
			if !ok || len(problems) != 1 || problems[0].File != "k/kustomization.yaml" || !strings.Contains(problems[0].Msg, "a panic in kustomize") {
				t.Errorf("%q over %q: %v, want a problem of k/kustomization.yaml", kust, doc, err)
			}
			if n := runs.Load() - built; n != 1 {
				t.Errorf("%q over %q: %d builds, want 1", kust, doc, n)
			}
		}
	}
}

// TestLocalConfigDropped: the render leaves out what kustomize does, the resources annotated
// config.kubernetes.io/local-config with any value but "false"; the other resources come
// back in their order.
func TestLocalConfigDropped(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"k/kustomization.yaml": "resources: [a.yaml]\n",
		"k/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, annotations: {config.kubernetes.io/local-config: 'true'}}\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, annotations: {config.kubernetes.io/local-config: 'false'}}\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d, annotations: {config.kubernetes.io/local-config: ''}}\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: e, annotations: {other: x}}\n",
	}
	out, err := Kustomize(context.Background(), snapshot(files), Options{Paths: []string{"k"}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range out {
		for _, doc := range strings.Split(strings.TrimSuffix(string(f.Data), "\n"), "\n---\n") {
			var r struct {
				Metadata struct{ Name string }
			}
			if err := json.Unmarshal([]byte(doc), &r); err != nil {
				t.Fatal(err)
			}
			names = append(names, r.Metadata.Name)
		}
	}
	if got := strings.Join(names, ","); got != "a,c,e" {
		t.Errorf("rendered %s, want a,c,e", got)
	}
}

// TestLocalConfigSameAsKustomize: what the render keeps of local-config resources, and when
// it fails, is what a plain krusty build keeps and when it fails (its origin marks and
// inlining aside): ids made twice by patches, names and kinds removed, null, boolean and
// tagged values, repeated keys, the managed-by label, the legacy sort. Where krusty panics
// (an id made twice, neither resource local), the render fails with an error.
func TestLocalConfigSameAsKustomize(t *testing.T) {
	t.Parallel()
	cm := func(name, meta string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + meta + "}\ndata: {x: '" + name + "'}\n"
	}
	local := ", annotations: {config.kubernetes.io/local-config: 'true'}"
	rename := "patches:\n- target: {name: b}\n  patch: |-\n    - {op: replace, path: /metadata/name, value: a}\n"
	for _, c := range []struct{ name, kust, a string }{
		{"an id made twice, the second local", rename, cm("a", "") + "---\n" + cm("b", local)},
		{"an id made twice, the first local", rename, cm("a", local) + "---\n" + cm("b", "")},
		{"an id made twice, both local", rename, cm("a", local) + "---\n" + cm("b", local) + "---\n" + cm("c", "")},
		{"an id made twice, neither local", rename, cm("a", "") + "---\n" + cm("b", "")},
		{"a local resource's name removed", "patches:\n- target: {name: b}\n  patch: |-\n    - {op: remove, path: /metadata/name}\n", cm("a", "") + "---\n" + cm("b", local)},
		{"a name removed", "patches:\n- target: {name: b}\n  patch: |-\n    - {op: remove, path: /metadata/name}\n", cm("a", "") + "---\n" + cm("b", "")},
		{"a kind removed", "patches:\n- target: {name: b}\n  patch: |-\n    - {op: remove, path: /kind}\n", cm("a", "") + "---\n" + cm("b", local)},
		{"null, ~ and empty values", "", cm("a", ", annotations: {config.kubernetes.io/local-config: null}") + "---\n" + cm("b", ", annotations: {config.kubernetes.io/local-config: ~}") + "---\n" + cm("c", ", annotations: {config.kubernetes.io/local-config: ''}") + "---\n" + cm("d", "")},
		{"boolean values", "", cm("a", ", annotations: {config.kubernetes.io/local-config: false}") + "---\n" + cm("b", ", annotations: {config.kubernetes.io/local-config: true}") + "---\n" + cm("c", ", annotations: {config.kubernetes.io/local-config: 'false'}")},
		{"a null-tagged key", "", cm("a", ", annotations: {!!null config.kubernetes.io/local-config: 'true'}") + "---\n" + cm("b", "")},
		{"a null-tagged false", "", cm("a", ", annotations: {config.kubernetes.io/local-config: !!null false}") + "---\n" + cm("b", "")},
		{"the managed-by label over a local resource with odd labels", "buildMetadata: [managedByLabel]\n", cm("a", ", labels: [x]"+local) + "---\n" + cm("b", "")},
		{"legacy sort with an id made twice", "sortOptions: {order: legacy}\n" + rename, cm("a", "") + "---\n" + cm("b", local)},
		{"a repeated annotation, true first", "", cm("a", ", annotations: {config.kubernetes.io/local-config: 'true', config.kubernetes.io/local-config: 'false'}") + "---\n" + cm("b", "")},
		{"a repeated annotation, false first", "", cm("a", ", annotations: {config.kubernetes.io/local-config: 'false', config.kubernetes.io/local-config: 'true'}") + "---\n" + cm("b", "")},
		{"annotations as a sequence", "", cm("a", ", annotations: [config.kubernetes.io/local-config, 'true']") + "---\n" + cm("b", "")},
		{"annotations twice", "", cm("a", ", annotations: {x: y}, annotations: {config.kubernetes.io/local-config: 'true'}") + "---\n" + cm("b", "")},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{"k/kustomization.yaml": "resources: [a.yaml]\n" + c.kust, "k/a.yaml": c.a}
			want, panicked := plainBuild(t, files)
			var got string
			out, err := Kustomize(context.Background(), snapshot(files), Options{Paths: []string{"k"}})
			if err != nil {
				got = "error"
			}
			for _, f := range out {
				for _, doc := range strings.Split(strings.TrimSuffix(string(f.Data), "\n"), "\n---\n") {
					var r struct {
						Metadata struct{ Name string }
						Data     struct{ X string }
					}
					if err := json.Unmarshal([]byte(doc), &r); err != nil {
						t.Fatal(err)
					}
					got += r.Metadata.Name + "=" + r.Data.X + " "
				}
			}
			if panicked {
				want = "error"
			}
			if got != want {
				t.Errorf("rendered %q, krusty builds %q", got, want)
			}
		})
	}
}

// plainBuild is what a plain krusty build of files' k makes of them, as
// TestLocalConfigSameAsKustomize compares it: "error", or name=data.x of each resource.
func plainBuild(t *testing.T, files map[string]string) (built string, panicked bool) {
	t.Helper()
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	m, err := krustyBuild(t, files, "k")
	if err != nil {
		return "error", false
	}
	for _, r := range m.Resources() {
		built += r.GetName() + "=" + r.GetDataMap()["x"] + " "
	}
	return built, false
}
