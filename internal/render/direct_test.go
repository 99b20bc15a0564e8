package render

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	kusttest "sigs.k8s.io/kustomize/api/testutils/kusttest"
	"sigs.k8s.io/kustomize/api/types"
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
	for name := range kindlessSpecs {
		if _, ok := sections[name]; !ok {
			t.Errorf("kindlessSpecs has a section %q kustomize's defaults do not", name)
		}
	}
}

// TestDirectKeepsErrors: a patch that fails on a resource built directly fails the build
// with kustomize's own error, as one kustomize run gives it.
func TestDirectKeepsErrors(t *testing.T) {
	t.Parallel()
	files := snapshot(equivFiles("resources: [../../widgets]\npatches:\n- target: {kind: Widget, name: w0001}\n  patch: |-\n    - {op: replace, path: /spec/missing/x, value: 1}\n"))
	var directs atomic.Int64
	_, direct := Kustomize(context.Background(), files, Options{Paths: []string{"ov/x"}, directs: &directs})
	_, one := Kustomize(context.Background(), files, Options{Paths: []string{"ov/x"}, noDirect: true})
	if direct == nil || one == nil || direct.Error() != one.Error() || !strings.Contains(one.Error(), "missing") {
		t.Fatalf("directly: %v\none run: %v", direct, one)
	}
	if directs.Load() != 0 {
		t.Fatalf("a failed build counted as built directly")
	}
}
