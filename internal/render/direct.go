package render

import (
	"bytes"
	"path"
	"strings"

	//lint:ignore SA1019 the only public access to kustomize's own transformers (api 0.21); a direct build is checked against krusty by TestKustomizeSameAsKrusty
	"sigs.k8s.io/kustomize/api/builtins"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// A kustomization that split accepts is built directly when its patches are found (inline
// or in a file of its folder) and its labels name no field specs of their own: its resources
// are read by kustomize's reader and each goes alone through kustomize's transformers,
// configured as a kustomize run configures them (the same plugins, in the same order, with
// the field specs of kustomize's defaults that apply to kinds it does not know), then through
// the clean-up of a run's end. Nothing of a run's accumulation is left: no resource map
// checking each resource against all before it, no reading of the transformers'
// configuration per build. The checks of a split build's end apply (every resource out,
// identities distinct, kinds still unknown); any failure hands the build to kustomize.

// kindlessSpecs are, for each section of kustomize's default transformer configuration
// (kustomize 0.21.2), its field specs that name no kind, group or version: the only ones
// that apply to a kind kustomize does not know. TestKindlessSpecs reads them from kustomize.
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

// directPatches returns the kustomization's patches with their text (a patch's path read
// from files, within dir), false when one cannot be read so or a label names field specs.
func directPatches(k *types.Kustomization, dir string, files map[string][]byte) ([]types.Patch, bool) {
	for _, l := range k.Labels {
		if len(l.FieldSpecs) > 0 {
			return nil, false
		}
	}
	out := make([]types.Patch, len(k.Patches))
	for i, p := range k.Patches {
		out[i] = p
		if p.Path == "" || p.Patch != "" {
			continue // kustomize's configuration judges
		}
		if p.Path != path.Clean(p.Path) || path.IsAbs(p.Path) || strings.HasPrefix(p.Path, "../") || p.Path == ".." {
			return nil, false
		}
		data, ok := files[path.Join(dir, p.Path)]
		if !ok {
			return nil, false
		}
		out[i].Path, out[i].Patch = "", string(data)
	}
	return out, true
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
func (s *splitting) transformers() ([]step, error) {
	k := &s.k
	h := resmap.NewPluginHelpers(nil, nil, resmap.NewFactory(resourceFactory), types.DisabledPluginConfig())
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
	for _, p := range s.patches {
		c := struct {
			Patch  string          `json:"patch,omitempty"`
			Target *types.Selector `json:"target,omitempty"`
		}{p.Patch, p.Target}
		if err := add(builtins.NewPatchTransformerPlugin(), c); err != nil {
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

// direct builds the kustomization in process, false when kustomize must (a failure, a
// panic, a resource dropped or made one of another, a kind it knows).
func (s *splitting) direct() (rs []*resource.Resource, ok bool) {
	defer func() {
		if recover() != nil {
			rs, ok = nil, false
		}
	}()
	ts, err := s.transformers()
	if err != nil {
		return nil, false
	}
	var all bytes.Buffer
	for _, d := range s.docs {
		all.WriteString("---\n")
		all.Write(d)
		if len(d) > 0 && d[len(d)-1] != '\n' {
			all.WriteByte('\n')
		}
	}
	read, err := resourceFactory.SliceFromBytes(all.Bytes())
	if err != nil || len(read) != s.resources {
		return nil, false
	}
	// kustomize refuses an identity given twice as it reads them.
	ids := make(map[string]bool, len(read))
	for _, r := range read {
		id := r.CurId()
		key := id.Gvk.String() + "|" + id.EffectiveNamespace() + "|" + id.Name
		if ids[key] {
			return nil, false
		}
		ids[key] = true
	}
	out := make([]*resource.Resource, 0, len(read))
	for _, r := range read {
		m := resmap.New()
		if m.Append(r) != nil {
			return nil, false
		}
		for _, t := range ts {
			if rs := m.Resources(); t.target != nil && (len(rs) != 1 || !mayMatch(t.target, rs[0])) {
				continue
			}
			if t.Transform(m) != nil {
				return nil, false
			}
			m.DropEmpties() // as a run does after each transformer
		}
		if m.Size() != 1 {
			return nil, false // deleted by a patch: one run's identity checks saw it
		}
		out = append(out, m.Resources()...)
	}
	// A run drops local-config resources at its end; one that would is for kustomize.
	nodes := make([]*kyaml.RNode, len(out))
	for i, r := range out {
		nodes[i] = &r.RNode
	}
	if kept, err := resourceFactory.DropLocalNodes(nodes); err != nil || len(kept) != len(out) {
		return nil, false
	}
	// The end of a run: build, origin and transformer annotations removed.
	for _, r := range out {
		r.RemoveBuildAnnotations()
		if r.SetOrigin(nil) != nil || r.ClearTransformations() != nil {
			return nil, false
		}
	}
	return s.finish(out)
}
