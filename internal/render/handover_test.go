package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/sources"
)

// TestRenderedHandover: the loader reads a render's output (files with RenderedBy, read by
// its JSON scanner) as it reads the same bytes through go-yaml (the files without
// RenderedBy): the same problems at the same files and paths, and resources equal field by
// field (spec JSON, hashes), for every overlay of TestKustomizeSameAsKrusty; the loader
// shows no line in a rendered file. The
// output as rendered holds Kubernetes kinds the loader refuses (no group, fields beside
// spec), which compares the problems; the same documents with a group and their fields
// under spec, written the renderer's way, compare the resources.
func TestRenderedHandover(t *testing.T) {
	t.Parallel()
	for _, c := range equivOverlays {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, err := Kustomize(context.Background(), snapshot(equivFiles(c.kust)), Options{Paths: []string{"ov/x"}})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range out {
				// The shape the scanner reads: one compact JSON document a line.
				for _, doc := range strings.Split(strings.TrimSuffix(string(f.Data), "\n"), "\n---\n") {
					if !json.Valid([]byte(doc)) || strings.Contains(doc, "\n") || !strings.HasPrefix(doc, "{") {
						t.Fatalf("%s: a rendered document that is not one line of JSON:\n%s", f.Path, doc)
					}
				}
			}

			_, errRendered := manifest.NewLoader().Load(out, manifest.Options{})
			_, errPlain := manifest.NewLoader().Load(plain(out), manifest.Options{})
			rendered, plainErrs := problems(t, errRendered), problems(t, errPlain)
			if len(rendered) == 0 {
				t.Fatal("the rendered Kubernetes kinds loaded without a problem")
			}
			for i, e := range rendered {
				if e.File == "" || e.Origin != "rendered by ov/x/kustomization.yaml" || e.Line != 0 {
					t.Errorf("a problem that names no file or kustomization, or a line of the render's text: %+v", e)
				}
				rendered[i].Origin = ""
			}
			// The loader shows no line in a rendered file (the render's text is not the
			// file's): the lines read are compared in internal/manifest (TestRenderedDocuments*).
			for i := range plainErrs {
				plainErrs[i].Line = 0
			}
			rendered, plainErrs = distinct(rendered), distinct(plainErrs)
			if !slices.Equal(rendered, plainErrs) {
				t.Fatalf("problems differ (%d, %d):\n rendered: %v\n     yaml: %v", len(rendered), len(plainErrs), rendered, plainErrs)
			}

			shaped, types := reshape(t, out)
			setRendered, err := manifest.NewLoader().Load(append(shaped, types), manifest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			setPlain, err := manifest.NewLoader().Load(append(plain(shaped), types), manifest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(setRendered.Resources) < 5 || len(setRendered.Resources) != len(setPlain.Resources) {
				t.Fatalf("%d resources rendered, %d through YAML", len(setRendered.Resources), len(setPlain.Resources))
			}
			for i, r := range setRendered.Resources {
				p := setPlain.Resources[i]
				if r.Line != 0 || p.Line == 0 {
					t.Errorf("%s: line %d rendered, %d through YAML", r.Name, r.Line, p.Line)
				}
				p.Line = 0
				if a, b := fields(r), fields(p); a != b {
					t.Errorf("resource %d:\n rendered: %s\n     yaml: %s", i, a, b)
				}
			}
		})
	}
}

// distinct is es sorted, each problem once (the loader reports a problem once per place:
// without lines, the same problem in several documents of a file is one).
func distinct(es manifest.Errors) manifest.Errors {
	slices.SortFunc(es, func(a, b manifest.ValidationError) int { return strings.Compare(a.Error(), b.Error()) })
	return slices.CompactFunc(es, func(a, b manifest.ValidationError) bool { return a.Error() == b.Error() })
}

// plain is files without RenderedBy: the loader reads them through go-yaml.
func plain(files []sources.File) []sources.File {
	out := slices.Clone(files)
	for i := range out {
		out[i].RenderedBy = ""
		out[i].Hash = "plain:" + out[i].Hash
	}
	return out
}

func problems(t *testing.T, err error) manifest.Errors {
	t.Helper()
	var es manifest.Errors
	if err != nil && !errors.As(err, &es) {
		t.Fatal(err)
	}
	return slices.Clone(es)
}

// reshape writes each rendered document as a trueup resource, the renderer's way (compact
// JSON, encoding/json's escapes): a group in its apiVersion, everything but apiVersion, kind
// and metadata under spec. types declares each kind with a schema that takes any object.
func reshape(t *testing.T, out []sources.File) (shaped []sources.File, types sources.File) {
	t.Helper()
	kinds := map[string]string{}
	for _, f := range out {
		var b bytes.Buffer
		for i, doc := range strings.Split(strings.TrimSuffix(string(f.Data), "\n"), "\n---\n") {
			dec := json.NewDecoder(strings.NewReader(doc))
			dec.UseNumber()
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				t.Fatal(err)
			}
			group, version, ok := strings.Cut(m["apiVersion"].(string), "/")
			if !ok {
				group, version = "core", group
			}
			if !strings.Contains(group, ".") {
				group += ".k8s.example.com"
			}
			kind := m["kind"].(string)
			kinds[kind] = group
			spec := map[string]any{}
			for k, v := range m {
				if k != "apiVersion" && k != "kind" && k != "metadata" {
					spec[k] = v
				}
			}
			j, err := json.Marshal(map[string]any{"apiVersion": group + "/" + version, "kind": kind, "metadata": m["metadata"], "spec": noSecretRefs(spec)})
			if err != nil {
				t.Fatal(err)
			}
			if i > 0 {
				b.WriteString("---\n")
			}
			b.Write(j)
			b.WriteByte('\n')
		}
		g := f
		g.Data = b.Bytes()
		g.Hash = "shaped:" + f.Hash
		shaped = append(shaped, g)
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		fmt.Fprintf(&b, "---\napiVersion: trueup.dev/v1\nkind: ResourceType\nmetadata: {name: %s}\nspec:\n  group: %s\n  versions: [{name: v1, schema: {type: object}}]\n  action: {name: noop}\n", k, kinds[k])
	}
	return shaped, sources.File{Path: "types.yaml", Data: []byte(b.String())}
}

// noSecretRefs renames the secretRef keys in v (a Job's envFrom), which trueup would read as
// references to its own secrets.
func noSecretRefs(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if k == "secretRef" {
				k = "secretRefOfKubernetes"
			}
			out[k] = noSecretRefs(e)
		}
		return out
	case []any:
		for i, e := range v {
			v[i] = noSecretRefs(e)
		}
	}
	return v
}

// fields is r's exported fields.
func fields(r manifest.Resource) string {
	return fmt.Sprintf("%s %s %s/%s labels=%v annotations=%v spec=%s specHash=%s metaHash=%s sealed=%q dependsOn=%+v at %s:%d",
		r.APIVersion, r.Kind, r.Namespace, r.Name, r.Labels, r.Annotations, r.Spec, r.SpecHash, r.MetaHash, r.Sealed, r.DependsOn, r.File, r.Line)
}
