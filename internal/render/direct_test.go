package render

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"sigs.k8s.io/kustomize/api/resource"
	kusttest "sigs.k8s.io/kustomize/api/testutils/kusttest"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/resid"
	sigsyaml "sigs.k8s.io/yaml"
)

// TestKindlessSpecs: the field specs a direct build applies are those of kustomize's
// default configuration that name no kind, group or version, section by section; a section
// kustomize adds is one to look at.
func TestKindlessSpecs(t *testing.T) {
	th := kusttest.MakeHarness(t)
	th.WriteLegacyConfigs("/defaults.yaml")
	data, err := th.GetFSys().ReadFile("/defaults.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sections map[string]json.RawMessage
	if err := sigsyaml.Unmarshal(data, &sections); err != nil {
		t.Fatal(err)
	}
	// Sections of steps a direct build never takes (split refuses them).
	unused := map[string]bool{"nameReference": true, "varReference": true, "images": true, "replicas": true}
	for name, raw := range sections {
		if unused[name] {
			continue
		}
		var specs types.FsSlice
		if err := sigsyaml.UnmarshalStrict(raw, &specs); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, ok := kindlessSpecs[name]
		if !ok {
			t.Errorf("kustomize's defaults have a section %q that kindlessSpecs does not know", name)
			continue
		}
		var got types.FsSlice
		for _, fs := range specs {
			if fs.Gvk.Group == "" && fs.Gvk.Version == "" && fs.Gvk.Kind == "" {
				got = append(got, fs)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: kustomize's kindless field specs %+v, kindlessSpecs %+v", name, got, want)
		}
	}
	// Every kind a field spec of the defaults names is one split refuses, whatever its
	// group: none of those specs apply to a resource built directly.
	for name, raw := range sections {
		var specs types.FsSlice
		if err := sigsyaml.Unmarshal(raw, &specs); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, fs := range specs {
			if fs.Gvk.Kind == "" && (fs.Gvk.Group != "" || fs.Gvk.Version != "") {
				t.Errorf("%s: a field spec that names a group or version and no kind: %+v", name, fs)
			}
			if fs.Gvk.Kind != "" && unknownKind("x.example.com/v1", fs.Gvk.Kind) {
				t.Errorf("%s: kind %s, named by a field spec of kustomize's defaults, is not refused", name, fs.Gvk.Kind)
			}
		}
	}
	// The kinds name references refer to and those holding the references, likewise.
	var refs []struct {
		resid.Gvk  `json:",inline"`
		FieldSpecs types.FsSlice `json:"fieldSpecs"`
	}
	if err := sigsyaml.UnmarshalStrict(sections["nameReference"], &refs); err != nil || len(refs) == 0 {
		t.Fatalf("nameReference: %d entries, %v", len(refs), err)
	}
	for _, r := range refs {
		for _, fs := range append(types.FsSlice{{Gvk: r.Gvk}}, r.FieldSpecs...) {
			if fs.Gvk.Kind == "" || unknownKind("x.example.com/v1", fs.Gvk.Kind) {
				t.Errorf("nameReference: kind %q is not refused", fs.Gvk.Kind)
			}
		}
	}
	for a := range transformerAnnotations {
		if !slices.Contains(resource.BuildAnnotations, a) {
			t.Errorf("%s is not one of kustomize's build annotations", a)
		}
	}
	for name := range kindlessSpecs {
		if _, ok := sections[name]; !ok {
			t.Errorf("kindlessSpecs has a section %q kustomize's defaults do not", name)
		}
	}
}

// TestDirectAsOneRun: a kustomization split accepts whose build differs resource by
// resource from what a run does across resources gives one kustomize run's output or error:
// it is built directly only where the two agree.
func TestDirectAsOneRun(t *testing.T) {
	t.Parallel()
	smp := func(name string, size int) string {
		return fmt.Sprintf("apiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: %s, namespace: ns1}\nspec: {size: %d}\n", name, size)
	}
	cases := []struct {
		name   string
		kust   string
		extra  map[string]string
		direct bool   // built directly
		err    string // in the error, "" for none
	}{
		{"a failing JSON patch", "resources: [../../widgets]\npatches:\n- target: {kind: Widget, name: w0001}\n  patch: |-\n    - {op: replace, path: /spec/missing/x, value: 1}\n",
			nil, false, "missing"},
		{"two strategic patches with one target that matches nothing", "resources: [../../widgets]\npatches:\n- target: {kind: Widget, name: nothing}\n  path: two.yaml\n",
			map[string]string{"ov/x/two.yaml": smp("w0001", 5) + "---\n" + smp("w0004", 6)}, false, "Multiple Strategic-Merge Patches"},
		{"a name taken until a later patch", "resources: [../../widgets]\npatches:\n" +
			"- target: {kind: Widget, name: w0001}\n  patch: |-\n    - {op: replace, path: /metadata/name, value: w0004}\n" +
			"- target: {kind: Widget, name: w0007}\n  path: smp.yaml\n" +
			"- target: {kind: Widget, name: w0001}\n  patch: |-\n    - {op: replace, path: /metadata/name, value: z}\n",
			map[string]string{"ov/x/smp.yaml": smp("w0007", 5)}, false, "already registered id"},
		{"a kind named by kustomize's label field specs", "resources: [np.yaml, ../../widgets]\ncommonLabels: {env: prod}\n",
			map[string]string{"ov/x/np.yaml": "apiVersion: networking.k8s.io/v9\nkind: NetworkPolicy\nmetadata: {name: a}\nspec: {podSelector: {matchLabels: {app: x}}}\n"}, false, ""},
		{"a patch file's text as written", "resources: [../../widgets]\npatches:\n- target: {kind: Widget, name: w0002}\n  path: kept.yaml\n- target: {kind: Widget, name: w0003}\n  path: indented.yaml\n",
			map[string]string{
				"ov/x/kept.yaml":     "apiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: any}\nspec:\n  note: |+\n    x\n\n",
				"ov/x/indented.yaml": "   - {op: add, path: /spec/a, value: 1}\n- {op: add, path: /spec/b, value: 2}\n"}, true, ""},
		{"a patch file out of the folder", "resources: [../../widgets]\npatches:\n- target: {kind: Widget}\n  path: ../out.yaml\n",
			map[string]string{"ov/out.yaml": "- {op: add, path: /spec/a, value: 1}\n"}, false, "not in or below"},
		{"a patch file missing", "resources: [../../widgets]\npatches:\n- target: {kind: Widget}\n  path: none.yaml\n", nil, false, "none.yaml"},
		{"a hash suffix asked for by an annotation", "resources: [../../widgets]\ncommonAnnotations: {internal.config.kubernetes.io/needsHashSuffix: enabled}\n", nil, false, ""},
		{"a hash suffix asked for by a resource", "resources: [h.yaml, ../../widgets]\n",
			map[string]string{"ov/x/h.yaml": "apiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: h, annotations: {internal.config.kubernetes.io/needsHashSuffix: enabled}}\n"}, false, ""},
		{"a name reference through previous identities a patch gives", "resources: [refs.yaml]\nnamePrefix: p-\npatches:\n- target: {kind: Widget}\n  path: prevw.yaml\n- target: {kind: Gadget}\n  path: prevg.yaml\n",
			map[string]string{
				"ov/x/refs.yaml": "apiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: web}\n---\n" +
					"apiVersion: bench.example.com/v1\nkind: Gadget\nmetadata: {name: h}\nspec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}}\n",
				"ov/x/prevw.yaml": "apiVersion: bench.example.com/v1\nkind: Widget\nmetadata:\n  name: web\n  annotations: {internal.config.kubernetes.io/previousNames: web, internal.config.kubernetes.io/previousNamespaces: default, internal.config.kubernetes.io/previousKinds: Deployment}\n",
				"ov/x/prevg.yaml": "apiVersion: bench.example.com/v1\nkind: Gadget\nmetadata:\n  name: h\n  annotations: {internal.config.kubernetes.io/previousNames: h, internal.config.kubernetes.io/previousNamespaces: default, internal.config.kubernetes.io/previousKinds: HorizontalPodAutoscaler}\n"}, false, ""},
		{"a name kustomize's previous names cannot hold", "resources: [comma.yaml]\nnamespace: prod\n",
			map[string]string{"ov/x/comma.yaml": "apiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: 'a,b'}\n"}, false, "a panic in kustomize"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			files := equivFiles(c.kust)
			for p, d := range c.extra {
				files[p] = d
			}
			snap := snapshot(files)
			var directs atomic.Int64
			got, err := Kustomize(context.Background(), snap, Options{Paths: []string{"ov/x"}, directs: &directs})
			want, wantErr := Kustomize(context.Background(), snap, Options{Paths: []string{"ov/x"}, noDirect: true})
			if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
				t.Fatalf("directly: %v\none run: %v", err, wantErr)
			}
			if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("%v, want an error with %q", err, c.err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d files, one run %d", len(got), len(want))
			}
			for i := range got {
				if got[i].Path != want[i].Path || !bytes.Equal(got[i].Data, want[i].Data) {
					t.Fatalf("%s differs from one run's %s:\n%s\n%s", got[i].Path, want[i].Path, got[i].Data, want[i].Data)
				}
			}
			if (directs.Load() > 0) != c.direct {
				t.Fatalf("built directly: %v", directs.Load() > 0)
			}
		})
	}
}
