package render

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestKeepLocalConfigs: the hook reaches the factory krusty builds with (a kustomize version
// that lays its Kustomizer out otherwise fails here rather than building slower unnoticed):
// with it, a local-config resource stays in the output; without it, kustomize drops it.
func TestKeepLocalConfigs(t *testing.T) {
	t.Parallel()
	fs := filesys.MakeFsInMemory()
	for p, d := range map[string]string{
		"/k/kustomization.yaml": "resources: [cm.yaml]\n",
		"/k/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: local, annotations: {config.kubernetes.io/local-config: 'true'}}\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n",
	} {
		if err := fs.WriteFile(p, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	for _, keep := range []bool{false, true} {
		k := krusty.MakeKustomizer(options())
		if keep && !keepLocalConfigs(k) {
			t.Fatal("keepLocalConfigs found no resource factory in krusty's Kustomizer")
		}
		m, err := k.Run(fs, "/k")
		if err != nil {
			t.Fatal(err)
		}
		want := 1
		if keep {
			want = 2
		}
		if m.Size() != want {
			t.Errorf("keep %v: %d resources built, want %d", keep, m.Size(), want)
		}
	}
}

// TestKustomizePanicIsAnError: inputs on which kustomize panics (build annotations it cannot
// read back, annotations that are not a mapping) fail the render with an error at the
// kustomization, which the syncer reports as the revision's problem; the process lives on.
func TestKustomizePanicIsAnError(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, annotations: [x]}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, annotations: {internal.config.kubernetes.io/previousNames: [x]}}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, annotations: {internal.config.kubernetes.io/previousKinds: 'a,b', internal.config.kubernetes.io/previousNames: a}}\n",
	} {
		files := map[string]string{"k/kustomization.yaml": "resources: [a.yaml]\nnamePrefix: p-\n", "k/a.yaml": doc}
		_, err := Kustomize(context.Background(), snapshot(files), Options{Paths: []string{"k"}})
		problems, ok := Problems(err)
		if !ok || len(problems) != 1 || problems[0].File != "k/kustomization.yaml" || !strings.Contains(problems[0].Msg, "kustomize: internal error: ") {
			t.Errorf("%q: %v, want a problem of k/kustomization.yaml", doc, err)
		}
	}
}

// TestLocalConfigDropped: a build skips kustomize's local-config pass, and what that pass
// would drop, dropLocal drops, the value "false" aside; the other resources come back in
// their order.
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
	skipped := localPassesSkipped.Load()
	out, err := Kustomize(context.Background(), snapshot(files), Options{Paths: []string{"k"}})
	if err != nil {
		t.Fatal(err)
	}
	if localPassesSkipped.Load() == skipped {
		t.Error("the build ran kustomize's local-config pass")
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
