package manifest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/trueup-dev/trueup/internal/graph"
)

// Dependency is one resource a Resource depends on: listed under dependsOn (Explicit), or
// implied by output references in its spec (Outputs), or both. Target's namespace is always
// filled in (the resource's own when the manifest leaves it out).
type Dependency struct {
	Target   graph.ID
	Explicit bool
	// Outputs are the referenced output paths, dotted ("subnetId", "db.host"), sorted and
	// without repeats; empty for a plain dependsOn entry.
	Outputs []string
}

// A resource document names what it depends on in two ways:
//
//	dependsOn:
//	  - {kind: Network, name: core}              # namespace defaults to the resource's
//	  - {kind: Network, namespace: prod, name: edge}
//	spec:
//	  subnet: "${{ Network/core.outputs.subnetId }}"
//
// dependsOn is read with the document (decode.go) and enters MetaHash; references are
// found when the spec is checked, with the schema's defaults applied, and are cached with
// the check. A string holding a reference may stand in a field of any type: its value is
// not known before the dependency has outputs, so schema problems at it are dropped
// (schema.go) and CEL rules reading it are skipped (cel.go), as for secret references.

// docDeps is what a cached resource document depends on; nil when nothing.
type docDeps struct {
	explicit []graph.ID // dependsOn: sorted by key, without repeats, namespaces filled in
	key      string     // explicit as canonical JSON, for MetaHash; "" when none
	implied  []Dependency
}

// compareIDs orders identities by kind (case-insensitively), namespace and name.
func compareIDs(a, b graph.ID) int {
	return cmp.Or(compareFold(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// compareFold compares ASCII strings as their lower-case forms, without building them:
// kinds are letters and digits.
func compareFold(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		ca, cb := lowerASCII(a[i]), lowerASCII(b[i])
		if ca != cb {
			return cmp.Compare(ca, cb)
		}
	}
	return cmp.Compare(len(a), len(b))
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func sameID(a, b graph.ID) bool { return compareIDs(a, b) == 0 }

// dependsOn decodes a resource document's dependsOn entries. self is the resource, its
// namespace the default of the entries'.
func (d *docDecoder) dependsOn(m map[string]any, self graph.ID) *docDeps {
	raw, ok := field(m, "dependsOn")
	if !ok {
		return nil
	}
	p := path{"dependsOn"}
	list, ok := raw.([]any)
	if !ok {
		d.fail(p, "must be a list of {kind, name, namespace}, got %s", jsonType(raw))
		return nil
	}
	ids := make([]graph.ID, 0, len(list))
	for i, item := range list {
		ip := p.index(i)
		em, ok := item.(map[string]any)
		if !ok {
			d.fail(ip, "must be a mapping {kind, name, namespace}, got %s", jsonType(item))
			continue
		}
		d.strict(em, ip, "kind", "name", "namespace")
		id := graph.ID{Kind: d.required(em, ip, "kind"), Namespace: self.Namespace, Name: d.required(em, ip, "name")}
		valid := id.Kind != "" && id.Name != ""
		if id.Kind != "" && !validKind(id.Kind) {
			d.fail(ip.key("kind"), "invalid kind %q: %s", id.Kind, kindHelp)
			valid = false
		}
		if id.Name != "" && !validLabel(id.Name) {
			d.fail(ip.key("name"), "invalid name %q: %s", id.Name, labelHelp)
			valid = false
		}
		if _, present := field(em, "namespace"); present {
			ns, isStr := d.str(em, ip, "namespace")
			switch {
			case !isStr:
				valid = false
			case !validLabel(ns):
				d.fail(ip.key("namespace"), "invalid namespace %q: %s", ns, labelHelp)
				valid = false
			default:
				id.Namespace = ns
			}
		}
		if !valid {
			continue
		}
		if sameID(id, self) {
			d.fail(ip, "a resource cannot depend on itself")
			continue
		}
		ids = append(ids, id)
	}
	// Repeats collapse: listing a dependency twice says nothing more.
	slices.SortStableFunc(ids, compareIDs)
	ids = slices.CompactFunc(ids, sameID)
	if len(ids) == 0 {
		return nil
	}
	return &docDeps{explicit: slices.Clip(ids), key: encodeIDs(ids)}
}

// encodeIDs spells dependsOn targets as canonical JSON, [{"kind":…,"name":…,"namespace":…}].
func encodeIDs(ids []graph.ID) string {
	b := []byte{'['}
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"kind":`...)
		b = appendJSONString(b, id.Kind)
		b = append(b, `,"name":`...)
		b = appendJSONString(b, id.Name)
		b = append(b, `,"namespace":`...)
		b = appendJSONString(b, id.Namespace)
		b = append(b, '}')
	}
	return string(append(b, ']'))
}

// holdsOutputRef reports whether v is a string holding an output reference, or something
// that tries to be one (reported on its own by outputRefs): its value is not known at
// ingest.
func holdsOutputRef(v any) bool {
	s, ok := v.(string)
	if !ok || !graph.Contains(s) {
		return false
	}
	refs, err := graph.Parse(s, "default")
	return err != nil || len(refs) > 0
}

// wholeOutputRef reports whether v is a string that is exactly one output reference (or a
// malformed one, reported on its own): it takes the output's value, of any type.
func wholeOutputRef(v any) bool {
	s, _ := v.(string)
	refs, err := graph.Parse(s, "default")
	return err != nil || graph.Whole(s, refs)
}

// usesOutputRef reports whether any string in v holds an output reference.
func usesOutputRef(v any, depth int) bool {
	return anyString(v, depth, func(s string) bool { return holdsOutputRef(s) })
}

// mentionsRef reports whether any string in v holds ${{, without parsing it: whether
// outputRefs has anything to parse.
func mentionsRef(v any, depth int) bool { return anyString(v, depth, graph.Contains) }

// anyString reports whether pred holds for some string value in v.
func anyString(v any, depth int, pred func(string) bool) bool {
	if depth > maxDepth {
		return false
	}
	switch x := v.(type) {
	case string:
		return pred(x)
	case map[string]any:
		for _, e := range x {
			if anyString(e, depth+1, pred) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if anyString(e, depth+1, pred) {
				return true
			}
		}
	}
	return false
}

// outputRefs finds the output references in v, the spec (at) of resource self: the
// dependencies they imply, sorted by target, and the problems of the references that are
// malformed or name self. A reference without a namespace is in self's.
func outputRefs(v any, self graph.ID, at path) ([]Dependency, []schemaProblem) {
	if !mentionsRef(v, 0) {
		return nil, nil // the common case, without building paths
	}
	var deps []Dependency
	var problems []schemaProblem
	stack := slices.Clip(at)
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if depth > maxDepth {
			return
		}
		switch x := v.(type) {
		case string:
			if !graph.Contains(x) {
				return
			}
			refs, err := graph.Parse(x, self.Namespace)
			if err != nil {
				problems = append(problems, schemaProblem{path: slices.Clone(stack), msg: parseProblem(err)})
				return
			}
			for _, r := range refs {
				if msg := refProblem(r, self); msg != "" {
					problems = append(problems, schemaProblem{path: slices.Clone(stack), msg: msg})
					continue
				}
				// The spec's strings are parts of its canonical JSON (decodeCanonical): the
				// cached document keeps copies, not the spec.
				t := r.Target
				t.Kind, t.Namespace, t.Name = strings.Clone(t.Kind), strings.Clone(t.Namespace), strings.Clone(t.Name)
				deps = append(deps, Dependency{Target: t, Outputs: []string{strings.Join(r.Output, ".")}})
			}
		case map[string]any:
			for k, e := range x { // unsorted: Load sorts problems, and deps are sorted below
				stack = append(stack, k)
				walk(e, depth+1)
				stack = stack[:len(stack)-1]
			}
		case []any:
			for i, e := range x {
				stack = append(stack, i)
				walk(e, depth+1)
				stack = stack[:len(stack)-1]
			}
		}
	}
	walk(v, 0)
	return mergeDeps(nil, deps), problems
}

// parseProblem words a graph.Parse error, which starts with the reference's text or with
// "reference at offset …".
func parseProblem(err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "reference "); ok {
		return "invalid output reference " + rest
	}
	return "invalid output reference " + msg
}

// refProblem says what is wrong with a well-formed reference: a target no resource can
// have, or the resource itself.
func refProblem(r graph.Ref, self graph.ID) string {
	switch {
	case !validKind(r.Target.Kind):
		return fmt.Sprintf("invalid output reference %s: kind %s", r, kindHelp)
	case !validLabel(r.Target.Namespace):
		return fmt.Sprintf("invalid output reference %s: namespace %s", r, labelHelp)
	case !validLabel(r.Target.Name):
		return fmt.Sprintf("invalid output reference %s: name %s", r, labelHelp)
	case sameID(r.Target, self):
		return fmt.Sprintf("output reference %s: a resource cannot reference its own outputs", r)
	}
	return ""
}

// mergeDeps returns one Dependency per target of explicit (dependsOn) and implied (output
// references), sorted by target, with the outputs of each sorted and without repeats;
// nil when there are none. The result shares nothing with its arguments. A target keeps
// the spelling of its first appearance, dependsOn first.
func mergeDeps(explicit []graph.ID, implied []Dependency) []Dependency {
	switch {
	case len(explicit) == 0 && len(implied) == 0:
		return nil
	// The common small cases, without sorting: a ResourceSet's 100,000 resources each
	// depend on one Network by dependsOn and by a reference.
	case len(explicit) == 1 && len(implied) == 0:
		return []Dependency{{Target: explicit[0], Explicit: true}}
	case len(explicit) == 0 && len(implied) == 1:
		d := implied[0]
		return []Dependency{{Target: d.Target, Explicit: d.Explicit, Outputs: sortedOutputs(slices.Clone(d.Outputs))}}
	case len(explicit) == 1 && len(implied) == 1 && sameID(explicit[0], implied[0].Target):
		return []Dependency{{Target: explicit[0], Explicit: true, Outputs: sortedOutputs(slices.Clone(implied[0].Outputs))}}
	}
	all := make([]Dependency, 0, len(explicit)+len(implied))
	for _, id := range explicit {
		all = append(all, Dependency{Target: id, Explicit: true})
	}
	for _, d := range implied {
		all = append(all, Dependency{Target: d.Target, Explicit: d.Explicit, Outputs: slices.Clone(d.Outputs)})
	}
	slices.SortStableFunc(all, func(a, b Dependency) int { return compareIDs(a.Target, b.Target) })
	out := all[:0]
	for _, d := range all {
		if n := len(out); n > 0 && sameID(out[n-1].Target, d.Target) {
			last := &out[n-1]
			last.Explicit = last.Explicit || d.Explicit
			last.Outputs = append(last.Outputs, d.Outputs...)
			continue
		}
		out = append(out, d)
	}
	for i := range out {
		out[i].Outputs = sortedOutputs(out[i].Outputs)
	}
	return slices.Clip(out)
}

// sortedOutputs sorts outputs and drops repeats, in place.
func sortedOutputs(outputs []string) []string {
	if len(outputs) > 1 {
		slices.Sort(outputs)
		outputs = slices.Compact(outputs)
	}
	return slices.Clip(outputs)
}

// Dependencies returns what a resource depends on: the targets of its dependsOn entries
// (explicit, namespaces filled in) and the output references of its spec (canonical JSON,
// as in Resource.Spec; nil or empty for none), merged as Resource.DependsOn is. A reference
// without a namespace is in self's. A malformed reference, or one to self, is an Errors
// whose paths are below spec and which names no file.
func Dependencies(self graph.ID, explicit []graph.ID, spec json.RawMessage) ([]Dependency, error) {
	if !bytes.Contains(spec, []byte("${{")) {
		return mergeDeps(explicit, nil), nil
	}
	// Most specs hold only valid references: they are found in the text, without decoding
	// it. A problem needs its path, which the decoded spec gives.
	var implied []Dependency
	bad := false
	scanned := jsonStrings(spec, func(s string) {
		refs, err := graph.Parse(s, self.Namespace)
		if err != nil {
			bad = true
			return
		}
		for _, r := range refs {
			if refProblem(r, self) != "" {
				bad = true
				return
			}
			implied = append(implied, Dependency{Target: r.Target, Outputs: []string{strings.Join(r.Output, ".")}})
		}
	})
	if !scanned || bad {
		v, err := decodeNumbers(spec)
		if err != nil {
			return nil, Errors{{Path: "spec", Msg: "cannot decode: " + err.Error()}}
		}
		var problems []schemaProblem
		implied, problems = outputRefs(v, self, specRoot)
		if len(problems) > 0 {
			errs := make(Errors, len(problems))
			for i, p := range problems {
				errs[i] = ValidationError{Path: p.path.String(), Msg: p.msg}
			}
			return nil, sortErrors(errs)
		}
	}
	return mergeDeps(explicit, implied), nil
}

// jsonStrings calls fn with every string value (not object key) of the JSON text b that
// contains "${{"; it returns false when b ends inside a string.
func jsonStrings(b []byte, fn func(s string)) bool {
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		j, escaped := i+1, false
		for ; j < len(b) && b[j] != '"'; j++ {
			if b[j] == '\\' {
				escaped = true
				j++
			}
		}
		if j >= len(b) {
			return false
		}
		raw := b[i : j+1]
		k := j + 1
		for k < len(b) && (b[k] == ' ' || b[k] == '\t' || b[k] == '\n' || b[k] == '\r') {
			k++
		}
		i = j
		if k < len(b) && b[k] == ':' || !bytes.Contains(raw, []byte("${{")) {
			continue // a key, or no reference
		}
		s := string(raw[1 : len(raw)-1])
		if escaped {
			if err := json.Unmarshal(raw, &s); err != nil {
				return false
			}
		}
		fn(s)
	}
	return true
}

// setImplied records the dependencies a check found in r's spec, replacing the last ones.
func (r *resourceDoc) setImplied(implied []Dependency) {
	switch {
	case r.deps != nil && len(r.deps.explicit) == 0 && len(implied) == 0:
		r.deps = nil
	case r.deps != nil:
		r.deps.implied = implied
	case len(implied) > 0:
		r.deps = &docDeps{implied: implied}
	}
}

// metaKey is the part of MetaHash dependsOn contributes; "" when there is none.
func (d *docDeps) metaKey() string {
	if d == nil {
		return ""
	}
	return d.key
}

// dependencies returns Resource.DependsOn, in new memory: the Set must not share the cache's.
func (d *docDeps) dependencies() []Dependency {
	if d == nil {
		return nil
	}
	return mergeDeps(d.explicit, d.implied)
}
