package render

import (
	"bytes"
	"strings"
	"testing"
)

// TestSplit: which kustomizations are built in parts, and in how many, and which directly.
func TestSplit(t *testing.T) {
	t.Parallel()
	widgets := widgetDocs(0, 10) // ten custom resources
	cases := []struct {
		name      string
		kust      string
		extra     map[string]string
		parts     int  // 0: not in parts
		direct    bool // built directly (direct.go)
		resources int  // the resources read, when in parts or directly
	}{
		{"custom kinds, names and labels", "resources: [w.yaml]\nnamePrefix: p-\nlabels: [{pairs: {a: b}}]\n", nil, 3, true, 10},
		{"a JSON patch with a target", "resources: [w.yaml]\npatches:\n- target: {kind: Widget}\n  patch: '[{\"op\": \"remove\", \"path\": \"/spec\"}]'\n", nil, 3, true, 10},
		{"the legacy order", "resources: [w.yaml]\nsortOptions: {order: legacy}\n", nil, 3, true, 10},
		{"the order read", "resources: [w.yaml]\nsortOptions: {order: fifo}\n", nil, 3, true, 10},
		{"two files", "resources: [w.yaml, v.yaml]\n", map[string]string{"k/v.yaml": widgetDocs(20, 22)}, 3, true, 12},
		{"too few resources", "resources: [v.yaml]\n", map[string]string{"k/v.yaml": widgetDocs(20, 27)}, 0, true, 7},
		{"legacy order options", "resources: [w.yaml]\nsortOptions: {order: legacy, legacySortOptions: {orderFirst: [Widget]}}\n", nil, 0, false, 0},
		{"a patch without a target", "resources: [w.yaml]\npatches:\n- patch: '{apiVersion: bench.example.com/v1, kind: Widget, metadata: {name: w0001, namespace: ns1}, spec: {size: 0}}'\n", nil, 0, false, 0},
		{"a patch with options", "resources: [w.yaml]\npatches:\n- target: {kind: Widget}\n  options: {allowNameChange: true}\n  patch: '[]'\n", nil, 0, false, 0},
		{"a generator", "resources: [w.yaml]\nconfigMapGenerator: [{name: c, literals: [a=b]}]\n", nil, 0, false, 0},
		{"replicas", "resources: [w.yaml]\nreplicas: [{name: w0001, count: 2}]\n", nil, 0, false, 0},
		{"a component", "kind: Component\napiVersion: kustomize.config.k8s.io/v1alpha1\nresources: [w.yaml]\n", nil, 0, false, 0},
		{"a Kubernetes kind", "resources: [w.yaml, c.yaml]\n", map[string]string{"k/c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"}, 0, false, 0},
		{"a custom kind named like one ordered first", "resources: [w.yaml, c.yaml]\n", map[string]string{"k/c.yaml": "apiVersion: x.example.com/v1\nkind: Secret\nmetadata: {name: c}\n"}, 0, false, 0},
		{"a list", "resources: [w.yaml, c.yaml]\n", map[string]string{"k/c.yaml": "apiVersion: x.example.com/v1\nkind: WidgetList\nitems: []\n"}, 0, false, 0},
		{"a resource given twice", "resources: [w.yaml, c.yaml]\n", map[string]string{"k/c.yaml": "apiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: w0003, namespace: ns0}\n"}, 0, false, 0},
		{"default and no namespace, one identity", "resources: [w.yaml, c.yaml, d.yaml]\n", map[string]string{
			"k/c.yaml": "apiVersion: x.example.com/v1\nkind: Thing\nmetadata: {name: t}\n",
			"k/d.yaml": "apiVersion: x.example.com/v1\nkind: Thing\nmetadata: {name: t, namespace: default}\n"}, 0, false, 0},
		{"a folder", "resources: [w.yaml, sub]\n", map[string]string{"k/sub/kustomization.yaml": "resources: [x.yaml]\n"}, 0, false, 0},
		{"a file out of the folder", "resources: [w.yaml, ../o.yaml]\n", map[string]string{"o.yaml": widgetDocs(30, 31)}, 0, false, 0},
		{"a directive", "resources: [w.yaml, c.yaml]\n", map[string]string{"k/c.yaml": "%YAML 1.2\n---\napiVersion: x.example.com/v1\nkind: Thing\nmetadata: {name: t}\n"}, 0, false, 0},
		{"content after a marker", "resources: [w.yaml, c.yaml]\n", map[string]string{"k/c.yaml": "--- {apiVersion: x.example.com/v1, kind: Thing, metadata: {name: t}}\n"}, 0, false, 0},
		{"an anchor", "resources: [w.yaml, c.yaml]\n", map[string]string{"k/c.yaml": "apiVersion: x.example.com/v1\nkind: Thing\nmetadata: &m {name: t}\n"}, 0, false, 0},
		{"a name that is a number", "resources: [w.yaml, c.yaml]\n", map[string]string{"k/c.yaml": "apiVersion: x.example.com/v1\nkind: Thing\nmetadata: {name: 12}\n"}, 0, false, 0},
		{"the part's file name taken", "resources: [w.yaml]\n", map[string]string{"k/" + partFile: "x: 1\n"}, 0, true, 10},
		{"a patch from a file", "resources: [w.yaml]\npatches:\n- {path: p.yaml, target: {kind: Widget}}\n", map[string]string{"k/p.yaml": "- {op: remove, path: /spec}\n", "k/v.yaml": widgetDocs(20, 22)}, 3, true, 10},
		{"two kustomization files", "resources: [w.yaml]\n", map[string]string{"k/kustomization.yml": "resources: [w.yaml]\n"}, 3, false, 10},
		{"a label's own field specs", "resources: [w.yaml]\nlabels: [{pairs: {a: b}, fields: [{path: spec/labels, create: true}]}]\n", nil, 3, false, 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			files := map[string][]byte{"k/kustomization.yaml": []byte(c.kust), "k/w.yaml": []byte(widgets)}
			for p, d := range c.extra {
				files[p] = []byte(d)
			}
			s := split("k", "k/kustomization.yaml", files, 4)
			if s == nil {
				if c.parts != 0 || c.direct {
					t.Fatalf("one run, want %d parts, directly: %v", c.parts, c.direct)
				}
				return
			}
			if len(s.parts) != c.parts || s.directly != c.direct {
				t.Fatalf("%d parts, directly: %v; want %d, %v", len(s.parts), s.directly, c.parts, c.direct)
			}
			want := c.resources
			if len(s.docs) != want || s.resources != want {
				t.Fatalf("%d resources, want %d", len(s.docs), want)
			}
			if c.parts == 0 {
				return
			}
			docs := 0
			for _, p := range s.parts {
				n := bytes.Count(p, []byte("---\n"))
				if n == 0 || n > 4 {
					t.Fatalf("a part of %d resources:\n%s", n, p)
				}
				docs += n
			}
			if docs != want {
				t.Fatalf("%d resources in the parts, want %d", docs, want)
			}
			if s.shared["k/w.yaml"] != nil || s.shared["k/kustomization.yaml"] != nil {
				t.Fatalf("the split files are shared")
			}
			if s.legacy != strings.Contains(c.kust, "legacy") {
				t.Fatalf("legacy order: %v", s.legacy)
			}
			if bytes.Contains(s.kfile, []byte("sortOptions")) || !bytes.Contains(s.kfile, []byte(partFile)) {
				t.Fatalf("the parts' kustomization:\n%s", s.kfile)
			}
		})
	}
}
