package render

import (
	"bytes"
	"errors"
	"fmt"
	"path"

	//lint:ignore SA1019 the only public access to kustomize's own transformers (api 0.21); a direct build is checked against krusty by TestKustomizeSameAsKrusty
	"sigs.k8s.io/kustomize/api/builtins"
	"sigs.k8s.io/kustomize/api/ifc"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// A kustomization that split accepts whose labels name no field specs of their own is built
// directly: its resources are read by kustomize's reader, and each goes through kustomize's
// transformers in a one-resource map, configured as a kustomize run configures them (the
// same plugins, in the same order, with the field specs of kustomize's defaults that apply
// to the kinds split accepts), then through the clean-up of a run's end. What a run does
// across resources is checked instead: identities distinct as read and after each patch (a
// strategic patch adds every resource back with its identity checks), no resource dropped
// or emptied, no build annotation kustomize acts on. Nothing of a run's accumulation is
// left: no resource map checking each resource against all before it, no reading of the
// transformers' configuration per build. The checks of a split build's end apply (every
// resource out, identities distinct, kinds still unknown); any failure hands the build to
// kustomize.

// kindlessSpecs are, for each section of kustomize's default transformer configuration
// (kustomize 0.21.2), its field specs that name no kind, group or version: the only ones
// that apply to the kinds split accepts (unknownKind refuses every kind the others name).
// TestKindlessSpecs reads them from kustomize.
var kindlessSpecs = map[string]types.FsSlice{
	"namePrefix":                {{Path: "metadata/name"}},
	"nameSuffix":                {{Path: "metadata/name"}},
	"commonLabels":              {{Path: "metadata/labels", CreateIfNotPresent: true}},
	"templateLabels":            {{Path: "metadata/labels", CreateIfNotPresent: true}},
	"volumeClaimTemplateLabels": nil,
	"commonAnnotations":         {{Path: "metadata/annotations", CreateIfNotPresent: true}},
	"namespace":                 nil,
	// labels: kustomize's defaults have none.
}

// resourceFactory reads resources as kustomize's runs do.
var resourceFactory = provider.NewDefaultDepProvider().GetResourceFactory()

// ownLabelSpecs counts the field specs the kustomization's labels name of their own.
func ownLabelSpecs(k *types.Kustomization) int {
	n := 0
	for _, l := range k.Labels {
		n += len(l.FieldSpecs)
	}
	return n
}

// transformerAnnotations are the build annotations kustomize's transformers write as they
// rename (a run's end removes them); a resource carrying another (a name change allowed, a
// hash suffix asked for) is one kustomize acts on.
var transformerAnnotations = map[string]bool{
	"internal.config.kubernetes.io/previousKinds": true, "internal.config.kubernetes.io/previousNames": true,
	"internal.config.kubernetes.io/previousNamespaces": true, "internal.config.kubernetes.io/prefixes": true,
	"internal.config.kubernetes.io/suffixes": true,
}

// actedOn reports whether r carries a build annotation kustomize acts on.
func actedOn(r *resource.Resource) bool {
	ann := r.GetAnnotations()
	for _, a := range resource.BuildAnnotations {
		if _, ok := ann[a]; ok && !transformerAnnotations[a] {
			return true
		}
	}
	return false
}

// distinctIDs reports whether the resources' identities are distinct, as kustomize's resource
// map requires.
func distinctIDs(rs []*resource.Resource) bool {
	ids := make(map[string]bool, len(rs))
	for _, r := range rs {
		id := r.CurId()
		key := id.Gvk.String() + "|" + id.EffectiveNamespace() + "|" + id.Name
		if ids[key] {
			return false
		}
		ids[key] = true
	}
	return true
}

// folderLoader is the loader of a direct build's patch files: the files of the build in the
// kustomization's folder and below, as kustomize's loader restricted to that folder reads
// them. It loads nothing else; a build whose patch it cannot load goes to kustomize.
type folderLoader struct {
	dir   string
	files map[string][]byte
}

func (l folderLoader) Repo() string { return "" }
func (l folderLoader) Root() string { return l.dir }
func (l folderLoader) New(string) (ifc.Loader, error) {
	return nil, errors.New("no bases in a direct build")
}
func (l folderLoader) Cleanup() error { return nil }
func (l folderLoader) Load(location string) ([]byte, error) {
	p := path.Join(l.dir, location)
	if path.IsAbs(location) || p == l.dir || !under(l.dir, p) {
		return nil, fmt.Errorf("%s: not a file of the folder", location)
	}
	data, ok := l.files[p]
	if !ok {
		return nil, fmt.Errorf("%s: no such file", location)
	}
	return data, nil
}

// step is one of a kustomization's transformers, with its patch's target when it has one.
type step struct {
	resmap.Transformer
	target *types.SelectorRegex
}

// mayMatch reports whether r may be the target's: kustomize's selection of a patch's
// targets (resmap's Select) but for the label and annotation selectors, which the patch
// itself applies. It spares the patch's own selection, which compiles the target's
// expressions on each call, on resources it would not take.
func mayMatch(sr *types.SelectorRegex, r *resource.Resource) bool {
	org, cur := r.OrgId(), r.CurId()
	return (sr.MatchNamespace(org.EffectiveNamespace()) || sr.MatchNamespace(cur.EffectiveNamespace())) &&
		(sr.MatchName(org.Name) || sr.MatchName(cur.Name)) && sr.MatchGvk(r.GetGvk())
}

// transformers are the kustomization's transformers for kinds kustomize does not know, in
// the order and with the configuration of a kustomize run.
func (d *directBuild) transformers() ([]step, error) {
	k := &d.k
	h := resmap.NewPluginHelpers(folderLoader{d.dir, d.files}, nil, resmap.NewFactory(resourceFactory), types.DisabledPluginConfig())
	var out []step
	add := func(p resmap.TransformerPlugin, config any) error {
		y, err := sigsyaml.Marshal(config)
		if err != nil {
			return err
		}
		if err := p.Config(h, y); err != nil {
			return err
		}
		out = append(out, step{Transformer: p})
		return nil
	}
	for _, p := range k.Patches {
		c := struct {
			Path   string          `json:"path,omitempty"`
			Patch  string          `json:"patch,omitempty"`
			Target *types.Selector `json:"target,omitempty"`
		}{p.Path, p.Patch, p.Target}
		if err := add(builtins.NewPatchTransformerPlugin(), c); err != nil {
			return nil, err
		}
		// What the patch refuses before it selects (several strategic patches with one
		// target), it refuses on no resource too.
		if err := out[len(out)-1].Transform(resmap.New()); err != nil {
			return nil, err
		}
		sr, err := types.NewSelectorRegex(p.Target)
		if err != nil {
			return nil, err
		}
		out[len(out)-1].target = sr
	}
	if k.Namespace != "" {
		c := struct {
			types.ObjectMeta `json:"metadata,omitempty"`
			FieldSpecs       []types.FieldSpec `json:"fieldSpecs,omitempty"`
		}{types.ObjectMeta{Namespace: k.Namespace}, kindlessSpecs["namespace"]}
		if err := add(builtins.NewNamespaceTransformerPlugin(), c); err != nil {
			return nil, err
		}
	}
	type nameConfig struct {
		Prefix     string            `json:"prefix,omitempty"`
		Suffix     string            `json:"suffix,omitempty"`
		FieldSpecs []types.FieldSpec `json:"fieldSpecs"`
	}
	if k.NamePrefix != "" {
		if err := add(builtins.NewPrefixTransformerPlugin(), nameConfig{Prefix: k.NamePrefix, FieldSpecs: kindlessSpecs["namePrefix"]}); err != nil {
			return nil, err
		}
	}
	if k.NameSuffix != "" {
		if err := add(builtins.NewSuffixTransformerPlugin(), nameConfig{Suffix: k.NameSuffix, FieldSpecs: kindlessSpecs["nameSuffix"]}); err != nil {
			return nil, err
		}
	}
	type labelConfig struct {
		Labels     map[string]string `json:"labels,omitempty"`
		FieldSpecs []types.FieldSpec `json:"fieldSpecs,omitempty"`
	}
	//lint:ignore SA1019 kustomize still reads commonLabels
	common := k.CommonLabels
	if len(k.Labels) > 0 || len(common) > 0 {
		for _, l := range k.Labels {
			// Merged as kustomize merges them, from none: the label names no field specs of
			// its own and the defaults' labels section is empty.
			var fss types.FsSlice
			var err error
			if l.IncludeSelectors {
				fss, err = fss.MergeAll(kindlessSpecs["commonLabels"])
			} else {
				if l.IncludeTemplates {
					if fss, err = fss.MergeAll(kindlessSpecs["templateLabels"]); err != nil {
						return nil, err
					}
				}
				if l.IncludeVolumeClaimTemplates {
					if fss, err = fss.MergeAll(kindlessSpecs["volumeClaimTemplateLabels"]); err != nil {
						return nil, err
					}
				}
				fss, err = fss.MergeOne(types.FieldSpec{Path: "metadata/labels", CreateIfNotPresent: true})
			}
			if err != nil {
				return nil, err
			}
			if err := add(builtins.NewLabelTransformerPlugin(), labelConfig{l.Pairs, fss}); err != nil {
				return nil, err
			}
		}
		if err := add(builtins.NewLabelTransformerPlugin(), labelConfig{common, kindlessSpecs["commonLabels"]}); err != nil {
			return nil, err
		}
	}
	if len(k.CommonAnnotations) > 0 {
		c := struct {
			Annotations map[string]string `json:"annotations,omitempty"`
			FieldSpecs  []types.FieldSpec `json:"fieldSpecs,omitempty"`
		}{k.CommonAnnotations, kindlessSpecs["commonAnnotations"]}
		if err := add(builtins.NewAnnotationsTransformerPlugin(), c); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// build builds the kustomization in process, false when kustomize must (a failure, a
// panic, a resource dropped or made one of another, a kind it knows).
func (d *directBuild) build() (rs []*resource.Resource, ok bool) {
	defer func() {
		if recover() != nil {
			rs, ok = nil, false
		}
	}()
	steps, err := d.transformers()
	if err != nil {
		return nil, false
	}
	var all bytes.Buffer
	for _, doc := range d.docs {
		all.WriteString("---\n")
		all.Write(doc)
		if len(doc) > 0 && doc[len(doc)-1] != '\n' {
			all.WriteByte('\n')
		}
	}
	cur, err := resourceFactory.SliceFromBytes(all.Bytes())
	if err != nil || len(cur) != len(d.docs) || !distinctIDs(cur) {
		return nil, false
	}
	maps := make([]resmap.ResMap, len(cur))
	for i, r := range cur {
		if actedOn(r) {
			return nil, false
		}
		maps[i] = resmap.New()
		if maps[i].Append(r) != nil {
			return nil, false
		}
	}
	for _, st := range steps {
		for i, m := range maps {
			if st.target != nil && !mayMatch(st.target, cur[i]) {
				continue
			}
			if st.Transform(m) != nil {
				return nil, false
			}
			m.DropEmpties() // as a run does after each transformer
			if m.Size() != 1 {
				return nil, false // deleted or emptied: one run's identity checks saw it
			}
			cur[i] = m.Resources()[0]
		}
		if st.target != nil && !distinctIDs(cur) {
			return nil, false
		}
	}
	// A run drops local-config resources at its end; one that would is for kustomize.
	nodes := make([]*kyaml.RNode, len(cur))
	for i, r := range cur {
		if actedOn(r) {
			return nil, false
		}
		// A run's name references find resources by their previous identities too (read
		// from build annotations a resource may carry as read or be given by a patch);
		// lists of those kustomize cannot read back make it panic (recovered: one run).
		for _, id := range r.PrevIds() {
			if !unknownKind(id.Gvk.ApiVersion(), id.Gvk.Kind) {
				return nil, false
			}
		}
		nodes[i] = &r.RNode
	}
	if kept, err := resourceFactory.DropLocalNodes(nodes); err != nil || len(kept) != len(cur) {
		return nil, false
	}
	// The end of a run: build, origin and transformer annotations removed.
	for _, r := range cur {
		r.RemoveBuildAnnotations()
		if r.SetOrigin(nil) != nil || r.ClearTransformations() != nil {
			return nil, false
		}
	}
	return d.finish(cur)
}
