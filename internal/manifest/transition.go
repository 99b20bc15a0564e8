package manifest

import (
	"bytes"
	"encoding/json"
	"slices"
)

// Transition rules (x-trueup-validations rules that name oldSelf) compare a resource's new
// spec with the spec applied before. The loader does no I/O, so they run in a second,
// pure step that the caller feeds with the applied specs:
//
//	set, err := loader.Load(files, opts)
//	if cands := set.TransitionCandidates(); len(cands) > 0 {
//		old := <applied specs of cands whose spec hash changed>   // one query
//		err = loader.CheckTransitions(set, old)                   // Errors, like Load's
//	}
//
// A resource without an applied spec (a new one) is not checked, nor is one whose spec is
// unchanged (the rule held, or was not in force, when it was applied). Only resources of
// schemas with transition rules are candidates, so a revision without such rules costs
// nothing more.

// ResourceKey names a resource across revisions. Kind is compared case-insensitively by
// the store, as resource identity is.
type ResourceKey struct {
	Namespace, Kind, Name string
}

// Key returns r's identity.
func (r *Resource) Key() ResourceKey {
	return ResourceKey{Namespace: r.Namespace, Kind: r.Kind, Name: r.Name}
}

// transitionCheck is what the Set keeps of a resource whose schema has transition rules:
// plain data (the schema by hash and content, the file to locate problems in), so that
// Sets stay comparable values.
type transitionCheck struct {
	i          int // in Set.Resources
	schemaHash string
	schema     json.RawMessage // to compile it again if the cache has dropped it
	file       string
	data       []byte // the file's content, for lines
	docIndex   int    // the document's position in the file's YAML stream
	gen        *genRef
	origin     string // the file's ValidationError.Origin
}

// TransitionCandidates returns the resources of s whose schema has transition rules: the
// ones whose applied spec CheckTransitions needs, if their spec changed.
func (s *Set) TransitionCandidates() []Resource {
	if s == nil {
		return nil
	}
	out := make([]Resource, 0, len(s.transitions))
	for _, tc := range s.transitions {
		out = append(out, s.Resources[tc.i])
	}
	return out
}

// CheckTransitions runs the transition rules of s's resources against their applied specs
// (old, by key; a resource absent from old is not checked) and returns the violations as
// Errors, located and capped per ResourceSet like Load's, or nil. It reads nothing but its arguments and the
// Loader's schema cache. The transition rules of all resources share one budget
// (celRevisionBudget); past it, the rest are not evaluated and one error says so.
func (l *Loader) CheckTransitions(s *Set, old map[ResourceKey]json.RawMessage) error {
	if s == nil || len(s.transitions) == 0 || len(old) == 0 {
		return nil
	}
	l.lock()
	defer l.mu.Unlock()
	ld := &load{l: l}
	var errs Errors
	var sets []setSpan // of the generated resources with problems
	var spent uint64   // the transition rules of the revision together, as in Load
	for _, tc := range s.transitions {
		r := &s.Resources[tc.i]
		prev, ok := old[r.Key()]
		if !ok || bytes.Equal(prev, r.Spec) {
			continue
		}
		cs, ok := l.schemas[tc.schemaHash]
		if !ok {
			cs = compileSchema(tc.schema, tc.schemaHash)
		}
		if cs.rules == nil || !cs.rules.transition {
			continue
		}
		newV, err1 := decodeNumbers(r.Spec)
		oldV, err2 := decodeNumbers(prev)
		if err1 != nil || err2 != nil {
			// Both were stored by this package as canonical JSON: they always decode.
			continue
		}
		if spent > l.revisionBudget {
			errs = append(errs, revisionTooExpensive(l.revisionBudget))
			break
		}
		markers := s.encryptedUnknown
		refs := usesSecretRef(newV, 0) || usesSecretRef(oldV, 0) || usesOutputRef(newV, 0) || usesOutputRef(oldV, 0) ||
			(markers && (usesMarker(newV, 0) || usesMarker(oldV, 0)))
		problems, cost := cs.rules.evalRules(newV, oldV, true, specRoot, true, refs, markers)
		spent += cost
		if len(problems) == 0 {
			continue
		}
		if g := tc.gen; g != nil && !slices.ContainsFunc(sets, func(r setSpan) bool { return r.set == g.t.set && r.file == tc.file }) {
			sets = append(sets, setSpan{file: tc.file, set: g.t.set})
		}
		p := placed{
			source: &source{file: tc.file, key: tc.file, data: tc.data, origin: tc.origin},
			doc:    &document{index: int32(tc.docIndex), line: int32(r.Line), gen: tc.gen},
		}
		for _, ve := range ld.locate(p, problems) {
			ve.File, ve.Line = tc.file, p.line(ve.Line)
			errs = append(errs, ve)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	// As in Load: a rule a template breaks, it breaks for every input.
	return capSetProblems(sortErrors(errs), sets)
}

func decodeNumbers(b json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}
