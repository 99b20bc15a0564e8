package render

import (
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

func TestMayBeLocal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		data string
		want bool
	}{
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n", false},
		{"metadata:\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n", true},
		{"commonAnnotations: {config.kubernetes.io/local-config: 'true'}\n", true},
		{"- {op: add, path: /metadata/annotations/config.kubernetes.io~1local-config, value: 'true'}\n", true},
		{`{"metadata": {"annotations": {"config.kubernetes.io/local\u002Dconfig": "true"}}}`, true},
		{"annotations: {\"config.kubernetes.io/local\\x2Dconfig\": \"true\"}\n", true},
		{"data: {path: 'C:\\temp'}\n", true},
		{"data: {note: local config files}\n", false},
	} {
		if got := mayBeLocal([]byte(c.data)); got != c.want {
			t.Errorf("mayBeLocal(%q) = %v, want %v", c.data, got, c.want)
		}
	}
}
