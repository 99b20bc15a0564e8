package render

import (
	"bytes"
	"fmt"
	"path"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"
)

// inlining is a build of a kustomization whose plain bases are read as files: the
// kustomization's text with each such base's entry replaced by its files, and where those
// files go in the build's folder (copies: kustomize reads no file out of a kustomization's
// folder).
type inlining struct {
	kustomization []byte
	copies        map[string]string // path in the build → path in the revision
}

// inlinePrefix names the folders of the copies, inside the kustomization's folder.
const inlinePrefix = ".trueup-inline-"

// inline plans the build of the kustomization at dir with its plain bases inlined, nil when
// it has none. A plain base lists only files under its folder under `resources`, and nothing
// else: kustomize accumulates it into its parent as those files' resources in that order,
// with its default transformer configuration, which the parent's holds already. Inlining
// spares the base's own accumulation and its merge into the parent: kustomize checks each
// resource appended against all before it, so that merge costs as much as reading the files.
// A build that fails runs again without inlining (its errors name the base).
func (t *tree) inline(dir string, c *check) *inlining {
	kfile := t.kustomization(dir)
	if c.generating[kfile] {
		return nil
	}
	data := t.files[kfile].Data
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil || len(k.BuildMetadata) > 0 {
		return nil // origin annotations would name the copies
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	root := doc.Content[0]
	var resources *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "resources" {
			resources = root.Content[i+1]
		}
	}
	if resources == nil || resources.Kind != yaml.SequenceNode {
		return nil
	}
	plan := &inlining{copies: map[string]string{}}
	var entries []*yaml.Node
	for i, e := range resources.Content {
		files := t.plainBase(dir, e)
		if files == nil {
			entries = append(entries, e)
			continue
		}
		folder := t.freeFolder(dir, i)
		base := path.Join(dir, e.Value)
		for _, f := range files {
			rel := strings.TrimPrefix(f, base+"/")
			plan.copies[path.Join(folder, rel)] = f
			entries = append(entries, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: path.Join(path.Base(folder), rel)})
		}
	}
	if len(plan.copies) == 0 {
		return nil
	}
	resources.Content = entries
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if enc.Encode(&doc) != nil || enc.Close() != nil || !sameBesidesResources(data, b.Bytes()) {
		return nil
	}
	plan.kustomization = b.Bytes()
	return plan
}

// freeFolder names the folder of the i-th entry's copies: a name no file or folder of the
// revision has.
func (t *tree) freeFolder(dir string, i int) string {
	for n := 0; ; n++ {
		folder := path.Join(dir, fmt.Sprintf("%s%d", inlinePrefix, i))
		if n > 0 {
			folder = path.Join(dir, fmt.Sprintf("%s%d-%d", inlinePrefix, i, n))
		}
		if !t.dirs[folder] && t.files[folder] == nil {
			return folder
		}
	}
}

// plainBase returns the files of the plain base a resources entry e of the kustomization at
// dir names (in the base's order), nil when e is not one.
func (t *tree) plainBase(dir string, e *yaml.Node) []string {
	if e.Kind != yaml.ScalarNode || e.ShortTag() != strTag {
		return nil
	}
	base := path.Join(dir, e.Value)
	if base == "." || base == dir || strings.HasPrefix(dir, base+"/") {
		return nil // the kustomization itself or a folder holding it: kustomize reports the cycle
	}
	kfile := t.kustomization(base)
	if !t.dirs[base] || kfile == "" {
		return nil
	}
	var k types.Kustomization
	if err := k.Unmarshal(t.files[kfile].Data); err != nil || len(k.EnforceFields()) > 0 {
		return nil // kustomize refuses the base (a wrong apiVersion or kind)
	}
	files := k.Resources
	k.Resources = nil
	if k.Kind != "" && k.Kind != types.KustomizationKind || !reflect.DeepEqual(k, types.Kustomization{TypeMeta: k.TypeMeta}) || len(files) == 0 {
		return nil
	}
	out := make([]string, len(files))
	for i, f := range files {
		p := path.Join(base, f)
		if !strings.HasPrefix(p, base+"/") || t.files[p] == nil || t.dirs[p] {
			return nil
		}
		out[i] = p
	}
	return out
}

// sameBesidesResources reports whether two kustomizations read the same but for their
// resources (the YAML encoder does not write every block string back the same).
func sameBesidesResources(a, b []byte) bool {
	var x, y map[string]any
	if sigsyaml.Unmarshal(a, &x) != nil || sigsyaml.Unmarshal(b, &y) != nil {
		return false
	}
	delete(x, "resources")
	delete(y, "resources")
	return reflect.DeepEqual(x, y)
}
