package preview

import (
	"bytes"
	"encoding/json"

	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/manifest"
)

// resolveRefs returns spec with each string holding output references resolved from
// outputs (the current outputs, by ID.Key()) when every reference in it resolves; a string
// with a reference that does not (a resource the pull request adds, an output not there
// yet) is left as written. A plan sees what a reconcile would, as far as it is known now.
func resolveRefs(spec json.RawMessage, ns string, outputs map[graph.ID]map[string]any) json.RawMessage {
	if !bytes.Contains(spec, []byte("${{")) {
		return spec
	}
	v, err := decode(spec)
	if err != nil {
		return spec
	}
	look := func(id graph.ID) (map[string]any, bool) {
		o, ok := outputs[id.Key()]
		return o, ok && o != nil
	}
	v = walkStrings(v, func(s string) any {
		if !graph.Contains(s) {
			return s
		}
		out, missing, err := graph.Resolve(s, ns, look)
		if err != nil || len(missing) > 0 {
			return s
		}
		return out
	})
	b, err := json.Marshal(v)
	if err != nil {
		return spec
	}
	if c, err := manifest.Canonical(b); err == nil {
		return c
	}
	return b
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
