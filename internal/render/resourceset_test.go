package render

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/manifest"
)

// setFiles is a kustomize tree with a ResourceSet in its base and one overlay.
func setFiles(set string) map[string]string {
	return map[string]string{
		"deploy/types/kustomization.yaml":         "resources: [types.yaml]\n",
		"deploy/types/types.yaml":                 typeDoc,
		"deploy/base/kustomization.yaml":          "resources: [set.yaml]\n",
		"deploy/base/set.yaml":                    set,
		"deploy/base/tenants/a.yaml":              "- {tenant: acme, size: 10}\n- {tenant: globex, size: 9000}\n",
		"deploy/overlays/prod/kustomization.yaml": "resources: [../../base]\nnamePrefix: prod-\n",
	}
}

var setOpts = Options{Root: "deploy", Paths: []string{"types", "overlays/*"}}

// bigSet is a set with n inputs too large for the type (size above 100), after three blank
// lines so that the lines of kustomize's output differ from the file's.
func bigSet(n int) string {
	var b strings.Builder
	b.WriteString("- {tenant: t0, size: 1}\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {tenant: t%d, size: 9000}\n", i+1)
	}
	return "\n\n\napiVersion: trueup.dev/v1\nkind: ResourceSet\nmetadata: {name: dbs, namespace: shop}\nspec:\n  inputs:\n  " + b.String() + `  resources:
    - apiVersion: example.com/v1
      kind: Database
      metadata: {name: "db-<< inputs.tenant >>"}
      spec: {size: "<< inputs.size >>"}
`
}

func TestRenderedSetLineIsZero(t *testing.T) {
	out, err := Kustomize(context.Background(), snapshot(setFiles(strings.ReplaceAll(bigSet(2), "9000", "9"))), setOpts)
	if err != nil {
		t.Fatal(err)
	}
	s, err := manifest.NewLoader().Load(out, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.ResourceSets) != 1 {
		t.Fatalf("sets: %+v", s.ResourceSets)
	}
	if i := s.ResourceSets[0]; i.File != "deploy/base/set.yaml" || i.Line != 0 || i.Name != "prod-dbs" {
		t.Errorf("set info %+v, want deploy/base/set.yaml line 0", i)
	}
}

func TestRenderedSetProblemNamesRenderingAndInput(t *testing.T) {
	out, err := Kustomize(context.Background(), snapshot(setFiles(bigSet(1))), setOpts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = manifest.NewLoader().Load(out, manifest.Options{})
	es, ok := err.(manifest.Errors)
	if !ok || len(es) != 1 {
		t.Fatalf("err %v, want one problem", err)
	}
	if e := es[0]; e.File != "deploy/base/set.yaml" || e.Line != 0 || e.Origin != "rendered by deploy/overlays/prod/kustomization.yaml, tenant=t1" {
		t.Errorf("problem %#v", e)
	}
}

func TestRenderedSetProblemsAreCapped(t *testing.T) {
	out, err := Kustomize(context.Background(), snapshot(setFiles(bigSet(40))), setOpts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = manifest.NewLoader().Load(out, manifest.Options{})
	es, ok := err.(manifest.Errors)
	if !ok || len(es) != 21 {
		t.Fatalf("%d problems, want 20 and a count of the others: %v", len(es), err)
	}
	if m := es[20].Msg; !strings.Contains(m, "and 20 more problems of ResourceSet shop/prod-dbs") {
		t.Errorf("last problem %q", m)
	}
}

func TestRenderedSetReadsInputsFrom(t *testing.T) {
	set := `apiVersion: trueup.dev/v1
kind: ResourceSet
metadata: {name: dbs, namespace: shop}
spec:
  inputs: [{tenant: inl, size: 3}]
  inputsFrom: [{path: tenants/}]
  resources:
    - apiVersion: example.com/v1
      kind: Database
      metadata: {name: "db-<< inputs.tenant >>"}
      spec: {size: "<< inputs.size >>"}
`
	files := setFiles(set)
	files["deploy/base/tenants/a.yaml"] = "- {tenant: acme, size: 10}\n- {tenant: globex, size: 90}\n"
	snap := snapshot(files)
	out, err := Kustomize(context.Background(), snap, setOpts)
	if err != nil {
		t.Fatal(err)
	}
	s, err := manifest.NewLoader().Load(out, manifest.Options{InputFiles: snap})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range s.Resources {
		names = append(names, r.Namespace+"/"+r.Name)
	}
	if got := strings.Join(names, " "); got != "shop/db-acme shop/db-globex shop/db-inl" {
		t.Errorf("resources %s", got)
	}
	if _, err := manifest.NewLoader().Load(out, manifest.Options{}); err == nil || !strings.Contains(err.Error(), "no YAML or JSON file at deploy/base/tenants") {
		t.Errorf("without InputFiles: %v", err)
	}
}

// TestOverlayChangesOnlyTheSetDocument: an overlay acts on the ResourceSet document, not on
// the resources trueup generates from it after the render; namespace: moves them with the
// set, namePrefix does not rename them, so two overlays of one set conflict.
func TestOverlayChangesOnlyTheSetDocument(t *testing.T) {
	set := strings.ReplaceAll(bigSet(0), "\n\n\n", "")
	for ov, want := range map[string]string{
		"namespace: staging\n":             "staging/db-t0 {\"size\":1} dbs",
		"labels: [{pairs: {env: prod}}]\n": "shop/db-t0 {\"size\":1} dbs",
		"commonAnnotations: {team: a}\n":   "shop/db-t0 {\"size\":1} dbs",
		"patches:\n  - target: {kind: Database}\n    patch: |-\n      - {op: replace, path: /spec/size, value: 7}\n": "shop/db-t0 {\"size\":1} dbs",
	} {
		files := setFiles(set)
		files["deploy/overlays/prod/kustomization.yaml"] = "resources: [../../base]\n" + ov
		out, err := Kustomize(context.Background(), snapshot(files), setOpts)
		if err != nil {
			t.Fatalf("%q: %v", ov, err)
		}
		s, err := manifest.NewLoader().Load(out, manifest.Options{})
		if err != nil {
			t.Fatalf("%q: %v", ov, err)
		}
		var got []string
		for _, r := range s.Resources {
			got = append(got, fmt.Sprintf("%s/%s %s %s%s", r.Namespace, r.Name, r.Spec, r.Labels["trueup.dev/resource-set"], r.Labels["env"]+r.Annotations["team"]))
		}
		if strings.Join(got, "; ") != want {
			t.Errorf("%q: resources %q, want %q", ov, got, want)
		}
	}
	files := setFiles(set)
	files["deploy/overlays/staging/kustomization.yaml"] = "resources: [../../base]\nnamePrefix: staging-\n"
	out, err := Kustomize(context.Background(), snapshot(files), setOpts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := manifest.NewLoader().Load(out, manifest.Options{}); err == nil || !strings.Contains(err.Error(), "duplicate resource shop/Database/db-t0") {
		t.Errorf("two overlays of one set: %v, want a duplicate db-t0", err)
	}
}
