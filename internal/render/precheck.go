package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"

	"go.yaml.in/yaml/v3"
	//lint:ignore SA1019 the configurations kustomize decodes, no other package exports them
	"sigs.k8s.io/kustomize/api/builtins"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/sources"
)

// kustomizationNames are the file names kustomize reads as a folder's kustomization, in its
// order of preference.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// tree is a revision's files as the pre-check and the renderer see them: by path (relative
// to the source's root, as sources.File.Path), with the folders that hold them.
type tree struct {
	files map[string]*sources.File
	dirs  map[string]bool
	// root is the source's path: nothing outside it is read.
	root string
	// directs counts the builds made directly (tests; nil: not counted); noDirect builds none
	// directly (tests).
	directs  *atomic.Int64
	noDirect bool
}

func newTree(files []sources.File, root string) *tree {
	t := &tree{files: make(map[string]*sources.File, len(files)), dirs: map[string]bool{".": true}, root: cleanRoot(root)}
	for i := range files {
		f := &files[i]
		t.files[f.Path] = f
		for d := path.Dir(f.Path); d != "." && !t.dirs[d]; d = path.Dir(d) {
			t.dirs[d] = true
		}
	}
	return t
}

func cleanRoot(root string) string {
	root = path.Clean(strings.Trim(root, "/"))
	if root == "" {
		return "."
	}
	return root
}

// within reports whether p (cleaned, relative) is the source's path or below it.
func (t *tree) within(p string) bool { return under(t.root, p) }

// under reports whether p is dir or below it (both cleaned and relative; "." is the root).
func under(dir, p string) bool {
	if dir == "." {
		return p != ".." && !strings.HasPrefix(p, "../")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// kustomization returns the kustomization file of folder dir, "" when it has none.
func (t *tree) kustomization(dir string) string {
	for _, n := range kustomizationNames {
		p := path.Join(dir, n)
		if _, ok := t.files[p]; ok {
			return p
		}
	}
	return ""
}

// check walks the kustomization at dir and everything it reads, refusing what would make
// kustomize leave the revision's files: remote bases and URLs (kustomize clones them with
// git or fetches them over HTTP), absolute paths, paths out of the source's path, Helm,
// exec and KRM-function plugins, encrypted files. It returns the files the build reads and
// an estimate of the resources it accumulates. This check is the security boundary:
// kustomize has no option that refuses remote bases.
type check struct {
	t         *tree
	read      map[string]bool
	done      map[string]bool
	stack     []string
	resources int
	// origins are the files read as resources only: the build marks their documents with
	// their path (originKey). other are the files read otherwise (patches, configurations, …).
	origins, other map[string]bool
	// generating are the kustomizations with a configMapGenerator or a secretGenerator.
	generating map[string]bool
}

func (t *tree) check(dir string) (*check, error) {
	c := &check{t: t, read: map[string]bool{}, done: map[string]bool{}, origins: map[string]bool{}, other: map[string]bool{}, generating: map[string]bool{}}
	return c, c.dir(dir, "", "")
}

// refusal is a problem of one entry of a kustomization.
func refusal(kfile, entry, format string, args ...any) error {
	if entry == "" {
		return errorAt(kfile, format, args...)
	}
	return errorAt(kfile, "%s: %s", entry, fmt.Sprintf(format, args...))
}

// dir checks the kustomization of folder dir, which entry at of kustomization from names
// ("" for a root).
func (c *check) dir(dir, from, at string) error {
	for i, d := range c.stack {
		if d == dir {
			return refusal(from, at, "kustomizations form a cycle: %s", strings.Join(append(c.stack[i:], dir), " → "))
		}
	}
	if c.done[dir] {
		return nil
	}
	kfile := c.t.kustomization(dir)
	if kfile == "" {
		if from == "" {
			return errorAt(dir, "no kustomization.yaml in the folder")
		}
		return refusal(from, at, "%s has no kustomization.yaml", dir)
	}
	c.stack = append(c.stack, dir)
	defer func() { c.stack = c.stack[:len(c.stack)-1]; c.done[dir] = true }()
	data, err := c.file(kfile, kfile, "")
	if err != nil {
		return err
	}
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return errorAt(kfile, "%s", strings.TrimPrefix(err.Error(), "invalid Kustomization: "))
	}
	k.FixKustomization() // bases → resources, imageTags → images, …

	if len(k.HelmCharts) > 0 || k.HelmGlobals != nil || len(k.HelmChartInflationGenerator) > 0 {
		return refusal(kfile, "helmCharts", "Helm charts are not rendered (render: kustomize reads only the revision's files and runs no program)")
	}
	if len(k.OpenAPI) > 0 {
		// krusty installs it process-wide, under the kustomizations rendered in parallel.
		return refusal(kfile, "openapi", "a custom OpenAPI schema is not supported")
	}
	for i, e := range k.Resources {
		if err := c.resource(dir, kfile, fmt.Sprintf("resources[%d]", i), e); err != nil {
			return err
		}
	}
	for i, e := range k.Components {
		if err := c.resource(dir, kfile, fmt.Sprintf("components[%d]", i), e); err != nil {
			return err
		}
	}
	var refs []ref
	for i, e := range k.Crds {
		refs = append(refs, ref{fmt.Sprintf("crds[%d]", i), e})
	}
	for i, e := range k.Configurations {
		refs = append(refs, ref{fmt.Sprintf("configurations[%d]", i), e})
	}
	for i, p := range k.Patches {
		refs = append(refs, ref{fmt.Sprintf("patches[%d].path", i), p.Path})
	}
	// The deprecated fields still build, so they are checked too.
	//lint:ignore SA1019 kustomize still reads patchesJson6902
	for i, p := range k.PatchesJson6902 {
		refs = append(refs, ref{fmt.Sprintf("patchesJson6902[%d].path", i), p.Path})
	}
	//lint:ignore SA1019 kustomize still reads patchesStrategicMerge
	psm, err := strategicMerge(kfile, "patchesStrategicMerge", k.PatchesStrategicMerge)
	if err != nil {
		return err
	}
	refs = append(refs, psm...)
	for i, r := range k.Replacements {
		refs = append(refs, ref{fmt.Sprintf("replacements[%d].path", i), r.Path})
	}
	if len(k.ConfigMapGenerator)+len(k.SecretGenerator) > 0 {
		c.generating[kfile] = true
	}
	for i, g := range k.ConfigMapGenerator {
		refs = append(refs, kvRefs(fmt.Sprintf("configMapGenerator[%d]", i), g.KvPairSources)...)
	}
	for i, g := range k.SecretGenerator {
		refs = append(refs, kvRefs(fmt.Sprintf("secretGenerator[%d]", i), g.KvPairSources)...)
	}
	if err := c.refs(dir, kfile, refs); err != nil {
		return err
	}
	for _, pl := range []struct {
		field   string
		entries []string
	}{{"generators", k.Generators}, {"transformers", k.Transformers}, {"validators", k.Validators}} {
		for i, e := range pl.entries {
			if err := c.plugin(dir, kfile, fmt.Sprintf("%s[%d]", pl.field, i), e); err != nil {
				return err
			}
		}
	}
	return nil
}

// ref is an entry that names a file: where it is (at) and its value (p).
type ref struct{ at, p string }

// refs checks entries that name files: each a file of the revision.
func (c *check) refs(dir, kfile string, refs []ref) error {
	for _, r := range refs {
		if r.p == "" {
			continue
		}
		p, err := c.resolve(dir, kfile, r.at, r.p)
		if err != nil {
			return err
		}
		if c.t.dirs[p] {
			return refusal(kfile, r.at, "%q is a folder, not a file", r.p)
		}
		if _, err := c.file(p, kfile, r.at); err != nil {
			return err
		}
		c.other[p] = true
	}
	return nil
}

// kvRefs returns the files of a ConfigMap or Secret generator.
func kvRefs(at string, kv types.KvPairSources) []ref {
	var refs []ref
	for j, f := range kv.FileSources {
		if _, p, ok := strings.Cut(f, "="); ok {
			f = p
		}
		refs = append(refs, ref{fmt.Sprintf("%s.files[%d]", at, j), f})
	}
	for j, f := range kv.EnvSources {
		refs = append(refs, ref{fmt.Sprintf("%s.envs[%d]", at, j), f})
	}
	return append(refs, ref{at + ".env", kv.EnvSource})
}

// strategicMerge returns the files of strategic-merge patch entries, which are patches
// written in place or files' paths. kustomize reads an entry that does not parse as a
// patch as a path, or fetches it: a URL is refused before the in-place test.
func strategicMerge(kfile, field string, entries []types.PatchStrategicMerge) ([]ref, error) {
	var refs []ref
	for i, p := range entries {
		s, at := string(p), fmt.Sprintf("%s[%d]", field, i)
		if fetched(s) {
			return nil, refusal(kfile, at, "%q is a remote base; render: kustomize reads only the revision's files", s)
		}
		if !inline(s) {
			refs = append(refs, ref{at, s})
		}
	}
	return refs, nil
}

// inline reports whether a strategic-merge patch entry is a patch written in place rather
// than a file's path: a YAML mapping with a kind or an apiVersion.
func inline(s string) bool {
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(s), &doc); err != nil {
		return false
	}
	_, kind := doc["kind"]
	_, api := doc["apiVersion"]
	return kind || api
}

// resource checks a resources/components entry: a file of the revision or a folder with a
// kustomization.
func (c *check) resource(dir, kfile, at, entry string) error {
	p, err := c.resolve(dir, kfile, at, entry)
	if err != nil {
		return err
	}
	if c.t.dirs[p] {
		return c.dir(p, kfile, at)
	}
	data, err := c.file(p, kfile, at)
	if err != nil {
		return err
	}
	c.resources += countDocuments(data)
	c.origins[p] = true
	return nil
}

// resolve turns an entry into a path of the revision, refusing anything kustomize would
// look for elsewhere.
func (c *check) resolve(dir, kfile, at, entry string) (string, error) {
	const only = "render: kustomize reads only the revision's files"
	switch {
	case remote(entry):
		return "", refusal(kfile, at, "%q is a remote base; %s", entry, only)
	case path.IsAbs(entry) || strings.HasPrefix(entry, `\`) || (len(entry) > 1 && entry[1] == ':'):
		return "", refusal(kfile, at, "%q is an absolute path; paths are relative to the kustomization", entry)
	}
	p := path.Join(dir, entry)
	if !c.t.within(p) {
		return "", refusal(kfile, at, "%q leads out of the source's path %q", entry, c.t.root)
	}
	if _, ok := c.t.files[p]; !ok && !c.t.dirs[p] {
		if looksLikeHost(entry) {
			return "", refusal(kfile, at, "%q is a remote base; %s", entry, only)
		}
		// kustomize would take a missing path for a repository URL and try to clone it.
		return "", refusal(kfile, at, "%q does not exist in the revision", entry)
	}
	return p, nil
}

// remote reports whether an entry names something outside the revision: a URL kustomize
// fetches over HTTP, or a Git repository in any of the spellings its URL parser
// (api/internal/git.NewRepoSpecFromURL) accepts. kustomize tries that parser before the
// file system, so an entry is refused even when a folder of that name exists.
func remote(entry string) bool {
	lower := strings.ToLower(strings.TrimSpace(entry))
	first, _, _ := strings.Cut(lower, "/")
	switch {
	case strings.Contains(lower, "://"), strings.Contains(lower, "//"),
		strings.Contains(lower, "?ref="), strings.Contains(lower, "?version="),
		strings.HasPrefix(lower, "git::"), strings.HasPrefix(lower, "gh:"),
		strings.HasPrefix(lower, "github.com/"), strings.HasPrefix(lower, "github.com:"),
		strings.Contains(first, ":"), gitUser.MatchString(entry),
		strings.Contains(lower, "_git/"):
		return true
	}
	if u, err := url.Parse(entry); err == nil && u.Scheme != "" {
		// kustomize fetches http and https URLs; no other scheme is a path.
		return true
	}
	return repoURL(entry)
}

// fetched reports whether kustomize's loader fetches an entry over HTTP rather than read
// it (api/internal/loader.IsRemoteFile).
func fetched(entry string) bool {
	u, err := url.Parse(entry)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https")
}

// gitUser is the user@ prefix kustomize's URL parser takes for an SCP-style repository.
var gitUser = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*@`)

// repoURL asks kustomize's own URL parser, through resource.Origin, whether it reads entry
// as a repository.
func repoURL(entry string) (repo bool) {
	defer func() {
		if recover() != nil {
			repo = true
		}
	}()
	return (&resource.Origin{}).Append(entry).Repo != ""
}

// looksLikeHost reports whether an entry's first segment is a host name (gitlab.com/org/repo).
func looksLikeHost(entry string) bool {
	first, _, _ := strings.Cut(entry, "/")
	return strings.Contains(first, ".") && !strings.HasPrefix(first, ".") && strings.Contains(entry, "/")
}

// file marks p as read and returns its data, refusing a file the source did not read and an
// encrypted one.
func (c *check) file(p, kfile, at string) ([]byte, error) {
	f := c.t.files[p]
	if f == nil {
		return nil, refusal(kfile, at, "%s does not exist in the revision", p)
	}
	if f.Refused != "" {
		return nil, refusal(kfile, at, "%s was not read: %s", p, f.Refused)
	}
	if sealed.IsEncrypted(f.Data) {
		return nil, refusal(kfile, at, "%s is SOPS-encrypted; encrypted files cannot be rendered by kustomize", p)
	}
	c.read[p] = true
	return f.Data, nil
}

// plugin checks a generators/transformers/validators entry: the configurations of builtin
// plugins (builtinKinds), inline or in a file, whose files go through the checks of the
// kustomization's own entries. Other builtin plugins (Helm, IAM policies) and external ones
// (Go plugins, exec, KRM functions in containers or binaries) are refused.
func (c *check) plugin(dir, kfile, at, entry string) error {
	data := []byte(entry)
	if !strings.Contains(entry, "\n") {
		p, err := c.resolve(dir, kfile, at, entry)
		if err != nil {
			return err
		}
		if c.t.dirs[p] {
			return refusal(kfile, at, "%q is a folder; give the builtin plugin configurations as files", entry)
		}
		if data, err = c.file(p, kfile, at); err != nil {
			return err
		}
		c.other[p] = true
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var node yaml.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return refusal(kfile, at, "cannot read the plugin configuration: %v", err)
		}
		var doc struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string `yaml:"kind"`
			Metadata   struct {
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"metadata"`
		}
		if err := node.Decode(&doc); err != nil {
			return refusal(kfile, at, "cannot read the plugin configuration: %v", err)
		}
		for _, a := range []string{"config.kubernetes.io/function", "config.k8s.io/function"} {
			if _, ok := doc.Metadata.Annotations[a]; ok {
				return refusal(kfile, at, "%s is a KRM function (%s); functions and exec plugins are not run", doc.Kind, a)
			}
		}
		if doc.APIVersion != "builtin" {
			return refusal(kfile, at, "%s (apiVersion %q) is not a builtin plugin; external plugins are not run", doc.Kind, doc.APIVersion)
		}
		raw, err := yaml.Marshal(&node)
		if err != nil {
			return refusal(kfile, at, "cannot read the plugin configuration: %v", err)
		}
		refs, err := builtinRefs(kfile, at, doc.Kind, raw)
		if err != nil {
			return err
		}
		if err := c.refs(dir, kfile, refs); err != nil {
			return err
		}
	}
}

// builtinKinds are the builtin plugins a transformers, generators or validators entry may
// configure, each with a new value of its configuration (kustomize's own type) and the
// files it reads. Helm, IAM policies and the rest are refused.
var builtinKinds = map[string]struct {
	config func() any
	// meta: the configuration holds the metadata (ObjectMeta) itself.
	meta  bool
	files func(kfile, at string, config any) ([]ref, error)
}{
	"AnnotationsTransformer":  {config: func() any { return &builtins.AnnotationsTransformerPlugin{} }},
	"LabelTransformer":        {config: func() any { return &builtins.LabelTransformerPlugin{} }},
	"NamespaceTransformer":    {config: func() any { return &builtins.NamespaceTransformerPlugin{} }, meta: true},
	"PrefixTransformer":       {config: func() any { return &builtins.PrefixTransformerPlugin{} }},
	"SuffixTransformer":       {config: func() any { return &builtins.SuffixTransformerPlugin{} }},
	"ImageTagTransformer":     {config: func() any { return &builtins.ImageTagTransformerPlugin{} }},
	"ReplicaCountTransformer": {config: func() any { return &builtins.ReplicaCountTransformerPlugin{} }},
	"HashTransformer":         {config: func() any { return &builtins.HashTransformerPlugin{} }},
	"PatchTransformer": {config: func() any { return &builtins.PatchTransformerPlugin{} },
		files: func(_, at string, c any) ([]ref, error) {
			return []ref{{at + ".path", c.(*builtins.PatchTransformerPlugin).Path}}, nil
		}},
	"PatchJson6902Transformer": {config: func() any { return &builtins.PatchJson6902TransformerPlugin{} },
		files: func(_, at string, c any) ([]ref, error) {
			return []ref{{at + ".path", c.(*builtins.PatchJson6902TransformerPlugin).Path}}, nil
		}},
	"PatchStrategicMergeTransformer": {config: func() any { return &builtins.PatchStrategicMergeTransformerPlugin{} },
		files: func(kfile, at string, c any) ([]ref, error) {
			return strategicMerge(kfile, at+".paths", c.(*builtins.PatchStrategicMergeTransformerPlugin).Paths)
		}},
	"ReplacementTransformer": {config: func() any { return &builtins.ReplacementTransformerPlugin{} },
		files: func(_, at string, c any) ([]ref, error) {
			var refs []ref
			for i, r := range c.(*builtins.ReplacementTransformerPlugin).ReplacementList {
				refs = append(refs, ref{fmt.Sprintf("%s.replacements[%d].path", at, i), r.Path})
			}
			return refs, nil
		}},
	"ConfigMapGenerator": {config: func() any { return &builtins.ConfigMapGeneratorPlugin{} }, meta: true,
		files: func(_, at string, c any) ([]ref, error) {
			return kvRefs(at, c.(*builtins.ConfigMapGeneratorPlugin).KvPairSources), nil
		}},
	"SecretGenerator": {config: func() any { return &builtins.SecretGeneratorPlugin{} }, meta: true,
		files: func(_, at string, c any) ([]ref, error) {
			return kvRefs(at, c.(*builtins.SecretGeneratorPlugin).KvPairSources), nil
		}},
}

// builtinRefs decodes a builtin plugin's configuration strictly into kustomize's type for it,
// as kustomize decodes it, and returns the files it reads.
func builtinRefs(kfile, at, kind string, raw []byte) ([]ref, error) {
	b, ok := builtinKinds[kind]
	if !ok {
		return nil, refusal(kfile, at, "the builtin plugin %q is not supported (render: kustomize runs %s)", kind, strings.Join(slices.Sorted(maps.Keys(builtinKinds)), ", "))
	}
	var m map[string]any
	if err := sigsyaml.UnmarshalStrict(raw, &m); err != nil {
		return nil, refusal(kfile, at, "%s: %v", kind, err)
	}
	if k := foldedTwice(m); k != "" {
		// kustomize matches field names without regard to case: two spellings of one field
		// would leave the one read to the order of the keys.
		return nil, refusal(kfile, at, "%s: the field %q is given twice", kind, k)
	}
	delete(m, "apiVersion")
	delete(m, "kind")
	if !b.meta {
		delete(m, "metadata")
	}
	j, err := json.Marshal(m)
	if err != nil {
		return nil, refusal(kfile, at, "%s: %v", kind, err)
	}
	config := b.config()
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(config); err != nil {
		return nil, refusal(kfile, at, "%s: %v", kind, err)
	}
	if b.files == nil {
		return nil, nil
	}
	return b.files(kfile, at, config)
}

// foldedTwice returns a key that appears twice in a mapping of v under case folding, ""
// when none does.
func foldedTwice(v any) string {
	switch v := v.(type) {
	case map[string]any:
		seen := map[string]bool{}
		for k, e := range v {
			if seen[strings.ToLower(k)] {
				return k
			}
			seen[strings.ToLower(k)] = true
			if k := foldedTwice(e); k != "" {
				return k
			}
		}
	case []any:
		for _, e := range v {
			if k := foldedTwice(e); k != "" {
				return k
			}
		}
	}
	return ""
}

// countDocuments estimates the resources of a manifest file (its YAML documents), before
// kustomize spends time on them.
func countDocuments(data []byte) int {
	n := 1 + bytes.Count(data, []byte("\n---"))
	if bytes.HasPrefix(data, []byte("---")) {
		n--
	}
	return max(n, 1)
}
