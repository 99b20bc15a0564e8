package manifest

import (
	"maps"
	slashpath "path"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// A ResourceSet (kind ResourceSet, group trueup.dev) is one document that stands for many
// resources: templates rendered once per input. It is decoded here, with its file, and
// cached like a type; expand.go turns it into resource documents during each Load, so
// every reader of a revision (the syncer, previews, validate, diff) sees the generated
// resources as if they were written.
const setKind = "ResourceSet"

// setDoc is a decoded ResourceSet: immutable, cached with its file's content.
type setDoc struct {
	namespace sym
	name      string // empty when missing or invalid
	line      int    // the document's
	specLine  int
	lastLine  int // the last line of the document: its generated resources' problems lie in between

	inputs    []*input // spec.inputs; nil when absent
	hasInputs bool     // spec.inputs is present, empty or not
	matrix    []matrixAxis
	from      []inputsRef
	templates []setTemplate

	// broken is set when the document has problems: it generates nothing.
	broken bool
}

// inputsRef is one spec.inputsFrom entry.
type inputsRef struct {
	path string // as written, relative to the set's folder
	line int
}

// setTemplate is one compiled spec.resources item.
type setTemplate struct {
	set                            *setDoc
	index                          int // in spec.resources
	line, apiVersionLine, kindLine int
	apiVersion, kind               sym
	name                           *tmpl
	origin                         []string // the input keys the name reads: what tells its resources apart
	labels, annotations            []metaTemplate
	constMeta                      bool // no label or annotation value is templated
	deps                           []depTemplate
	spec                           *tmpl // nil when absent
}

// metaTemplate is one label or annotation: a fixed key and a value that may be templated.
type metaTemplate struct {
	key string
	val *tmpl
}

// depTemplate is one dependsOn entry; namespace is nil when absent.
type depTemplate struct {
	index                 int
	kind, name, namespace *tmpl
}

// setPrefix is where template i sits in its set's document.
func setPrefix(i int) path { return path{"spec", "resources", i} }

// decodeSet decodes a ResourceSet document. Problems inside a template are reported at
// their lines in the set's document; none of them is evaluated here.
func (d *docDecoder) decodeSet(apiVersion string, m, meta map[string]any, name string) *setDoc {
	s := &setDoc{line: d.root.Line, specLine: lineOf(d.root, path{"spec"}), lastLine: lastNodeLine(d.root, 0)}
	if apiVersion != typeAPIVersion {
		d.fail(path{"apiVersion"}, "must be %s for kind %s", typeAPIVersion, setKind)
	}
	if _, present := m["dependsOn"]; present {
		d.fail(path{"dependsOn"}, "a %s does not take dependsOn: put it in the templates (spec.resources[].dependsOn)", setKind)
	}
	metaPath := path{"metadata"}
	d.strict(meta, metaPath, "name", "namespace", "labels", "annotations")
	d.stringMap(meta, metaPath, "labels")
	d.stringMap(meta, metaPath, "annotations")
	var namespace string
	s.name, namespace = d.identity(meta, name)
	s.namespace = intern(namespace)

	specPath := path{"spec"}
	spec, ok := d.mapping(m, path{}, "spec")
	if !ok {
		if _, present := field(m, "spec"); !present {
			d.fail(specPath, "is required")
		}
		s.broken = true
		return s
	}
	d.strict(spec, specPath, "inputs", "matrix", "inputsFrom", "resources")
	d.setInputs(s, spec, specPath)
	d.setMatrix(s, spec, specPath)
	d.setInputsFrom(s, spec, specPath)
	d.setTemplates(s, spec, specPath, namespace)
	s.broken = len(d.errs) > 0
	return s
}

// lastNodeLine is the last line a node below n starts on.
func lastNodeLine(n *yaml.Node, depth int) int {
	line := n.Line
	if depth > maxDepth {
		return line
	}
	for _, c := range n.Content {
		line = max(line, lastNodeLine(c, depth+1))
	}
	return line
}

func (d *docDecoder) list(m map[string]any, p path, key string) ([]any, bool) {
	v, ok := field(m, key)
	if !ok {
		return nil, false
	}
	l, ok := v.([]any)
	if !ok {
		d.fail(p.key(key), "must be a list, got %s", jsonType(v))
	}
	return l, ok
}

func (d *docDecoder) setInputs(s *setDoc, spec map[string]any, specPath path) {
	_, s.hasInputs = spec["inputs"]
	p := specPath.key("inputs")
	list, _ := d.list(spec, specPath, "inputs")
	s.inputs = make([]*input, 0, len(list))
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			d.fail(p.index(i), "an input must be a mapping, got %s", jsonType(item))
			continue
		}
		problems := checkInput(m)
		for _, pr := range problems {
			d.fail(append(p.index(i), pr.at...), "%s", pr.msg)
		}
		if len(problems) == 0 {
			s.inputs = append(s.inputs, newInput(m, "", lineOf(d.root, p.index(i)), i))
		}
	}
}

func (d *docDecoder) setMatrix(s *setDoc, spec map[string]any, specPath path) {
	p := specPath.key("matrix")
	m, ok := d.mapping(spec, specPath, "matrix")
	if !ok {
		return
	}
	for _, k := range sortedKeys(m) {
		kp := p.key(k)
		if !inputKey.MatchString(k) {
			d.fail(kp, "invalid matrix key %q: letters, digits and _, not starting with a digit", k)
			continue
		}
		values, ok := d.list(m, p, k)
		switch {
		case !ok:
			if _, present := field(m, k); !present {
				d.fail(kp, "must be a non-empty list")
			}
			continue
		case len(values) == 0:
			d.fail(kp, "must be a non-empty list")
			continue
		}
		s.matrix = append(s.matrix, matrixAxis{key: k, values: values, line: lineOf(d.root, kp)})
	}
}

func (d *docDecoder) setInputsFrom(s *setDoc, spec map[string]any, specPath path) {
	p := specPath.key("inputsFrom")
	list, _ := d.list(spec, specPath, "inputsFrom")
	for i, item := range list {
		ip := p.index(i)
		m, ok := item.(map[string]any)
		if !ok {
			d.fail(ip, "must be a mapping {path}, got %s", jsonType(item))
			continue
		}
		d.strict(m, ip, "path")
		pth := d.required(m, ip, "path")
		switch {
		case pth == "":
		case strings.HasPrefix(pth, "/"):
			d.fail(ip.key("path"), "%q is absolute: inputsFrom paths are relative to the set's folder", pth)
		default:
			s.from = append(s.from, inputsRef{path: pth, line: lineOf(d.root, ip.key("path"))})
		}
	}
}

func (d *docDecoder) setTemplates(s *setDoc, spec map[string]any, specPath path, namespace string) {
	p := specPath.key("resources")
	list, ok := d.list(spec, specPath, "resources")
	if !ok || len(list) == 0 {
		if _, present := field(spec, "resources"); !present || ok {
			d.fail(p, "must list at least one resource template")
		}
		return
	}
	for i, item := range list {
		ip := p.index(i)
		m, ok := item.(map[string]any)
		if !ok {
			d.fail(ip, "must be a mapping, got %s", jsonType(item))
			continue
		}
		if t, ok := d.setTemplate(m, i, namespace); ok {
			t.set = s
			s.templates = append(s.templates, t)
		}
	}
}

// compile compiles v at p (absolute in the set's document), reporting its problems.
func (d *docDecoder) compile(v any, p path) *tmpl {
	t, problems := compileTemplate(v)
	for _, pr := range problems {
		d.fail(append(p[:len(p):len(p)], pr.at...), "%s", pr.msg)
	}
	return t
}

// fixed returns a field of a template that must be written out: a string with no template.
func (d *docDecoder) fixed(m map[string]any, p path, key string) string {
	s := d.required(m, p, key)
	if strings.Contains(s, "<<") {
		if t, problems := compileTemplate(s); len(problems) > 0 || t.kind != tmplConst {
			d.fail(p.key(key), "cannot be templated: %s is written out in each template", key)
			return ""
		}
	}
	return s
}

// strTemplate compiles a string field that may be templated; nil when absent or not a
// string.
func (d *docDecoder) strTemplate(m map[string]any, p path, key string, required bool) *tmpl {
	v, present := field(m, key)
	if !present {
		if required {
			d.fail(p.key(key), "is required")
		}
		return nil
	}
	if _, ok := v.(string); !ok {
		d.fail(p.key(key), "must be a string, got %s", jsonType(v))
		return nil
	}
	return d.compile(v, p.key(key))
}

func (d *docDecoder) setTemplate(m map[string]any, i int, namespace string) (setTemplate, bool) {
	before := len(d.errs)
	ip := setPrefix(i)
	t := setTemplate{index: i, line: lineOf(d.root, ip), apiVersionLine: lineOf(d.root, ip.key("apiVersion")), kindLine: lineOf(d.root, ip.key("kind"))}
	d.strict(m, ip, "apiVersion", "kind", "metadata", "dependsOn", "spec")
	apiVersion, kind := d.fixed(m, ip, "apiVersion"), d.fixed(m, ip, "kind")
	if apiVersion != "" {
		group, _, ok := groupVersion(apiVersion)
		switch {
		case !ok:
			d.fail(ip.key("apiVersion"), "invalid apiVersion %q: must be <group>/<version>", apiVersion)
		case group == typeGroup:
			d.fail(ip.key("kind"), "a %s generates resources, not %s documents", setKind, typeGroup)
		}
	}
	t.apiVersion, t.kind = intern(apiVersion), intern(kind)

	mp := ip.key("metadata")
	meta, ok := d.mapping(m, ip, "metadata")
	if !ok {
		if _, present := field(m, "metadata"); !present {
			d.fail(mp.key("name"), "is required")
		}
	}
	d.strict(meta, mp, "name", "namespace", "labels", "annotations")
	if t.name = d.strTemplate(meta, mp, "name", true); t.name != nil {
		t.origin = t.name.refs()
	}
	if ns, ok := d.str(meta, mp, "namespace"); ok && ns != namespace {
		d.fail(mp.key("namespace"), "must be the set's namespace %s or left out: a set generates resources in its own namespace", namespace)
	}
	t.constMeta = true
	t.labels = d.metaTemplates(meta, mp, "labels", &t.constMeta)
	t.annotations = d.metaTemplates(meta, mp, "annotations", &t.constMeta)
	t.deps = d.depTemplates(m, ip)
	if v, present := field(m, "spec"); present {
		t.spec = d.compile(v, ip.key("spec"))
		if t.spec != nil && t.spec.kind != tmplObject && t.spec.kind != tmplWhole && !(t.spec.kind == tmplConst && jsonType(v) == "mapping") {
			d.fail(ip.key("spec"), "must be a mapping, got %s", jsonType(v))
		}
	}
	return t, len(d.errs) == before
}

func (d *docDecoder) metaTemplates(meta map[string]any, p path, key string, constant *bool) []metaTemplate {
	m, ok := d.mapping(meta, p, key)
	if !ok {
		return nil
	}
	var out []metaTemplate
	for _, k := range sortedKeys(m) {
		kp := p.key(key).key(k)
		if key == "labels" && k == LabelResourceSet {
			d.fail(kp, "label %s is reserved: the set labels each resource it generates with its name", k)
			continue
		}
		v := m[k]
		if _, ok := v.(string); !ok {
			d.fail(kp, "must be a string, got %s", jsonType(v))
			continue
		}
		if strings.Contains(k, "<<") {
			d.fail(kp, "a mapping key cannot hold a template (keys are not templated)")
			continue
		}
		t := d.compile(v, kp)
		if t == nil {
			continue
		}
		*constant = *constant && t.kind == tmplConst
		out = append(out, metaTemplate{key: k, val: t})
	}
	return out
}

func (d *docDecoder) depTemplates(m map[string]any, ip path) []depTemplate {
	p := ip.key("dependsOn")
	list, _ := d.list(m, ip, "dependsOn")
	var out []depTemplate
	for i, item := range list {
		ep := p.index(i)
		em, ok := item.(map[string]any)
		if !ok {
			d.fail(ep, "must be a mapping {kind, name, namespace}, got %s", jsonType(item))
			continue
		}
		d.strict(em, ep, "kind", "name", "namespace")
		dt := depTemplate{index: i, kind: d.strTemplate(em, ep, "kind", true), name: d.strTemplate(em, ep, "name", true),
			namespace: d.strTemplate(em, ep, "namespace", false)}
		if dt.kind != nil && dt.name != nil {
			out = append(out, dt)
		}
	}
	return out
}

// joinInputsPath resolves an inputsFrom path against the set's file: the path it names in
// the revision, or ok false when it leaves the revision.
func joinInputsPath(setFile, p string) (string, bool) {
	j := slashpath.Clean(slashpath.Join(slashpath.Dir(setFile), p))
	return j, j != ".." && !strings.HasPrefix(j, "../")
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
