package reconciler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/internal/store"
)

// errNotReady: a dependency stopped being Ready between the claim's gate and the read of
// the dependencies. The item is given back without a result, to wait like any other.
var errNotReady = errors.New("dependencies are not Ready")

// depsFresh is how long after its claim a call resolves from the dependencies the claim read
// (store.Claimed.Deps); one that starts later (it waited in the queue behind longer calls)
// reads them again, so that what it calls with is at most this old.
const depsFresh = 50 * time.Millisecond

// resolve puts the outputs of c's dependencies in place of the references in its spec
// (DESIGN §4, Dependencies) and validates the result against the type's schema. The
// returned Resolved is stored with the result (status.resolvedSpec, and the inputs a change
// of which runs c again). A reference that cannot be resolved, or a resolved spec the schema
// refuses, is terminal (Stalled) until a dependency's outputs or the spec change.
func (r *Reconciler) resolve(ctx context.Context, c store.Claimed, claimed time.Time) (json.RawMessage, *store.Resolved, []string, error) {
	deps := c.Deps
	if !claimDepsUsable(c.DepsRead, claimed, time.Now()) {
		var err error
		if deps, err = r.store.DependencyStates(ctx, c.ID); err != nil {
			return nil, nil, nil, err
		}
	}
	if r.opts.CheckReference != nil {
		// The grants may have been removed by a reload since the revision was taken in: the
		// dependent stalls with ingest's message until the grant or the spec changes.
		var refused []string
		for _, d := range deps {
			if d.Target.Namespace == c.Namespace {
				continue
			}
			if err := r.opts.CheckReference(c.Namespace, d.Target, d.Outputs); err != nil {
				refused = append(refused, err.Error())
			}
		}
		if len(refused) > 0 {
			return nil, &store.Resolved{Inputs: graph.InputsOf(deps).Encode()}, nil, actions.Terminalf("%s", strings.Join(refused, "; "))
		}
	}
	if w := graph.Waiting(c.Namespace, deps); w != "" {
		// A dependency moved after the claim's gate let the resource through: not its failure.
		return nil, nil, nil, fmt.Errorf("%w: %s", errNotReady, w)
	}
	// The inputs are recorded also when resolving fails: a change of the outputs it lacked
	// runs the resource again.
	in := graph.InputsOf(deps).Encode()
	res, err := resolveOrigins(c.Spec, c.Namespace, deps, c.TypeSpec, c.APIVersion)
	if err != nil {
		return nil, &store.Resolved{Inputs: in}, nil, err
	}
	return res.spec, &store.Resolved{Spec: res.spec, Inputs: in, Origins: res.origins}, res.foreign, nil
}

// claimDepsUsable reports whether a call starting at now resolves from the dependencies its
// claim (at claimed) read: when the claim read them and is at most depsFresh old.
func claimDepsUsable(read bool, claimed, now time.Time) bool {
	return read && now.Sub(claimed) <= depsFresh
}

// resolution is a spec with its references resolved, and what came from other namespaces.
type resolution struct {
	spec json.RawMessage
	// origins: the paths of spec (spec.a.b[0]) whose value came from other namespaces, and
	// those namespaces (sorted); nil when none. Whoever shows spec masks these paths for a
	// caller who may not read one of them (STYLE 24: visibility follows the origin).
	origins map[string][]string
	// foreign: the values taken from other namespaces, as text (strings as they are, numbers
	// as JSON, the leaves of objects and lists): the call's messages are scrubbed of
	// them before they are stored, since history and events are read in the dependent's
	// namespace.
	foreign []string
}

// minForeign is the shortest foreign value scrubbed from messages: a shorter one (a port
// "80", a flag) would mangle every message and tell little.
const minForeign = 4

// resolveSpec is resolve's pure part: spec with every reference resolved from deps, checked
// against the version of typeSpec that apiVersion names (when typeSpec is known).
func resolveSpec(spec json.RawMessage, ns string, deps []graph.Dep, typeSpec json.RawMessage, apiVersion string) (json.RawMessage, error) {
	res, err := resolveOrigins(spec, ns, deps, typeSpec, apiVersion)
	return res.spec, err
}

// resolveOrigins is resolveSpec recording the origins of what it put in (resolution); its
// errors are scrubbed of the foreign values.
func resolveOrigins(spec json.RawMessage, ns string, deps []graph.Dep, typeSpec json.RawMessage, apiVersion string) (resolution, error) {
	var res resolution
	values := make(map[graph.ID]map[string]any, len(deps))
	for _, d := range deps {
		if d.Exists {
			values[d.Target.Key()] = d.Values
		}
	}
	look := func(id graph.ID) (map[string]any, bool) {
		v, ok := values[id.Key()]
		return v, ok && v != nil
	}
	dec := json.NewDecoder(bytes.NewReader(spec))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return res, fmt.Errorf("read spec: %w", err)
	}
	var problems []string
	from := map[string]string{} // path → the string that was resolved there
	v = walkStrings(v, "spec", func(p, s string) any {
		if !graph.Contains(s) {
			return s
		}
		out, missing, err := graph.Resolve(s, ns, look)
		if err != nil {
			problems = append(problems, p+": "+err.Error())
			return s
		}
		for _, m := range missing {
			problems = append(problems, fmt.Sprintf("%s: %s: %s", p, m.Ref, m.Why))
		}
		if len(missing) == 0 && smuggles(out, 0) {
			// An output is data, never a secret reference or an encrypted field's marker:
			// those are put back from the resource's own source after resolution, and an
			// output (which another source, or the outside, controls) must not name one.
			problems = append(problems, fmt.Sprintf("%s: %s: the output holds a secretRef or an encrypted-field marker, which an output may not bring", p, s))
			return s
		}
		from[p] = s
		if other, vals := foreignRefs(s, ns, look); len(other) > 0 {
			if res.origins == nil {
				res.origins = map[string][]string{}
			}
			res.origins[p] = other
			// The whole string, and each value spliced into it: a message may quote either.
			res.foreign = actions.Leaves(res.foreign, out)
			for _, fv := range vals {
				res.foreign = actions.Leaves(res.foreign, fv)
			}
		}
		return out
	})
	res.foreign = tidyForeign(res.foreign)
	scrub := actions.Scrubber(res.foreign)
	if len(problems) > 0 {
		return resolution{}, actions.Terminalf("cannot resolve references: %s", scrub(strings.Join(problems, "; ")))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return resolution{}, fmt.Errorf("encode resolved spec: %w", err)
	}
	if out, err := manifest.Canonical(b); err == nil {
		b = out
	}
	res.spec = b
	if len(typeSpec) == 0 {
		return res, nil
	}
	sp, err := manifest.ValidateResolved(typeSpec, apiVersion, b)
	if err != nil {
		return resolution{}, err
	}
	if len(sp) > 0 {
		msgs := make([]string, 0, len(sp))
		for _, p := range sp {
			m := p.Path + ": " + p.Msg
			if ref := refAt(from, p.Path); ref != "" {
				m = p.Path + " (from " + strconv.Quote(ref) + "): " + p.Msg
			}
			msgs = append(msgs, m)
		}
		slices.Sort(msgs)
		return resolution{}, actions.Terminalf("the resolved spec does not match the schema: %s", scrub(strings.Join(msgs, "; ")))
	}
	return res, nil
}

// foreignRefs lists the namespaces other than ns that the references of s read from (sorted,
// without repeats), and the value each of those references resolved to: a value spliced
// into a longer string is scrubbed on its own, not only as part of the whole.
func foreignRefs(s, ns string, look graph.Lookup) ([]string, []any) {
	refs, err := graph.Parse(s, ns)
	if err != nil {
		return nil, nil
	}
	var out []string
	var values []any
	for _, r := range refs {
		if r.Target.Namespace == ns {
			continue
		}
		out = append(out, r.Target.Namespace)
		if v, missing, err := graph.Resolve(r.String(), ns, look); err == nil && len(missing) == 0 {
			values = append(values, v)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), values
}

// foreignIn returns the values of resolved (a spec as resolveOrigins made it from spec, in
// namespace ns) that came from other namespaces: the leaves at the paths of origins, and in
// a string that spliced references into text, each spliced value, found by matching the
// string against spec's text at that path. A delete, which is called with the stored resolved
// spec, scrubs its messages of them as a reconcile does (resolution.foreign).
func foreignIn(spec, resolved json.RawMessage, ns string, origins map[string][]string) []string {
	if len(origins) == 0 {
		return nil
	}
	var rv, sv any
	if json.Unmarshal(resolved, &rv) != nil {
		return nil
	}
	templates := map[string]string{}
	if json.Unmarshal(spec, &sv) == nil {
		walkStrings(sv, "spec", func(p, s string) any {
			if _, ok := origins[p]; ok {
				templates[p] = s
			}
			return s
		})
	}
	var out []string
	walkValues(rv, "spec", func(p string, v any) bool {
		if _, ok := origins[p]; !ok {
			return true
		}
		out = actions.Leaves(out, v)
		if s, ok := v.(string); ok {
			out = append(out, spliced(templates[p], ns, s)...)
		}
		return false
	})
	return tidyForeign(out)
}

// tidyForeign drops the values too short to scrub (minForeign), sorted and without repeats.
func tidyForeign(v []string) []string {
	v = slices.DeleteFunc(v, func(s string) bool { return len(s) < minForeign })
	slices.Sort(v)
	return slices.Compact(v)
}

// spliced returns the values that the references of template to namespaces other than ns
// were replaced with to make resolved, by matching template's literal text in order; nil when
// resolved does not read as template (the spec changed since) or two references touch.
func spliced(template, ns, resolved string) []string {
	refs, err := graph.Parse(template, ns)
	if err != nil || len(refs) == 0 || graph.Whole(template, refs) {
		return nil
	}
	lead := graph.Unescape(template[:refs[0].Start])
	if !strings.HasPrefix(resolved, lead) {
		return nil
	}
	rest := resolved[len(lead):]
	var out []string
	for i, r := range refs {
		var v string
		if i == len(refs)-1 {
			tail := graph.Unescape(template[r.End:])
			if !strings.HasSuffix(rest, tail) {
				return nil
			}
			v = rest[:len(rest)-len(tail)]
		} else {
			between := graph.Unescape(template[r.End:refs[i+1].Start])
			j := strings.Index(rest, between)
			if between == "" || j < 0 {
				return out
			}
			v, rest = rest[:j], rest[j+len(between):]
		}
		if r.Target.Namespace != ns {
			out = append(out, v)
		}
	}
	return out
}

// walkValues calls fn with every value of v and its path (spec.a.b[0]), depth first; fn
// returns whether to go below the value.
func walkValues(v any, p string, fn func(p string, v any) bool) {
	if !fn(p, v) {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			walkValues(e, p+"."+k, fn)
		}
	case []any:
		for i, e := range x {
			walkValues(e, p+"["+strconv.Itoa(i)+"]", fn)
		}
	}
}

// smuggles reports whether a resolved value holds what the reveal step would act on: an
// object with a secretRef key, or a string holding an encrypted field's marker.
func smuggles(v any, depth int) bool {
	if depth > 64 {
		return true
	}
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["secretRef"]; ok {
			return true
		}
		for _, e := range x {
			if smuggles(e, depth+1) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if smuggles(e, depth+1) {
				return true
			}
		}
	case string:
		return strings.Contains(x, sealed.MarkerPrefix)
	}
	return false
}

// refAt returns the reference string resolved at path, or at the closest path above or below
// it (a violation inside a resolved object, or about a resolved field's parent).
func refAt(from map[string]string, path string) string {
	if s, ok := from[path]; ok {
		return s
	}
	best := ""
	for p := range from {
		if strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[") || strings.HasPrefix(p, path+".") || strings.HasPrefix(p, path+"[") {
			if best == "" || len(p) > len(best) {
				best = p
			}
		}
	}
	if best == "" {
		return ""
	}
	return from[best]
}

// walkStrings returns v with every string replaced by fn(path, s); paths are spelled like
// manifest errors (spec.a.b[0]).
func walkStrings(v any, p string, fn func(p, s string) any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = walkStrings(e, p+"."+k, fn)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = walkStrings(e, p+"["+strconv.Itoa(i)+"]", fn)
		}
		return x
	case string:
		return fn(p, x)
	default:
		return v
	}
}
