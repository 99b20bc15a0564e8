package render

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// equivBase is a tree of bases the overlays of TestKustomizeSameAsKrusty build on: a plain
// base of several files (multi-document, comments, JSON, a List), a base that is not plain
// (a namespace, a generator and a name reference to what it generates), a component.
var equivBase = map[string]string{
	"base/kustomization.yaml": "resources:\n- app.yaml\n- conf.json\n- list.yaml\n",
	"base/app.yaml": "# the app\n" + webDeployment + `---
# between documents
---
apiVersion: v1
kind: Service
metadata:
  name: web
  annotations: {note: "multi\nline"}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
--- # a comment on the separator
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {mode: base, count: "3", flag: "true", empty: ""}
`,
	"base/conf.json":             `{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"}, "stringData": {"k": "v"}}`,
	"base/list.yaml":             "apiVersion: v1\nkind: ConfigMapList\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: l1}, data: {a: '1'}}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: l2}, data: {b: '2'}}\n",
	"gen/kustomization.yaml":     "namespace: gen\nresources: [job.yaml]\nconfigMapGenerator:\n- {name: job-conf, literals: [x=1, y=two]}\nsecretGenerator:\n- {name: job-secret, literals: [p=q]}\n",
	"gen/job.yaml":               "apiVersion: batch/v1\nkind: Job\nmetadata: {name: job}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - {name: j, image: busybox, envFrom: [{configMapRef: {name: job-conf}}, {secretRef: {name: job-secret}}]}\n",
	"comp/kustomization.yaml":    "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [extra.yaml]\npatches:\n- target: {kind: Deployment}\n  patch: |-\n    - {op: add, path: /metadata/annotations, value: {component: 'on'}}\n",
	"comp/extra.yaml":            "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: extra}\n",
	"mid/kustomization.yaml":     "resources: [../base]\nnameSuffix: -mid\ncommonLabels: {layer: mid}\n",
	"widgets/kustomization.yaml": "resources: [w.yaml]\n",
	"widgets/w.yaml":             widgetDocs(0, 30),
	"ov/x/replicas.yaml":         "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 5}\n",
	"local/kustomization.yaml":   "resources: [local.yaml]\n",
	"local/local.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dropped, annotations: {config.kubernetes.io/local-config: 'true'}}\ndata: {mode: local}\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kept, annotations: {config.kubernetes.io/local-config: 'false'}}\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n",
	"escaped/kustomization.yaml": "resources: [escaped.yaml]\n",
	"escaped/escaped.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: escaped, annotations: {\"config.kubernetes.io/local\\x2Dconfig\": \"true\"}}\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n",
	// config.kubernetes.io/local-config as a base64 key (!!binary).
	"binary/kustomization.yaml": "resources: [one.yaml]\ncommonAnnotations: {? !!binary Y29uZmlnLmt1YmVybmV0ZXMuaW8vbG9jYWwtY29uZmln : 'true'}\n",
	"binary/one.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n",
	"bingen/kustomization.yaml": "generatorOptions: {annotations: {? !!binary Y29uZmlnLmt1YmVybmV0ZXMuaW8vbG9jYWwtY29uZmln : 'true'}}\nconfigMapGenerator:\n- {name: g, literals: [a=b]}\n",
	// Another custom kind, in namespaces and names that interleave the widgets' in the legacy
	// order, and one of a kind kustomize puts first in that order.
	"ov/x/gadgets.yaml": "apiVersion: a.example.com/v1\nkind: Gadget\nmetadata: {name: w0004, namespace: ns1}\n---\n" +
		"apiVersion: a.example.com/v1\nkind: Gadget\nmetadata: {name: g1}\n---\n" + widgetDocs(40, 45),
	"ov/x/service.yaml": "apiVersion: x.example.com/v1\nkind: Service\nmetadata: {name: not-core}\n",
	// Kinds named like Kubernetes' in a group of their own: kustomize follows its name
	// references by kind.
	"ov/x/hpa.yaml": "apiVersion: x.example.com/v1\nkind: HorizontalPodAutoscaler\nmetadata: {name: h}\nspec: {scaleTargetRef: {apiVersion: x.example.com/v1, kind: ReplicaSet, name: rs}}\n",
	"ov/x/rs.yaml":  "apiVersion: x.example.com/v1\nkind: ReplicaSet\nmetadata: {name: rs}\n",
	// One identity in two namespaces, one of them local-config: a namespace makes them one.
	"ov/x/la.yaml":   "apiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: ns1, annotations: {config.kubernetes.io/local-config: 'true'}}\n",
	"ov/x/lb.yaml":   "apiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: ns2}\n",
	"ov/x/dup.yaml":  "apiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: w0005, namespace: ns2}\nspec: {size: 0}\n",
	"ov/x/json.yaml": "- {op: replace, path: /spec/size, value: 7}\n- {op: add, path: /spec/extra, value: [1, 'two', {three: 3}]}\n",
}

// widgetDocs is a file of widgets from..to, the bench's shape.
func widgetDocs(from, to int) string {
	var w strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&w, "---\napiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: w%04d, namespace: ns%d, labels: {team: t%d}}\nspec: {size: %d}\n", i, i%3, i%7, i)
	}
	return w.String()
}

// equivOverlays are the kustomizations of TestKustomizeSameAsKrusty's overlay (ov/x), over
// equivBase.
var equivOverlays = []struct{ name, kust string }{
	{"prefix, labels, JSON patch (the bench)", "resources: [../../widgets]\nnamePrefix: prod-\nlabels: [{pairs: {env: prod}}]\npatches:\n- target: {kind: Widget, name: w0000}\n  patch: |-\n    - {op: replace, path: /spec/size, value: 1}\n"},
	{"prefix and suffix with name references", "resources: [../../base]\nnamePrefix: p-\nnameSuffix: -s\n"},
	{"namespace, selectors, annotations", "resources: [../../base, ../../widgets]\nnamespace: prod\nlabels: [{pairs: {env: prod}, includeSelectors: true}, {pairs: {tier: web}, includeTemplates: true}]\ncommonAnnotations: {owner: team-a}\n"},
	{"strategic patches inline and from a file", "resources: [../../base]\npatches:\n- path: replicas.yaml\n- patch: |\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata: {name: web}\n    spec:\n      template:\n        spec:\n          containers:\n          - {name: web, image: nginx:2, env: [{name: A, value: b}]}\n"},
	{"JSON 6902 patches from a file and by label", "resources: [../../widgets]\npatches:\n- path: json.yaml\n  target: {kind: Widget, labelSelector: team=t3}\n"},
	{"component", "resources: [../../base]\ncomponents: [../../comp]\nnamePrefix: c-\n"},
	{"generators and their references", "resources: [../../base, ../../gen]\nconfigMapGenerator:\n- {name: settings, behavior: merge, literals: [mode=prod]}\n- {name: fresh, literals: [a=b]}\nnamePrefix: g-\n"},
	{"images, replicas, replacements", "resources: [../../base]\nimages: [{name: nginx, newName: registry.example.com/nginx, newTag: '1.26'}]\nreplicas: [{name: web, count: 3}]\nreplacements:\n- source: {kind: ConfigMap, name: settings, fieldPath: data.mode}\n  targets: [{select: {kind: Service}, fieldPaths: [metadata.annotations.mode], options: {create: true}}]\n"},
	{"a base of a base and own files", "resources: [../../mid, own.yaml]\nnamePrefix: n-\nnamespace: nested\n"},
	{"local-config resources", "resources: [../../local, ../../widgets]\n"},
	{"local-config spelled with escapes", "resources: [../../escaped, ../../widgets]\n"},
	{"local-config set by a patch", "resources: [../../widgets]\npatches:\n- target: {kind: Widget, name: w0001}\n  patch: |-\n    - {op: add, path: /metadata/annotations, value: {config.kubernetes.io/local-config: 'true'}}\n"},
	{"local-config set by a patch with an escape", "resources: [../../widgets]\npatches:\n- target: {kind: Widget, name: w0002}\n  patch: |-\n    - {op: add, path: /metadata/annotations, value: {\"config.kubernetes.io/local\\u002Dconfig\": \"true\"}}\n"},
	{"local-config as a base64 key, in a base's commonAnnotations", "resources: [../../widgets, ../../binary]\n"},
	{"local-config as a base64 key, in generatorOptions", "resources: [../../widgets, ../../bingen]\n"},
	{"local-config as a base64 key, in a JSON patch", "resources: [../../widgets]\npatches:\n- target: {kind: Widget, name: w0001}\n  patch: |-\n    - {op: add, path: /metadata/annotations, value: {? !!binary Y29uZmlnLmt1YmVybmV0ZXMuaW8vbG9jYWwtY29uZmln : 'true'}}\n"},
	{"a replacement reading a local-config resource", "resources: [../../local, ../../base]\nreplacements:\n- source: {kind: ConfigMap, name: dropped, fieldPath: data.mode}\n  targets: [{select: {kind: Service}, fieldPaths: [metadata.annotations.mode], options: {create: true}}]\n"},
	{"sort order", "resources: [../../widgets, ../../base]\nsortOptions: {order: legacy}\n"},
	{"custom kinds in the legacy order", "resources: [gadgets.yaml, ../../widgets]\nnameSuffix: -x\nsortOptions: {order: legacy}\n"},
	{"custom kinds in the legacy order, one namespace", "resources: [../../widgets, gadgets.yaml]\nnamespace: prod\nsortOptions: {order: legacy}\n"},
	{"custom kinds in the order read", "resources: [gadgets.yaml, ../../widgets]\nnamePrefix: p-\ncommonLabels: {a: b}\nsortOptions: {order: fifo}\n"},
	{"a custom kind named like one kustomize orders first", "resources: [../../widgets, service.yaml]\nsortOptions: {order: legacy}\n"},
	{"a name reference between kinds named like Kubernetes'", "resources: [rs.yaml, ../../widgets, hpa.yaml]\nnamePrefix: p-\n"},
	{"a strategic patch on custom kinds by a name pattern", "resources: [../../widgets]\nnamePrefix: p-\npatches:\n- target: {kind: Widget, name: 'w000[1-3]'}\n  patch: |-\n    apiVersion: bench.example.com/v1\n    kind: Widget\n    metadata: {name: any, labels: {patched: 'yes'}}\n    spec: {size: 100, list: [a, b]}\n"},
	{"a patch renaming, another finding it by its first name", "resources: [../../widgets]\nnamespace: prod\nnameSuffix: -s\ncommonAnnotations: {owner: team-a}\n" +
		"labels: [{pairs: {env: prod}, includeSelectors: true}, {pairs: {tier: web}, includeTemplates: true}, {pairs: {v: '1'}, includeVolumeClaimTemplates: true}]\npatches:\n" +
		"- target: {kind: Widget, name: w0001}\n  patch: |-\n    - {op: replace, path: /metadata/name, value: renamed}\n" +
		"- target: {kind: Widget, name: w0001}\n  patch: |-\n    - {op: add, path: /spec/second, value: true}\n"},
	{"patches by label, namespace and group", "resources: [gadgets.yaml, ../../widgets]\npatches:\n" +
		"- target: {labelSelector: 'team in (t1,t2)'}\n  patch: |-\n    - {op: add, path: /metadata/labels/picked, value: label}\n" +
		"- target: {namespace: ns1, group: a.example.com}\n  patch: |-\n    - {op: add, path: /spec, value: {picked: group}}\n" +
		"- target: {version: v1, kind: Widget, annotationSelector: 'x=y'}\n  patch: |-\n    - {op: add, path: /spec/never, value: 1}\n"},
	{"a patch making a widget a ConfigMap", "resources: [../../widgets]\nnamePrefix: p-\npatches:\n- target: {kind: Widget, name: w0003}\n  patch: |-\n    - {op: replace, path: /apiVersion, value: v1}\n    - {op: replace, path: /kind, value: ConfigMap}\n"},
}

// equivFiles are equivBase and the overlay kust with its own files.
func equivFiles(kust string) map[string]string {
	files := map[string]string{
		"ov/x/kustomization.yaml": kust,
		"ov/x/own.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: own}\ndata: {k: v}\n---\n" + widgetDocs(100, 103),
	}
	for p, d := range equivBase {
		files[p] = d
	}
	return files
}

// TestKustomizeSameAsKrusty: what Kustomize renders (plain bases inlined, origins marked in
// the text, JSON written from kustomize's nodes, the collector tuned) holds the same
// resources, in kustomize's order within each origin file, as a plain krusty build of the
// same files, whatever the overlay does: prefixes and suffixes and the references they
// rename, namespaces, labels and selectors, annotations, strategic and JSON 6902 patches
// (inline and from files), components, generators, images, replicas, replacements, bases
// of bases. So does it built directly, byte for byte as one kustomize run.
func TestKustomizeSameAsKrusty(t *testing.T) {
	t.Parallel()
	modes := []struct {
		name string
		opt  Options
	}{
		{"one run", Options{noDirect: true}},
		{"directly", Options{}},
	}
	for _, c := range equivOverlays {
		for i, m := range modes {
			t.Run(c.name+", "+m.name, func(t *testing.T) {
				t.Parallel()
				var directs atomic.Int64
				opt := m.opt
				opt.directs = &directs
				sameAsKrusty(t, c.kust, opt)
				if got := directs.Load() > 0; got != (i == 1 && aloneOverlays[c.name]) {
					t.Errorf("built directly: %v", got)
				}
				if i == 0 {
					return
				}
				// Byte for byte as one kustomize run.
				files := snapshot(equivFiles(c.kust))
				one, err1 := Kustomize(context.Background(), files, Options{Paths: []string{"ov/x"}, noDirect: true})
				opt.Paths = []string{"ov/x"}
				other, err2 := Kustomize(context.Background(), files, opt)
				if err1 != nil || err2 != nil || len(one) != len(other) {
					t.Fatalf("%v, %v, %d files, %d files", err1, err2, len(one), len(other))
				}
				for i := range one {
					if one[i].Path != other[i].Path || !bytes.Equal(one[i].Data, other[i].Data) {
						t.Fatalf("%s differs from one run's %s:\n%s\n%s", other[i].Path, one[i].Path, other[i].Data, one[i].Data)
					}
				}
			})
		}
	}
}

// aloneOverlays are the overlays of equivOverlays built directly: custom kinds alone, steps
// that work on each resource alone.
var aloneOverlays = map[string]bool{
	"prefix, labels, JSON patch (the bench)":                 true,
	"JSON 6902 patches from a file and by label":             true,
	"custom kinds in the legacy order":                       true,
	"custom kinds in the legacy order, one namespace":        true,
	"custom kinds in the order read":                         true,
	"a strategic patch on custom kinds by a name pattern":    true,
	"a patch renaming, another finding it by its first name": true,
	"patches by label, namespace and group":                  true,
}

// sameAsKrusty checks the render of the overlay kust with opt against krusty's build.
func sameAsKrusty(t *testing.T, kust string, opt Options) {
	t.Helper()
	files := equivFiles(kust)
	opt.Paths = []string{"ov/x"}
	out, err := Kustomize(context.Background(), snapshot(files), opt)
	if err != nil {
		t.Fatal(err)
	}
	m, err := krustyBuild(t, files, "ov/x")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range m.Resources() {
		j, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, canonicalJSON(t, j))
	}
	// Each origin file's resources come in kustomize's order; all of them, once.
	pos := map[string]int{}
	for i, w := range want {
		pos[w] = i
	}
	// The files come in the order of their first resources.
	seen, first := make([]bool, len(want)), -1
	for _, f := range out {
		last := -1
		for n, doc := range strings.Split(strings.TrimSuffix(string(f.Data), "\n"), "\n---\n") {
			got := canonicalJSON(t, []byte(doc))
			i, ok := pos[got]
			if !ok {
				t.Fatalf("%s: a resource plain kustomize does not build:\n%s\nkustomize's:\n%s", f.Path, got, strings.Join(want, "\n"))
			}
			if seen[i] {
				t.Fatalf("%s: a resource rendered twice:\n%s", f.Path, got)
			}
			if i <= last || n == 0 && i <= first {
				t.Fatalf("%s: resources out of kustomize's order at\n%s", f.Path, got)
			}
			if n == 0 {
				first = i
			}
			last = i
			seen[i] = true
		}
	}
	for i, ok := range seen {
		if !ok {
			t.Errorf("a resource plain kustomize builds is not rendered:\n%s", want[i])
		}
	}
}

// krustyBuild is a plain krusty build of dir over files, in memory.
func krustyBuild(t *testing.T, files map[string]string, dir string) (resmap.ResMap, error) {
	t.Helper()
	fs := filesys.MakeFsInMemory()
	for p, d := range files {
		if err := fs.WriteFile("/k/"+p, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	return krusty.MakeKustomizer(optionsFor([]byte(files[dir+"/kustomization.yaml"]))).Run(fs, "/k/"+dir)
}

// canonicalJSON is a resource's JSON with its keys sorted.
func canonicalJSON(t *testing.T, doc []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatalf("%v:\n%s", err, doc)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestKustomizeDirectKeepsErrors: a resource given twice, two given one identity by a patch,
// or by a namespace with one of them local-config, are refused built directly as one
// kustomize run refuses them.
func TestKustomizeDirectKeepsErrors(t *testing.T) {
	t.Parallel()
	files := equivFiles("resources: [../../widgets, dup.yaml]\n")
	if _, err := krustyBuild(t, files, "ov/x"); err == nil || !strings.Contains(err.Error(), "already registered id") {
		t.Fatalf("krusty: %v", err)
	}
	renamed := equivFiles("resources: [../../widgets]\npatches:\n- target: {kind: Widget, name: w0001}\n  patch: |-\n" +
		"    - {op: replace, path: /metadata/name, value: w0004}\n    - {op: replace, path: /metadata/namespace, value: ns1}\n")
	// Made one by the namespace, one of them local-config (dropped after the check).
	local := equivFiles("resources: [la.yaml, ../../widgets, lb.yaml]\nnamespace: prod\n")
	if _, err := krustyBuild(t, local, "ov/x"); err == nil || !strings.Contains(err.Error(), "ID conflict") {
		t.Fatalf("krusty: %v", err)
	}
	// Directly and in one run.
	opts := []Options{{}, {noDirect: true}}
	for _, opt := range opts {
		opt.Paths = []string{"ov/x"}
		_, err := Kustomize(context.Background(), snapshot(local), opt)
		if err == nil || !strings.Contains(err.Error(), "ID conflict") {
			t.Errorf("%+v: %v, want kustomize's refusal", opt, err)
		}
	}
	for _, files := range []map[string]string{files, renamed} {
		for _, opt := range opts {
			opt.Paths = []string{"ov/x"}
			_, err := Kustomize(context.Background(), snapshot(files), opt)
			if err == nil || !strings.Contains(err.Error(), "already registered id") {
				t.Errorf("%+v: %v, want kustomize's refusal", opt, err)
			}
		}
	}
}
