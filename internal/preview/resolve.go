package preview

import (
	"bytes"
	"encoding/json"
	"sort"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/manifest"
)

// resolveRefs returns spec with each string holding output references resolved from
// outputs (the current outputs, by ID.Key()) when every reference in it resolves; a string
// with a reference that does not (a resource the pull request adds, an output not there
// yet) is left as written. A plan sees what a reconcile would, as far as it is known now.
//
// values are the resolved values that went into the spec (each string, and each number as
// written; the leaves of an object or array): what the plan's text, summary and error are
// scrubbed of before the preview stores or posts them.
func resolveRefs(spec json.RawMessage, ns string, outputs map[graph.ID]map[string]any) (_ json.RawMessage, values []string) {
	if !bytes.Contains(spec, []byte("${{")) {
		return spec, nil
	}
	v, err := decode(spec)
	if err != nil {
		return spec, nil
	}
	look := func(id graph.ID) (map[string]any, bool) {
		o, ok := outputs[id.Key()]
		return o, ok && o != nil
	}
	seen := map[string]bool{}
	v = walkStrings(v, func(s string) any {
		if !graph.Contains(s) {
			return s
		}
		out, missing, err := graph.Resolve(s, ns, look)
		if err != nil || len(missing) > 0 {
			return s
		}
		refs, _ := graph.Parse(s, ns)
		for _, r := range refs {
			if one, _, err := graph.Resolve(r.String(), ns, look); err == nil {
				for _, l := range actions.Leaves(nil, one) {
					seen[l] = true
				}
			}
		}
		return out
	})
	for s := range seen {
		values = append(values, s)
	}
	sort.Strings(values)
	b, err := json.Marshal(v)
	if err != nil {
		return spec, values
	}
	if c, err := manifest.Canonical(b); err == nil {
		return c, values
	}
	return b, values
}

func walkStrings(v any, fn func(string) any) any {
	switch x := v.(type) {
	case string:
		return fn(x)
	case map[string]any:
		for k, e := range x {
			x[k] = walkStrings(e, fn)
		}
	case []any:
		for i, e := range x {
			x[i] = walkStrings(e, fn)
		}
	}
	return v
}
