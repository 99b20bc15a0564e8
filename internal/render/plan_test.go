package render

import (
	"strings"
	"testing"
)

// TestPlanDirect: which kustomizations are built directly, with how many resources.
func TestPlanDirect(t *testing.T) {
	t.Parallel()
	widgets := widgetDocs(0, 10) // ten custom resources
	cases := []struct {
		name      string
		kust      string
		extra     map[string]string
		resources int // the resources read; 0: not built directly
	}{
		{"custom kinds, names and labels", "resources: [w.yaml]\nnamePrefix: p-\nlabels: [{pairs: {a: b}}]\n", nil, 10},
		{"a JSON patch with a target", "resources: [w.yaml]\npatches:\n- target: {kind: Widget}\n  patch: '[{\"op\": \"remove\", \"path\": \"/spec\"}]'\n", nil, 10},
		{"the legacy order", "resources: [w.yaml]\nsortOptions: {order: legacy}\n", nil, 10},
		{"the order read", "resources: [w.yaml]\nsortOptions: {order: fifo}\n", nil, 10},
		{"two files", "resources: [w.yaml, v.yaml]\n", map[string]string{"k/v.yaml": widgetDocs(20, 22)}, 12},
		{"seven resources", "resources: [v.yaml]\n", map[string]string{"k/v.yaml": widgetDocs(20, 27)}, 7},
		{"legacy order options", "resources: [w.yaml]\nsortOptions: {order: legacy, legacySortOptions: {orderFirst: [Widget]}}\n", nil, 0},
		{"a patch without a target", "resources: [w.yaml]\npatches:\n- patch: '{apiVersion: bench.example.com/v1, kind: Widget, metadata: {name: w0001, namespace: ns1}, spec: {size: 0}}'\n", nil, 0},
		{"a patch with options", "resources: [w.yaml]\npatches:\n- target: {kind: Widget}\n  options: {allowNameChange: true}\n  patch: '[]'\n", nil, 0},
		{"a generator", "resources: [w.yaml]\nconfigMapGenerator: [{name: c, literals: [a=b]}]\n", nil, 0},
		{"replicas", "resources: [w.yaml]\nreplicas: [{name: w0001, count: 2}]\n", nil, 0},
		{"a component", "kind: Component\napiVersion: kustomize.config.k8s.io/v1alpha1\nresources: [w.yaml]\n", nil, 0},
		{"a Kubernetes kind", "resources: [w.yaml, c.yaml]\n", map[string]string{"k/c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"}, 0},
		{"a custom kind named like one ordered first", "resources: [w.yaml, c.yaml]\n", map[string]string{"k/c.yaml": "apiVersion: x.example.com/v1\nkind: Secret\nmetadata: {name: c}\n"}, 0},
		{"a list", "resources: [w.yaml, c.yaml]\n", map[string]string{"k/c.yaml": "apiVersion: x.example.com/v1\nkind: WidgetList\nitems: []\n"}, 0},
		{"a resource given twice", "resources: [w.yaml, c.yaml]\n", map[string]string{"k/c.yaml": "apiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: w0003, namespace: ns0}\n"}, 0},
		{"default and no namespace, one identity", "resources: [w.yaml, c.yaml, d.yaml]\n", map[string]string{
			"k/c.yaml": "apiVersion: x.example.com/v1\nkind: Thing\nmetadata: {name: t}\n",
			"k/d.yaml": "apiVersion: x.example.com/v1\nkind: Thing\nmetadata: {name: t, namespace: default}\n"}, 0},
		{"a folder", "resources: [w.yaml, sub]\n", map[string]string{"k/sub/kustomization.yaml": "resources: [x.yaml]\n"}, 0},
		{"a file out of the folder", "resources: [w.yaml, ../o.yaml]\n", map[string]string{"o.yaml": widgetDocs(30, 31)}, 0},
		{"a directive", "resources: [w.yaml, c.yaml]\n", map[string]string{"k/c.yaml": "%YAML 1.2\n---\napiVersion: x.example.com/v1\nkind: Thing\nmetadata: {name: t}\n"}, 0},
		{"content after a marker", "resources: [w.yaml, c.yaml]\n", map[string]string{"k/c.yaml": "--- {apiVersion: x.example.com/v1, kind: Thing, metadata: {name: t}}\n"}, 0},
		{"an anchor", "resources: [w.yaml, c.yaml]\n", map[string]string{"k/c.yaml": "apiVersion: x.example.com/v1\nkind: Thing\nmetadata: &m {name: t}\n"}, 0},
		{"a name that is a number", "resources: [w.yaml, c.yaml]\n", map[string]string{"k/c.yaml": "apiVersion: x.example.com/v1\nkind: Thing\nmetadata: {name: 12}\n"}, 0},
		{"a patch from a file", "resources: [w.yaml]\npatches:\n- {path: p.yaml, target: {kind: Widget}}\n", map[string]string{"k/p.yaml": "- {op: remove, path: /spec}\n", "k/v.yaml": widgetDocs(20, 22)}, 10},
		{"two kustomization files", "resources: [w.yaml]\n", map[string]string{"k/kustomization.yml": "resources: [w.yaml]\n"}, 0},
		{"a label's own field specs", "resources: [w.yaml]\nlabels: [{pairs: {a: b}, fields: [{path: spec/labels, create: true}]}]\n", nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			files := map[string][]byte{"k/kustomization.yaml": []byte(c.kust), "k/w.yaml": []byte(widgets)}
			for p, d := range c.extra {
				files[p] = []byte(d)
			}
			d := planDirect("k", "k/kustomization.yaml", files)
			if d == nil {
				if c.resources != 0 {
					t.Fatalf("one run, want %d resources built directly", c.resources)
				}
				return
			}
			if len(d.docs) != c.resources {
				t.Fatalf("%d resources built directly, want %d", len(d.docs), c.resources)
			}
			if d.legacy != strings.Contains(c.kust, "legacy") {
				t.Fatalf("legacy order: %v", d.legacy)
			}
		})
	}
}

// TestUnder: what lies in a folder, for the source's path and a direct build's patch files.
func TestUnder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		dir, p string
		want   bool
	}{
		{".", ".", true},
		{".", "a/b.yaml", true},
		{".", "..", false},
		{".", "../a.yaml", false},
		{".", "..a/b.yaml", true},
		{"ov/x", "ov/x", true},
		{"ov/x", "ov/x/p.yaml", true},
		{"ov/x", "ov/xy/p.yaml", false},
		{"ov/x", "ov/p.yaml", false},
		{"ov/x", "ov", false},
	}
	for _, c := range cases {
		if got := under(c.dir, c.p); got != c.want {
			t.Errorf("under(%q, %q) = %v, want %v", c.dir, c.p, got, c.want)
		}
	}
}
