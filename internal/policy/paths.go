package policy

import (
	"encoding/json"
	"reflect"
	"slices"
)

// ChangedPaths lists where newSpec differs from oldSpec, as rules read it (change.paths):
// the path of each field whose value differs, was added or was removed, under objects
// ("spec.size", "spec.tags.env"); a list that differs is one path, its own. Sorted; empty
// when the specs are equal. A spec that is not JSON (or none) reads as null.
func ChangedPaths(oldSpec, newSpec json.RawMessage) []string {
	var a, b any
	_ = json.Unmarshal(oldSpec, &a)
	_ = json.Unmarshal(newSpec, &b)
	var out []string
	changedPaths("spec", a, b, &out)
	slices.Sort(out)
	return out
}

func changedPaths(path string, a, b any, out *[]string) {
	ma, okA := a.(map[string]any)
	mb, okB := b.(map[string]any)
	if !okA || !okB {
		if !reflect.DeepEqual(a, b) {
			*out = append(*out, path)
		}
		return
	}
	for k, va := range ma {
		vb, ok := mb[k]
		if !ok {
			*out = append(*out, path+"."+k)
			continue
		}
		changedPaths(path+"."+k, va, vb, out)
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			*out = append(*out, path+"."+k)
		}
	}
}
