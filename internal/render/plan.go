package render

import (
	"path"
	"reflect"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/resid"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/trueup-dev/trueup/internal/manifest"
)

// kustomize checks each resource it appends to a kustomization's set against every one
// before it, twice in a build (the accumulation, the final sort): a kustomization of n
// resources costs n² identity comparisons, a quarter of a render of a hundred resources and
// most of one of thousands. A kustomization whose every step works on each resource alone is
// built directly instead (direct.go). Alone means: the kustomization's fields are among
// names, namespace, labels (naming no field specs of their own), annotations and patches
// with a target (no generator, component, replacement, name reference configuration, replica
// or image list, no patch found by its own name); every resource is of a kind kustomize
// does not know (its selectors and field specs concern Kubernetes' own kinds; its orders,
// name references and field specs match kinds by name, in any group, and those names are
// refused too); its resources are files read by the plain YAML reader, one identity each,
// none given twice. When any of this does not hold, or the direct build fails, the build is
// one kustomize run as usual, whose result or error stands.

// directBuild is the plan of a kustomization's direct build.
type directBuild struct {
	dir    string
	docs   [][]byte // the resources' documents, in the order read
	legacy bool     // the kustomization sorts its output in kustomize's legacy order

	k     types.Kustomization // the kustomization, as kustomize reads it
	files map[string][]byte   // the build's files, which its patches read
}

// planDirect plans the direct build of the kustomization kfile in dir over the files of the
// build, nil when it is not one to build directly.
func planDirect(dir, kfile string, files map[string][]byte) *directBuild {
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
	d := &directBuild{dir: dir, legacy: legacy, files: files}
	ids := map[string]bool{}
	var docs [][]byte
	for _, r := range k.Resources {
		p := path.Join(dir, r)
		data, ok := files[p]
		if !ok || r != path.Clean(r) || strings.HasPrefix(r, "../") {
			return nil // a folder, a remote base, a file out of the folder: one run
		}
		ds, ok := manifest.Documents(data)
		if !ok {
			return nil
		}
		for _, doc := range ds {
			apiVersion, kind, namespace, name, empty, ok := manifest.Identity(doc)
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
			docs = append(docs, doc)
		}
	}
	if len(docs) == 0 || ownLabelSpecs(&k) > 0 {
		return nil
	}
	for _, n := range kustomizationNames {
		if p := path.Join(dir, n); p != kfile && files[p] != nil {
			return nil // kustomize refuses a folder with two
		}
	}
	k.FixKustomization()
	d.docs, d.k = docs, k
	return d
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
// kustomization in one run: kustomize fixes references across resources.
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

// finish checks the resources of a direct build (as many as it read: build refuses a
// resource dropped) and puts them in the kustomization's order, false when one kustomize run
// must judge: a patch may have turned a resource into a kind kustomize knows, or two into one
// identity.
func (d *directBuild) finish(all []*resource.Resource) ([]*resource.Resource, bool) {
	if !distinctIDs(all) {
		return nil, false
	}
	gvks := map[string]resid.Gvk{}
	keys := make([][2]string, len(all))
	for i, r := range all {
		id := r.CurId()
		if !unknownKind(id.Gvk.ApiVersion(), id.Gvk.Kind) {
			return nil, false
		}
		keys[i] = [2]string{legacyGVK(id.Gvk), legacyID(id)}
		// kustomize's sort tells kinds apart by their fields, its keys by their text.
		if g, ok := gvks[keys[i][0]]; ok && !g.Equals(id.Gvk) {
			return nil, false
		}
		gvks[keys[i][0]] = id.Gvk
	}
	if d.legacy {
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
