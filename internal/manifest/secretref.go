package manifest

import (
	"strconv"
	"strings"
)

// A spec value {secretRef: {name: NAME, key: KEY}} stands for any value: it is resolved
// from the controller's secret stores when the action is called, so at ingest its place
// may hold whatever the schema asks for. Schema problems at or inside such a node are
// dropped, and CEL rules that fail to evaluate on a level holding one are skipped.
const secretRefKey = "secretRef"

// isSecretRef reports whether v is a well-formed reference: an object whose only key is
// secretRef, holding exactly a non-empty string name and key.
func isSecretRef(v any) bool {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return false
	}
	ref, ok := m[secretRefKey].(map[string]any)
	if !ok || len(ref) != 2 {
		return false
	}
	name, ok1 := ref["name"].(string)
	key, ok2 := ref["key"].(string)
	return ok1 && ok2 && name != "" && key != ""
}

// containsSecretRef reports whether v is or holds a reference.
func containsSecretRef(v any) bool {
	if isSecretRef(v) {
		return true
	}
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if containsSecretRef(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if containsSecretRef(e) {
				return true
			}
		}
	}
	return false
}

// underSecretRef reports whether the JSON pointer ptr into v points at or inside a
// reference.
func underSecretRef(v any, ptr string) bool {
	if isSecretRef(v) {
		return true
	}
	if ptr == "" {
		return false
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			v = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return false
			}
			v = x[i]
		default:
			return false
		}
		if isSecretRef(v) {
			return true
		}
	}
	return false
}

const secretRefHelp = "a secret reference must be {secretRef: {name: NAME, key: KEY}} with non-empty strings and nothing else"

// secretRefProblems reports the objects of v that use the secretRef key but are not
// well-formed references, at the path of their secretRef field.
func secretRefProblems(v any, at path) []schemaProblem {
	if !usesSecretRef(v, 0) {
		return nil // the common case, without building a path per field
	}
	var out []schemaProblem
	var walk func(v any, at path, depth int)
	walk = func(v any, at path, depth int) {
		if depth > maxDepth {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			if _, ok := x[secretRefKey]; ok && !isSecretRef(x) {
				out = append(out, schemaProblem{path: at.key(secretRefKey), msg: secretRefHelp})
			}
			if isSecretRef(x) {
				return
			}
			// Unsorted: Load sorts the problems it reports.
			for k, e := range x {
				walk(e, at.key(k), depth+1)
			}
		case []any:
			for i, e := range x {
				walk(e, at.index(i), depth+1)
			}
		}
	}
	walk(v, at, 0)
	return out
}

// usesSecretRef reports whether any object in v has a secretRef key.
func usesSecretRef(v any, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x[secretRefKey]; ok {
			return true
		}
		for _, e := range x {
			if usesSecretRef(e, depth+1) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if usesSecretRef(e, depth+1) {
				return true
			}
		}
	}
	return false
}
