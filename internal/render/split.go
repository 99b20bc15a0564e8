package render

import (
	"bytes"
	"context"
	"path"
	"reflect"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/resid"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/trueup-dev/trueup/internal/manifest"
)

// kustomize checks each resource it appends to a kustomization's set against every one
// before it, twice in a build (the accumulation, the final sort): a kustomization of n
// resources costs n² identity comparisons, a quarter of a render of a hundred resources and
// most of one of thousands. A kustomization whose every step works on each resource alone is
// built in parts of partSize resources instead, one kustomize run each, and the parts'
// resources are put back in the order kustomize gives them. Alone means: the
// kustomization's fields are among names, namespace, labels, annotations and patches with a
// target (no generator, component, replacement, name reference configuration, replica or
// image list, no patch found by its own name, which must match in every part); every
// resource is of a kind kustomize does not know (its selectors concern Kubernetes' own
// kinds; its orders and name references match kinds by name, in any group, and those names
// are refused too); its resources are files read by the plain YAML reader, one identity
// each, none given twice. When any of this does not hold, or a part fails, or fewer
// resources come out than went in, or the parts' resources share an identity, the build is
// one kustomize run as usual, whose result or error stands.

// partSize is the most resources one run of a split build reads. A run costs about as much
// as the identity checks of 40 resources (kustomize reads its transformers' configuration
// anew each time); parts of 40 to 50 balance the two.
const partSize = 50

// partFile is the name of a part's one resource file, in the kustomization's folder.
const partFile = ".trueup-part.yaml"

// splitting is a kustomization's build in parts or directly.
type splitting struct {
	dir       string
	shared    map[string][]byte // every file of the build but the resources split
	kfile     []byte            // the parts' kustomization: resources [partFile], sorted as read
	parts     [][]byte          // each part's resource file; none when there are too few resources
	docs      [][]byte          // the resources' documents, in the order read
	resources int               // len(docs)
	legacy    bool              // the kustomization sorts its output in kustomize's legacy order

	k        types.Kustomization // the kustomization, as kustomize reads it
	files    map[string][]byte   // the build's files, which a direct build's patches read
	directly bool                // it may be built directly (direct.go)
}

// split plans the build of the kustomization kfile in dir over the files of the build in
// parts of at most size resources, or directly (direct.go), nil when it is neither.
func split(dir, kfile string, files map[string][]byte, size int) *splitting {
	openapiOnce.Do(initOpenAPI) // unknownKind reads kustomize's schema
	data := files[kfile]
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil || len(k.EnforceFields()) > 0 || k.Kind != "" && k.Kind != types.KustomizationKind {
		return nil
	}
	// Without sortOptions the order is the order read (options: no reordering).
	legacy := k.SortOptions != nil && k.SortOptions.Order == types.LegacySortOrder
	if k.SortOptions != nil && (k.SortOptions.LegacySortOptions != nil || !legacy && k.SortOptions.Order != types.FIFOSortOrder) {
		return nil
	}
	for _, p := range k.Patches {
		if p.Target == nil || p.Options != nil {
			return nil
		}
	}
	alone := types.Kustomization{TypeMeta: k.TypeMeta, MetaData: k.MetaData, NamePrefix: k.NamePrefix, NameSuffix: k.NameSuffix,
		Namespace: k.Namespace, Labels: k.Labels, CommonAnnotations: k.CommonAnnotations,
		Patches: k.Patches, SortOptions: k.SortOptions, Resources: k.Resources}
	//lint:ignore SA1019 kustomize still reads commonLabels
	alone.CommonLabels = k.CommonLabels
	if !reflect.DeepEqual(k, alone) {
		return nil
	}
	s := &splitting{dir: dir, shared: make(map[string][]byte, len(files)), legacy: legacy}
	ids := map[string]bool{}
	listed := map[string]bool{}
	var docs [][]byte
	for _, r := range k.Resources {
		p := path.Join(dir, r)
		listed[p] = true
		data, ok := files[p]
		if !ok || r != path.Clean(r) || strings.HasPrefix(r, "../") {
			return nil // a folder, a remote base, a file out of the folder: one run
		}
		ds, ok := manifest.Documents(data)
		if !ok {
			return nil
		}
		for _, d := range ds {
			apiVersion, kind, namespace, name, empty, ok := manifest.Identity(d)
			if !ok {
				return nil
			}
			if empty {
				continue
			}
			if !unknownKind(apiVersion, kind) || name == "" {
				return nil
			}
			if namespace == "" {
				namespace = resid.DefaultNamespace // kustomize's effective namespace
			}
			g, v := resid.ParseGroupVersion(apiVersion)
			id := g + "\x00" + v + "\x00" + kind + "\x00" + namespace + "\x00" + name
			if ids[id] {
				return nil
			}
			ids[id] = true
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 {
		return nil
	}
	s.docs, s.resources = docs, len(docs)
	k.FixKustomization()
	s.k = k
	s.files, s.directly = files, ownLabelSpecs(&k) == 0
	for _, n := range kustomizationNames {
		if p := path.Join(dir, n); p != kfile && files[p] != nil {
			s.directly = false // kustomize refuses a folder with two
		}
	}
	if len(docs) < 2*size || files[path.Join(dir, partFile)] != nil {
		if !s.directly {
			return nil // one part: nothing to spare
		}
		return s
	}
	// Parts of even sizes, at most size.
	n := (len(docs) + size - 1) / size
	for i := range n {
		var part bytes.Buffer
		for _, d := range docs[i*len(docs)/n : (i+1)*len(docs)/n] {
			part.WriteString("---\n")
			part.Write(d)
			if len(d) > 0 && d[len(d)-1] != '\n' {
				part.WriteByte('\n')
			}
		}
		s.parts = append(s.parts, part.Bytes())
	}
	for p, d := range files {
		if !listed[p] && p != kfile {
			s.shared[p] = d
		}
	}
	if s.kfile = partKustomization(data); s.kfile == nil {
		if !s.directly {
			return nil
		}
		s.parts = nil
	}
	return s
}

// legacyFirst and legacyLast are the kinds kustomize's legacy order puts first and last,
// by kind alone: a resource of such a kind, even one kustomize does not know, keeps the
// kustomization in one run.
var legacyFirst = map[string]bool{
	"Namespace": true, "ResourceQuota": true, "StorageClass": true, "CustomResourceDefinition": true,
	"ServiceAccount": true, "PodSecurityPolicy": true, "Role": true, "ClusterRole": true, "RoleBinding": true,
	"ClusterRoleBinding": true, "ConfigMap": true, "Secret": true, "Endpoints": true, "Service": true,
	"LimitRange": true, "PriorityClass": true, "PersistentVolume": true, "PersistentVolumeClaim": true,
	"Deployment": true, "StatefulSet": true, "CronJob": true, "PodDisruptionBudget": true,
	"MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true,
}

// nameReferenceKinds are the kinds kustomize's default name references name, as the kind
// referred to or the one holding the reference, whatever their group and version (its
// field specs match them by kind; kustomize 0.21.2). A resource of such a kind keeps the
// kustomization in one run: a reference may cross parts.
var nameReferenceKinds = map[string]bool{
	"APIService": true, "ClusterRole": true, "ClusterRoleBinding": true, "ConfigMap": true, "CronJob": true,
	"DaemonSet": true, "Deployment": true, "HorizontalPodAutoscaler": true, "Ingress": true, "IngressClass": true,
	"Job": true, "MutatingWebhookConfiguration": true, "Node": true, "PersistentVolume": true,
	"PersistentVolumeClaim": true, "Pod": true, "PodTemplate": true, "PriorityClass": true, "ReplicaSet": true,
	"ReplicationController": true, "Role": true, "RoleBinding": true, "Secret": true, "Service": true,
	"ServiceAccount": true, "StatefulSet": true, "StorageClass": true, "ValidatingAdmissionPolicy": true,
	"ValidatingAdmissionPolicyBinding": true, "ValidatingWebhookConfiguration": true,
}

// fieldSpecKinds are the other kinds the field specs of kustomize's default configuration
// name, by group and kind whatever the version (kustomize 0.21.2; TestKindlessSpecs checks
// that every kind they name is refused).
var fieldSpecKinds = map[string]bool{"NetworkPolicy": true}

// unknownKind reports whether kustomize knows nothing of the kind: no schema, no scope, no
// place in the legacy order, in the name references or in its default field specs, not a
// list.
func unknownKind(apiVersion, kind string) bool {
	if apiVersion == "" || kind == "" || legacyFirst[kind] || nameReferenceKinds[kind] || fieldSpecKinds[kind] || strings.HasSuffix(kind, "List") {
		return false
	}
	tm := kyaml.TypeMeta{APIVersion: apiVersion, Kind: kind}
	if _, found := openapi.IsNamespaceScoped(tm); found {
		return false
	}
	return openapi.SchemaForResourceType(tm) == nil
}

// partKustomization is the kustomization's text with resources [partFile] and without
// sortOptions: its output in the order read (the parts' resources are sorted together
// afterwards), nil when it cannot be rewritten.
func partKustomization(data []byte) []byte {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	root := doc.Content[0]
	for i := 0; i < len(root.Content); i += 2 {
		k := root.Content[i].Value
		if k != "resources" && k != "sortOptions" && (strings.EqualFold(k, "resources") || strings.EqualFold(k, "sortOptions")) {
			return nil // kustomize reads field names whatever their case
		}
	}
	set := func(key string, v *yaml.Node) {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == key {
				root.Content[i+1] = v
				return
			}
		}
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
	}
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	set("resources", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{str(partFile)}})
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "sortOptions" {
			root.Content = slices.Delete(root.Content, i, i+2)
			break
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil
	}
	return out
}

// run builds the parts, false when a part fails or the result is not what one run would
// give (one run then decides), or when ctx ends.
func (s *splitting) run(ctx context.Context, kfile string) ([]*resource.Resource, bool) {
	if len(s.parts) == 0 {
		return nil, false
	}
	var all []*resource.Resource
	for _, part := range s.parts {
		if ctx.Err() != nil {
			return nil, false
		}
		rs, ok := s.runPart(kfile, part)
		if !ok {
			return nil, false
		}
		all = append(all, rs...)
	}
	return s.finish(all)
}

// finish checks the resources of a build in parts or a direct one and puts them in the
// kustomization's order, false when one kustomize run must judge.
func (s *splitting) finish(all []*resource.Resource) ([]*resource.Resource, bool) {
	// A resource dropped (local-config, a patch deleting it) still took part in one run's
	// identity checks; a patch may have turned a resource into a kind kustomize knows, or two
	// into one identity: one run judges.
	if len(all) != s.resources {
		return nil, false
	}
	ids := make(map[string]bool, len(all))
	gvks := map[string]resid.Gvk{}
	keys := make([][2]string, len(all))
	for i, r := range all {
		id := r.CurId()
		if !unknownKind(id.Gvk.ApiVersion(), id.Gvk.Kind) {
			return nil, false
		}
		key := id.Gvk.String() + "|" + id.EffectiveNamespace() + "|" + id.Name
		if ids[key] {
			return nil, false
		}
		ids[key] = true
		keys[i] = [2]string{legacyGVK(id.Gvk), legacyID(id)}
		// kustomize's sort tells kinds apart by their fields, its keys by their text.
		if g, ok := gvks[keys[i][0]]; ok && !g.Equals(id.Gvk) {
			return nil, false
		}
		gvks[keys[i][0]] = id.Gvk
	}
	if s.legacy {
		idx := make([]int, len(all))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, b int) bool {
			x, y := keys[idx[a]], keys[idx[b]]
			if x[0] != y[0] {
				return x[0] < y[0]
			}
			return x[1] < y[1]
		})
		sorted := make([]*resource.Resource, len(all))
		for i, j := range idx {
			sorted[i] = all[j]
		}
		all = sorted
	}
	return all, true
}

// runPart builds one part, false when kustomize fails or panics on it.
func (s *splitting) runPart(kfile string, part []byte) (rs []*resource.Resource, ok bool) {
	defer func() {
		if recover() != nil {
			rs, ok = nil, false
		}
	}()
	fs := filesys.MakeFsInMemory()
	if writeTree(fs, s.shared) != nil || writeTree(fs, map[string][]byte{kfile: s.kfile, path.Join(s.dir, partFile): part}) != nil {
		return nil, false
	}
	runs.Add(1)
	m, err := krusty.MakeKustomizer(options()).Run(fs, srcDir+"/"+s.dir)
	if err != nil {
		return nil, false
	}
	return m.Resources(), true
}

// legacyGVK and legacyID are the keys of kustomize's legacy order for kinds outside its
// lists of first and last kinds: group, version and kind, then the identity.
func legacyGVK(g resid.Gvk) string {
	return orMark(g.Group, "~G") + "_" + orMark(g.Version, "~V") + "_" + orMark(g.Kind, "~K")
}

func legacyID(id resid.ResId) string {
	return id.Gvk.String() + "|" + orMark(id.Namespace, "~X") + "|" + orMark(id.Name, "~N")
}

func orMark(s, mark string) string {
	if s == "" {
		return mark
	}
	return s
}
