package policy

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
)

// ChangedPaths lists the field paths (change.paths) where spec differs from oldSpec: "spec"
// followed by the object keys and list indexes down to the first value that differs
// ("spec.size", "spec.tags.env", "spec.ports[1]"), sorted. A key added or removed is a
// changed path; a list of another length changes as a whole. With no oldSpec (a first
// apply) every top-level key of spec is changed; spec or oldSpec not JSON gives ["spec"].
func ChangedPaths(oldSpec, spec json.RawMessage) []string {
	var a, b any
	if len(oldSpec) > 0 && json.Unmarshal(oldSpec, &a) != nil || len(spec) > 0 && json.Unmarshal(spec, &b) != nil {
		return []string{"spec"}
	}
	var out []string
	diffPaths("spec", a, b, &out)
	slices.Sort(out)
	return out
}

func diffPaths(at string, a, b any, out *[]string) {
	switch bv := b.(type) {
	case map[string]any:
		av, ok := a.(map[string]any)
		if !ok {
			if a != nil || at != "spec" {
				*out = append(*out, at)
				return
			}
			av = map[string]any{}
		}
		for k, v := range bv {
			diffPaths(at+"."+k, av[k], v, out)
		}
		for k, v := range av {
			if _, ok := bv[k]; !ok {
				diffPaths(at+"."+k, v, nil, out)
			}
		}
		return
	case []any:
		if av, ok := a.([]any); ok && len(av) == len(bv) {
			for i := range bv {
				diffPaths(at+"["+strconv.Itoa(i)+"]", av[i], bv[i], out)
			}
			return
		}
	}
	if !reflect.DeepEqual(a, b) {
		*out = append(*out, at)
	}
}
