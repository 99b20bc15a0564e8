package manifest

import (
	"slices"
	"strconv"
	"strings"
)

// A spec value {secretRef: {name: NAME, key: KEY}} stands for a string: it is resolved
// from the controller's secret stores when the action is called, so at ingest its value
// is not known. Schema problems at or inside such a node are dropped, but a reference is
// refused where no string could be valid (see refPlacementProblems), and CEL rules are
// evaluated with the references' places unknown: a rule whose outcome depends on one is
// skipped (see celRule.eval).
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

// underSecretRef reports whether the JSON pointer ptr into v points at or inside a
// reference.
func underSecretRef(v any, ptr string) bool {
	if isSecretRef(v) {
		return true
	}
	found := false
	walkPointer(v, strings.TrimPrefix(ptr, "/"), func(step any) bool {
		found = isSecretRef(step)
		return !found
	})
	return found
}

// walkPointer follows the tokens of a JSON pointer (without its leading "/"; "" is the
// root) from v, calling visit with each value reached until it returns false. It returns the
// last value reached, or nil when a token leads nowhere.
func walkPointer(v any, ptr string, visit func(any) bool) any {
	if ptr == "" {
		return v
	}
	for _, tok := range strings.Split(ptr, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			v = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
		if visit != nil && !visit(v) {
			return v
		}
	}
	return v
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

// What a reference may stand for. The secrets resolver always yields a string: the
// node {secretRef: …} is replaced by the secret's value as a JSON string. So a reference
// is refused at ingest where a string can never be valid:
//   - at the root of the spec, which the action expects to be an object;
//   - where the schema's type excludes string (object, array, integer, number, boolean,
//     null, or a list of those), or, with no type, where the schema describes an object
//     (properties, additionalProperties, required) or an array (items).
//
// A reference where the type is string, includes string, or is absent (any value) is
// accepted, and the schema's other keywords (pattern, minLength, enum, …) are not checked
// against it: the value is not known before the call. The schema is followed through
// properties, additionalProperties, items, allOf and local $ref; under anyOf and oneOf
// nothing is known about the nested values, and at a reference such a keyword refuses it
// only when every branch does.
const refRootMsg = "a secret reference cannot stand for the whole spec: the action expects an object, and a reference resolves to a string"

// refPlacementProblems reports the references of v (a spec, at) that stand where the
// schema (decoded, root) wants something other than a string. Call it only for specs
// that use the secretRef key.
func refPlacementProblems(root any, v any, at path) []schemaProblem {
	if isSecretRef(v) {
		return []schemaProblem{{path: at, msg: refRootMsg}}
	}
	rs := refSchemas{root: root}
	var out []schemaProblem
	var walk func(v any, schemas []map[string]any, at path, depth int)
	walk = func(v any, schemas []map[string]any, at path, depth int) {
		if depth > maxDepth || len(schemas) == 0 {
			return
		}
		if isSecretRef(v) {
			var kinds []string
			for _, s := range schemas {
				if kinds = rs.demands(s, depth); kinds != nil {
					break
				}
			}
			if kinds != nil {
				out = append(out, schemaProblem{path: at, msg: "a secret reference resolves to a string; it cannot stand for " + kindPhrase(kinds)})
			}
			return
		}
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x { // unsorted: Load sorts the problems it reports
				var sub []map[string]any
				for _, s := range schemas {
					if props, _ := s["properties"].(map[string]any); props != nil {
						if ps, ok := props[k]; ok {
							sub = rs.expand(sub, ps, depth)
							continue
						}
					}
					// A key matching patternProperties is not under additionalProperties;
					// rather than match patterns here, such a schema says nothing.
					if _, pp := s["patternProperties"]; !pp {
						sub = rs.expand(sub, s["additionalProperties"], depth)
					}
				}
				walk(e, sub, at.key(k), depth+1)
			}
		case []any:
			var sub []map[string]any
			for _, s := range schemas {
				sub = rs.expand(sub, s["items"], depth)
			}
			for i, e := range x {
				walk(e, sub, at.index(i), depth+1)
			}
		}
	}
	walk(v, rs.expand(nil, root, 0), at, 0)
	return out
}

// refSchemas follows a decoded schema for refPlacementProblems.
type refSchemas struct{ root any }

// expand appends to list the schema s and every schema that applies with it through allOf
// and local $ref. Boolean schemas and anything unreadable are left out: they say nothing
// about a type.
func (rs refSchemas) expand(list []map[string]any, s any, depth int) []map[string]any {
	m, ok := s.(map[string]any)
	if !ok || depth > maxDepth || len(list) > maxDepth {
		return list
	}
	list = append(list, m)
	if r, ok := m["$ref"].(string); ok {
		list = rs.expand(list, rs.resolve(r), depth+1)
	}
	if all, ok := m["allOf"].([]any); ok {
		for _, e := range all {
			list = rs.expand(list, e, depth+1)
		}
	}
	return list
}

// resolve returns the schema a local $ref ("#" or "#/a/b") points to, or nil.
func (rs refSchemas) resolve(ref string) any {
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	if ptr == "" {
		return rs.root
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil
	}
	return walkPointer(rs.root, ptr[1:], nil)
}

// demands returns the kinds of value schema s (with what applies through allOf and $ref)
// requires when none of them is a string, or nil when a string may do.
func (rs refSchemas) demands(s map[string]any, depth int) []string {
	for _, m := range rs.expand(nil, s, depth) {
		if kinds := demandsOne(m); kinds != nil {
			return kinds
		}
		for _, k := range []string{"anyOf", "oneOf"} {
			branches, ok := m[k].([]any)
			if !ok || len(branches) == 0 {
				continue
			}
			var kinds []string
			for _, b := range branches {
				bm, ok := b.(map[string]any)
				if !ok {
					kinds = nil
					break
				}
				bk := rs.demands(bm, depth+1)
				if bk == nil {
					kinds = nil
					break
				}
				for _, x := range bk {
					if !slices.Contains(kinds, x) {
						kinds = append(kinds, x)
					}
				}
			}
			if kinds != nil {
				return kinds
			}
		}
	}
	return nil
}

// demandsOne reads one schema's own keywords: its type, or without one, the keywords that
// describe an object or an array.
func demandsOne(m map[string]any) []string {
	switch t := m["type"].(type) {
	case string:
		if t == "string" {
			return nil
		}
		return []string{t}
	case []any:
		var kinds []string
		for _, e := range t {
			s, _ := e.(string)
			if s == "string" {
				return nil
			}
			kinds = append(kinds, s)
		}
		return kinds
	}
	_, props := m["properties"].(map[string]any)
	_, required := m["required"].([]any)
	ap, hasAP := m["additionalProperties"]
	if _, apSchema := ap.(map[string]any); props || required || (hasAP && (apSchema || ap == false)) {
		return []string{"object"}
	}
	if _, ok := m["items"]; ok {
		return []string{"array"}
	}
	return nil
}

// kindPhrase spells JSON types for a message: "an object", "an integer or null".
func kindPhrase(kinds []string) string {
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		switch k {
		case "object", "array", "integer":
			parts[i] = "an " + k
		case "null":
			parts[i] = k
		default:
			parts[i] = "a " + k
		}
	}
	return strings.Join(parts, " or ")
}

// isMarker reports whether v is an encrypted field's marker.
func isMarker(v any) bool {
	s, ok := v.(string)
	return ok && strings.HasPrefix(s, EncryptedMarkerPrefix)
}

// usesMarker reports whether v holds an encrypted field's marker.
func usesMarker(v any, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch x := v.(type) {
	case string:
		return isMarker(x)
	case map[string]any:
		for _, e := range x {
			if usesMarker(e, depth+1) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if usesMarker(e, depth+1) {
				return true
			}
		}
	}
	return false
}

// underMarker reports whether the JSON pointer ptr into v points at a marker, or at a
// value below one (none: a marker is a string).
func underMarker(v any, ptr string) bool {
	return isMarker(walkPointer(v, strings.TrimPrefix(ptr, "/"), nil))
}
