package manifest

import (
	"encoding/json"
	"regexp"
	"slices"
)

// FieldSupport is what a version's schema says about one top-level field of every spec.
type FieldSupport int

const (
	// FieldGuaranteed: the schema requires the field, or the loader fills it from a default.
	FieldGuaranteed FieldSupport = iota
	// FieldOptional: the schema declares the field (or a pattern takes it), but a resource
	// may leave it out.
	FieldOptional
	// FieldUndeclared: the schema neither declares the field nor forbids it.
	FieldUndeclared
	// FieldForbidden: additionalProperties is false and no property or pattern takes it.
	FieldForbidden
	// FieldUnknown: anyOf, oneOf, not, if or a $ref that cannot be followed decide about
	// the spec; nothing certain can be said.
	FieldUnknown
)

// TopLevelField reads schema (a version's canonical JSON Schema) for the top-level spec field
// name, following allOf and local $ref as the loader's secret-reference check does. Defaults
// count only where the loader fills them: in the root schema's own properties.
func TopLevelField(schema json.RawMessage, name string) (FieldSupport, error) {
	var root any
	if err := json.Unmarshal(schema, &root); err != nil {
		return 0, err
	}
	if m, ok := root.(map[string]any); ok {
		if props, _ := m["properties"].(map[string]any); props != nil {
			if pm, _ := props[name].(map[string]any); pm != nil {
				if _, ok := pm["default"]; ok {
					return FieldGuaranteed, nil
				}
			}
		}
	}
	rs := refSchemas{root: root}
	var declared, forbidden, unknown bool
	for _, m := range rs.expand(nil, root, 0) {
		if req, _ := m["required"].([]any); slices.Contains(req, any(name)) {
			return FieldGuaranteed, nil
		}
		for _, k := range []string{"anyOf", "oneOf", "not", "if"} {
			if _, ok := m[k]; ok {
				unknown = true
			}
		}
		if r, ok := m["$ref"].(string); ok {
			if _, isMap := rs.resolve(r).(map[string]any); !isMap {
				unknown = true
			}
		}
		if props, _ := m["properties"].(map[string]any); props != nil {
			if _, ok := props[name]; ok {
				declared = true
			}
		}
		if pats, _ := m["patternProperties"].(map[string]any); pats != nil {
			for p := range pats {
				re, err := regexp.Compile(p)
				if err != nil {
					unknown = true
					continue
				}
				if re.MatchString(name) {
					declared = true
				}
			}
		}
		if ap, ok := m["additionalProperties"].(bool); ok && !ap {
			forbidden = true
		}
	}
	switch {
	case declared:
		return FieldOptional, nil
	case unknown:
		return FieldUnknown, nil
	case forbidden:
		return FieldForbidden, nil
	}
	return FieldUndeclared, nil
}
