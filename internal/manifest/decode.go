package manifest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/jsonptr"
)

// document is one decoded manifest, independent of the file path it was read from so that
// it can be cached by content. Exactly one of typ and res is set when kind is known.
//
// The cache holds one document per manifest of the repository, so documents are kept
// small: repeated strings are interned, label sets shared, hashes kept as sums, and the
// structural problems, rare, kept with the file (fileEntry.errs) rather than here.
type document struct {
	index      int // position in the file's YAML stream, to find its nodes again
	line       int
	apiVersion sym
	kind       sym
	typ        *typeDoc
	res        *resourceDoc

	// Lines of apiVersion and kind, for the problems only the whole revision reveals
	// (unknown kind, unserved version), so that reporting them needs no second parse.
	apiVersionLine, kindLine int
}

type typeDoc struct {
	name        string
	group       string
	description string
	versions    []versionDoc
	action      ActionRef
	resync      *time.Duration
	drift       *DriftPolicy
	spec        json.RawMessage
	hash        string
	// broken is set when the document has structural problems: its resources are then
	// not told that their version is missing, which would only repeat them.
	broken bool
}

type versionDoc struct {
	index      int // in spec.versions
	name       string
	schema     json.RawMessage // canonical
	schemaHash string
}

type resourceDoc struct {
	namespace sym
	name      string // empty when missing or invalid
	// Labels and annotations, shared with the file's other resources that have the same;
	// nil when there are none. Resource gets fresh maps anyway.
	meta *resourceMeta
	// written is the spec as written, as canonical JSON, until its first check. It is
	// dropped then, because the cache would otherwise hold every spec twice; a schema
	// change finds it in the file. JSON rather than decoded values, because a first sync
	// holds every spec of the repository until the types are known.
	written string

	// The last validation, reused while the schema it ran against is unchanged.
	checkedWith sym    // the schema's hash; zero before the first check
	specJSON    string // canonical, with defaults applied
	specHash    [32]byte
	specErrs    []ValidationError

	// What the resource depends on: dependsOn, decoded with the document, and the output
	// references of its spec, found by the last check (implied); nil when nothing.
	deps *docDeps

	hasSpec bool // spec is present and a mapping
	specBad bool // spec is present but not a mapping, or unencodable: nothing to validate
	// What its rules cost in the last check (see celRevisionBudget); at most
	// celBudget+celCostLimit. 32 bits fit in what would be padding.
	celCost uint32
}

// groupVersion splits a resource's apiVersion; ok is false when it is malformed.
func groupVersion(apiVersion string) (group, version string, ok bool) {
	group, version, ok = strings.Cut(apiVersion, "/")
	return group, version, ok && group != "" && version != "" && !strings.Contains(version, "/")
}

const (
	kindHelp   = "must start with an uppercase letter, contain only letters and digits and be at most 63 characters"
	labelHelp  = "must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters"
	domainHelp = "must be a DNS subdomain: dot-separated DNS labels, at most 253 characters"
)

// validKind reports whether s matches ^[A-Z][A-Za-z0-9]{0,62}$, and validLabel whether it
// matches ^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$; by hand, because references are checked
// per resource at ingest and a regexp costs several times more.
func validKind(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

func validLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func validSubdomain(s string) bool {
	if len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if !validLabel(l) {
			return false
		}
	}
	return true
}

// docDecoder checks one document's structure and collects every problem rather than
// stopping at the first, so that one push shows the author everything to fix.
type docDecoder struct {
	root *yaml.Node
	errs []ValidationError
}

func (d *docDecoder) fail(p path, format string, args ...any) {
	d.errs = append(d.errs, ValidationError{Line: lineOf(d.root, p), Path: p.String(), Msg: fmt.Sprintf(format, args...)})
}

// strict reports the keys of m that are not allowed, the way strict config decoding does:
// a typo must not silently drop a field.
func (d *docDecoder) strict(m map[string]any, p path, allowed ...string) {
	var unknown []string
	for k := range m {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		d.errs = append(d.errs, ValidationError{Line: lineOf(d.root, p.key(k)), Path: p.String(), Msg: fmt.Sprintf("unknown field %q", k)})
	}
}

// field returns m[key] when it is present and not null.
func field(m map[string]any, key string) (any, bool) {
	v, ok := m[key]
	return v, ok && v != nil
}

func (d *docDecoder) mapping(m map[string]any, p path, key string) (map[string]any, bool) {
	v, ok := field(m, key)
	if !ok {
		return nil, false
	}
	mv, ok := v.(map[string]any)
	if !ok {
		d.fail(p.key(key), "must be a mapping, got %s", jsonType(v))
		return nil, false
	}
	return mv, true
}

func (d *docDecoder) str(m map[string]any, p path, key string) (string, bool) {
	v, ok := field(m, key)
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		d.fail(p.key(key), "must be a string, got %s", jsonType(v))
		return "", false
	}
	return s, true
}

// required returns a string field, reporting it when missing; present-but-empty counts as
// missing.
func (d *docDecoder) required(m map[string]any, p path, key string) string {
	v, present := field(m, key)
	s, isStr := v.(string)
	switch {
	case !present || isStr && s == "":
		d.fail(p.key(key), "is required")
	case !isStr:
		d.fail(p.key(key), "must be a string, got %s", jsonType(v))
	}
	return s
}

// stringMap decodes labels or annotations; empty ones come back nil.
func (d *docDecoder) stringMap(m map[string]any, p path, key string) map[string]string {
	mv, ok := d.mapping(m, p, key)
	if !ok || len(mv) == 0 {
		return nil
	}
	out := make(map[string]string, len(mv))
	for k, v := range mv {
		s, ok := v.(string)
		if !ok {
			d.fail(p.key(key).key(k), "must be a string, got %s", jsonType(v))
			continue
		}
		out[k] = s
	}
	return out
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "mapping"
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// decodeDocument checks the fields every document needs and hands over to the type or
// resource decoder. A resource's fields go to *res, which the caller provides so that the
// resources of one file share one allocation, as they share sets. It returns the
// document's problems too.
func decodeDocument(rd rawDoc, res *resourceDoc, sets metaSets) (document, []ValidationError) {
	doc := document{
		index:          rd.index,
		line:           rd.root.Line,
		apiVersionLine: lineOf(rd.root, path{"apiVersion"}),
		kindLine:       lineOf(rd.root, path{"kind"}),
	}
	d := &docDecoder{root: rd.root}
	m := rd.value.(map[string]any)
	top := path{}
	d.strict(m, top, "apiVersion", "kind", "metadata", "dependsOn", "spec")

	// The three identity fields are reported at the document's start when missing: there
	// is no better line, and it is where a reader looks for them.
	header := func(m map[string]any, p path, key string) string {
		v, present := field(m, key)
		s, isStr := v.(string)
		switch {
		case !present || isStr && s == "":
			d.errs = append(d.errs, ValidationError{Line: doc.line, Path: p.key(key).String(), Msg: "is required"})
		case !isStr:
			d.fail(p.key(key), "must be a string, got %s", jsonType(v))
		}
		return s
	}
	apiVersion := header(m, top, "apiVersion")
	kind := header(m, top, "kind")
	doc.apiVersion, doc.kind = intern(apiVersion), intern(kind)
	meta, _ := d.mapping(m, top, "metadata")
	name := header(meta, top.key("metadata"), "name")

	switch {
	case kind == typeKind:
		doc.typ = d.decodeType(apiVersion, m, meta, name)
		doc.typ.broken = len(d.errs) > 0
	case kind != "":
		d.decodeResource(res, sets, apiVersion, kind, m, meta, name)
		doc.res = res
	}
	return doc, d.errs
}

func (d *docDecoder) decodeType(apiVersion string, m, meta map[string]any, name string) *typeDoc {
	t := &typeDoc{}
	if apiVersion != "" && apiVersion != typeAPIVersion {
		d.fail(path{"apiVersion"}, "must be %s for kind %s", typeAPIVersion, typeKind)
	}
	if _, present := m["dependsOn"]; present {
		d.fail(path{"dependsOn"}, "a %s does not take dependsOn: only resources depend on others", typeKind)
	}
	metaPath := path{"metadata"}
	d.strict(meta, metaPath, "name", "labels", "annotations")
	d.stringMap(meta, metaPath, "labels")
	d.stringMap(meta, metaPath, "annotations")
	switch {
	case name == "":
	case name == typeKind:
		d.fail(metaPath.key("name"), "%s is reserved", typeKind)
	case !validKind(name):
		d.fail(metaPath.key("name"), "invalid kind name %q: %s", name, kindHelp)
	default:
		t.name = name
	}

	specPath := path{"spec"}
	spec, ok := d.mapping(m, path{}, "spec")
	if !ok {
		if _, present := field(m, "spec"); !present {
			d.fail(specPath, "is required")
		}
		return t
	}
	d.strict(spec, specPath, "group", "description", "versions", "action", "resyncInterval", "drift")

	if g := d.required(spec, specPath, "group"); g != "" {
		switch {
		case !validSubdomain(g):
			d.fail(specPath.key("group"), "invalid group %q: %s", g, domainHelp)
		case g == typeGroup:
			d.fail(specPath.key("group"), "group %s is reserved", g)
		default:
			t.group = g
		}
	}
	t.description, _ = d.str(spec, specPath, "description")
	t.versions = d.decodeVersions(spec, specPath)
	d.decodeAction(t, spec, specPath)
	d.decodeResync(t, spec, specPath)
	d.decodeDrift(t, spec, specPath)

	canon, err := marshalCanonical(spec)
	if err != nil {
		d.fail(specPath, "cannot encode as JSON: %v", err)
		return t
	}
	t.spec = canon
	whole, err := marshalCanonical(map[string]any{"name": name, "spec": json.RawMessage(canon)})
	if err != nil {
		d.fail(specPath, "cannot encode as JSON: %v", err)
		return t
	}
	t.hash = hashJSON(whole)
	return t
}

func (d *docDecoder) decodeVersions(spec map[string]any, specPath path) []versionDoc {
	p := specPath.key("versions")
	raw, ok := field(spec, "versions")
	if !ok {
		d.fail(p, "is required")
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		d.fail(p, "must be a list, got %s", jsonType(raw))
		return nil
	}
	if len(list) == 0 {
		d.fail(p, "must list at least one version")
		return nil
	}
	var out []versionDoc
	seen := map[string]int{}
	for i, item := range list {
		ip := p.index(i)
		vm, ok := item.(map[string]any)
		if !ok {
			d.fail(ip, "must be a mapping, got %s", jsonType(item))
			continue
		}
		d.strict(vm, ip, "name", "schema")
		v := versionDoc{index: i, name: d.required(vm, ip, "name")}
		if v.name != "" && !validLabel(v.name) {
			d.fail(ip.key("name"), "invalid version name %q: %s", v.name, labelHelp)
			v.name = ""
		}
		if first, dup := seen[v.name]; dup && v.name != "" {
			d.fail(ip.key("name"), "duplicate version %q (also %s)", v.name, p.index(first))
			v.name = ""
		} else if v.name != "" {
			seen[v.name] = i
		}
		schema, ok := d.mapping(vm, ip, "schema")
		if !ok {
			if _, present := field(vm, "schema"); !present {
				d.fail(ip.key("schema"), "is required")
			}
			continue
		}
		canon, err := marshalCanonical(schema)
		if err != nil {
			d.fail(ip.key("schema"), "cannot encode as JSON: %v", err)
			continue
		}
		// Versions without a usable name are kept so that their schemas are still checked.
		v.schema, v.schemaHash = canon, hashJSON(canon)
		out = append(out, v)
	}
	return out
}

func (d *docDecoder) decodeAction(t *typeDoc, spec map[string]any, specPath path) {
	p := specPath.key("action")
	action, ok := d.mapping(spec, specPath, "action")
	if !ok {
		if _, present := field(spec, "action"); !present {
			d.fail(p, "is required")
		}
		return
	}
	d.strict(action, p, "name", "with")
	t.action.Name = d.required(action, p, "name")
	with, ok := d.mapping(action, p, "with")
	if !ok {
		return
	}
	canon, err := marshalCanonical(with)
	if err != nil {
		d.fail(p.key("with"), "cannot encode as JSON: %v", err)
		return
	}
	t.action.With = canon
}

func (d *docDecoder) decodeResync(t *typeDoc, spec map[string]any, specPath path) {
	p := specPath.key("resyncInterval")
	raw, ok := field(spec, "resyncInterval")
	if !ok {
		return
	}
	var s string
	switch v := raw.(type) {
	case string:
		s = v
	case json.Number:
		s = string(v) // only "0" parses: Go durations need a unit otherwise
	default:
		d.fail(p, "must be a duration such as 10m, got %s", jsonType(raw))
		return
	}
	dur, err := time.ParseDuration(s)
	if err != nil {
		d.fail(p, "invalid duration %q: must be a Go duration such as 30s, 10m or 1h, or 0 to turn resync off", s)
		return
	}
	if dur < 0 {
		d.fail(p, "invalid duration %q: must not be negative", s)
		return
	}
	t.resync = &dur
}

func (d *docDecoder) decodeDrift(t *typeDoc, spec map[string]any, specPath path) {
	p := specPath.key("drift")
	m, ok := d.mapping(spec, specPath, "drift")
	if !ok {
		return
	}
	d.strict(m, p, "mode", "ignore")
	pol := DriftPolicy{Mode: DriftRemediate}
	bad := false
	if mode, ok := d.str(m, p, "mode"); ok {
		switch mode {
		case DriftRemediate, DriftDetect, DriftNotify:
			pol.Mode = mode
		default:
			d.fail(p.key("mode"), "unknown drift mode %q: must be remediate, detect or notify", mode)
			bad = true
		}
	}
	if raw, ok := field(m, "ignore"); ok {
		list, isList := raw.([]any)
		if !isList {
			d.fail(p.key("ignore"), "must be a list of JSON pointers, got %s", jsonType(raw))
			return
		}
		for i, item := range list {
			s, isStr := item.(string)
			switch {
			case !isStr:
				d.fail(p.key("ignore").index(i), "must be a string, got %s", jsonType(item))
				bad = true
			case jsonptr.Check(s) != nil:
				d.fail(p.key("ignore").index(i), "%v", jsonptr.Check(s))
				bad = true
			default:
				pol.Ignore = append(pol.Ignore, s)
			}
		}
	}
	if !bad {
		t.drift = &pol
	}
}

func (d *docDecoder) decodeResource(r *resourceDoc, sets metaSets, apiVersion, kind string, m, meta map[string]any, name string) {
	*r = resourceDoc{}
	if apiVersion != "" {
		if _, _, ok := groupVersion(apiVersion); !ok {
			d.fail(path{"apiVersion"}, "invalid apiVersion %q: must be <group>/<version>", apiVersion)
		}
	}
	metaPath := path{"metadata"}
	d.strict(meta, metaPath, "name", "namespace", "labels", "annotations")
	if name != "" {
		if validLabel(name) {
			r.name = name
		} else {
			d.fail(metaPath.key("name"), "invalid name %q: %s", name, labelHelp)
		}
	}
	namespace := "default"
	if ns, ok := d.str(meta, metaPath, "namespace"); ok {
		if validLabel(ns) {
			namespace = ns
		} else {
			d.fail(metaPath.key("namespace"), "invalid namespace %q: %s", ns, labelHelp)
			r.name = "" // an invalid identity must not take part in duplicate checks
		}
	}
	r.namespace = intern(namespace)
	r.meta = sets.get(d.stringMap(meta, metaPath, "labels"), d.stringMap(meta, metaPath, "annotations"))
	r.deps = d.dependsOn(m, graph.ID{Kind: kind, Namespace: namespace, Name: r.name})
	spec, hasSpec := d.mapping(m, path{}, "spec")
	_, present := field(m, "spec")
	r.hasSpec, r.specBad = hasSpec, present && !hasSpec
	if hasSpec {
		canon, err := marshalCanonical(spec)
		if err != nil {
			d.fail(path{"spec"}, "cannot encode as JSON: %v", err)
			r.hasSpec, r.specBad = false, true
			return
		}
		r.written = string(canon)
	}
}
