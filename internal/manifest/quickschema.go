package manifest

import (
	"encoding/json"
	"math/big"
	"regexp"
	"strconv"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// quickSchema accepts the values that its schema surely accepts, without the validation
// library's bookkeeping (a map of the properties not yet evaluated and a scope for every
// object, a big.Rat for every number): a first sync validates every resource, and most
// specs are valid against a schema of types, properties, required keys, bounds, lengths,
// patterns and string enums. It is built from the compiled schema only when every
// subschema keeps to that part of JSON Schema (quickFrom); it never rejects: a value it
// does not accept for sure goes to the library, whose problems are the ones reported.
type quickSchema struct {
	types        uint8 // bits of quickTypes; 0 allows every type
	required     []string
	props        map[string]*quickSchema
	noAdditional bool         // additionalProperties: false
	additional   *quickSchema // additionalProperties as a schema; nil allows any
	items        *quickSchema // nil allows any item
	minItems     int          // -1 when unset, as maxItems
	maxItems     int
	minLen       int // -1 when unset, as maxLen
	maxLen       int
	pattern      *regexp.Regexp
	enum         []any // strings, booleans and null only
	// Bounds of integers, when set (the library's bounds are exact rationals: one that is
	// not an integer in int64's range makes no quickSchema).
	min, max, xmin, xmax *int64
}

const (
	quickNull = 1 << iota
	quickBoolean
	quickInteger
	quickNumber
	quickString
	quickArray
	quickObject
)

var quickTypes = map[string]uint8{"null": quickNull, "boolean": quickBoolean, "integer": quickInteger, "number": quickNumber,
	"string": quickString, "array": quickArray, "object": quickObject}

// quickFrom builds the quickSchema of s, nil when s (or a subschema) uses anything beyond
// that part: references, combinators, conditionals, formats, constants, number enums,
// tuples, property counts, pattern properties, dependencies, unevaluated properties or
// items, unique items, contains, content, multipleOf, extensions, boolean schemas.
func quickFrom(s *jsonschema.Schema, depth int) *quickSchema {
	if s == nil || depth > maxDepth || s.Format != "" || s.Always != nil || s.Ref != nil || s.RecursiveRef != nil ||
		s.DynamicRef != nil || len(s.Constant) > 0 || s.Not != nil || len(s.AllOf)+len(s.AnyOf)+len(s.OneOf) > 0 ||
		s.If != nil || s.MinProperties != -1 || s.MaxProperties != -1 || s.PropertyNames != nil || s.RegexProperties ||
		len(s.PatternProperties) > 0 || len(s.Dependencies)+len(s.DependentRequired)+len(s.DependentSchemas) > 0 ||
		s.UnevaluatedProperties != nil || s.UniqueItems || s.AdditionalItems != nil || len(s.PrefixItems) > 0 ||
		s.Contains != nil || s.UnevaluatedItems != nil || s.ContentEncoding != "" || s.ContentMediaType != "" ||
		s.ContentSchema != nil || s.MultipleOf != nil || len(s.Extensions) > 0 {
		return nil
	}
	q := &quickSchema{required: s.Required, minItems: s.MinItems, maxItems: s.MaxItems, minLen: s.MinLength, maxLen: s.MaxLength,
		pattern: s.Pattern}
	for _, t := range s.Types {
		bit, ok := quickTypes[t]
		if !ok {
			return nil
		}
		q.types |= bit
	}
	for _, e := range s.Enum {
		switch e.(type) {
		case string, bool, nil:
		default:
			return nil
		}
	}
	q.enum = s.Enum
	var ok bool
	if q.min, ok = quickBound(s.Minimum); !ok {
		return nil
	}
	if q.max, ok = quickBound(s.Maximum); !ok {
		return nil
	}
	if q.xmin, ok = quickBound(s.ExclusiveMinimum); !ok {
		return nil
	}
	if q.xmax, ok = quickBound(s.ExclusiveMaximum); !ok {
		return nil
	}
	if len(s.Properties) > 0 {
		q.props = make(map[string]*quickSchema, len(s.Properties))
		for name, sub := range s.Properties {
			if q.props[name] = quickFrom(sub, depth+1); q.props[name] == nil {
				return nil
			}
		}
	}
	switch a := s.AdditionalProperties.(type) {
	case nil:
	case bool:
		q.noAdditional = !a
	case *jsonschema.Schema:
		if q.additional = quickFrom(a, depth+1); q.additional == nil {
			return nil
		}
	default:
		return nil
	}
	items := s.Items2020
	switch it := s.Items.(type) {
	case nil:
	case *jsonschema.Schema:
		if items != nil {
			return nil
		}
		items = it
	default:
		return nil
	}
	if items != nil {
		if q.items = quickFrom(items, depth+1); q.items == nil {
			return nil
		}
	}
	return q
}

// quickBound is r as an int64 (nil when r is); ok is false when r is not an integer in
// int64's range.
func quickBound(r *big.Rat) (*int64, bool) {
	if r == nil {
		return nil, true
	}
	if !r.IsInt() || !r.Num().IsInt64() {
		return nil, false
	}
	n := r.Num().Int64()
	return &n, true
}

// accepts reports whether the library surely accepts v; false means it may not.
func (q *quickSchema) accepts(v any, depth int) bool {
	if depth > maxDepth {
		return false
	}
	var t uint8
	var n int64
	isInt := false
	switch x := v.(type) {
	case nil:
		t = quickNull
	case bool:
		t = quickBoolean
	case string:
		t = quickString
	case json.Number:
		t = quickNumber
		// The library reads a number as a rational: an integer literal is an integer of that
		// value, whatever its sign or leading zeros.
		var err error
		n, err = strconv.ParseInt(string(x), 10, 64)
		if isInt = err == nil; isInt {
			t |= quickInteger
		}
	case []any:
		t = quickArray
	case map[string]any:
		t = quickObject
	default:
		return false
	}
	if q.types != 0 && q.types&t == 0 {
		return false
	}
	if len(q.enum) > 0 {
		found := false
		for _, e := range q.enum {
			if e == v { // a number equals none of them
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	switch x := v.(type) {
	case json.Number:
		if q.min != nil || q.max != nil || q.xmin != nil || q.xmax != nil {
			if !isInt {
				return false
			}
			if q.min != nil && n < *q.min || q.max != nil && n > *q.max || q.xmin != nil && n <= *q.xmin || q.xmax != nil && n >= *q.xmax {
				return false
			}
		}
	case string:
		if q.minLen != -1 || q.maxLen != -1 {
			l := utf8.RuneCountInString(x)
			if q.minLen != -1 && l < q.minLen || q.maxLen != -1 && l > q.maxLen {
				return false
			}
		}
		if q.pattern != nil && !q.pattern.MatchString(x) {
			return false
		}
	case []any:
		if q.minItems != -1 && len(x) < q.minItems || q.maxItems != -1 && len(x) > q.maxItems {
			return false
		}
		if q.items != nil {
			for _, e := range x {
				if !q.items.accepts(e, depth+1) {
					return false
				}
			}
		}
	case map[string]any:
		for _, k := range q.required {
			if _, ok := x[k]; !ok {
				return false
			}
		}
		for k, e := range x {
			sub, known := q.props[k]
			switch {
			case known:
			case q.noAdditional:
				return false
			case q.additional != nil:
				sub = q.additional
			default:
				continue
			}
			if !sub.accepts(e, depth+1) {
				return false
			}
		}
	}
	return true
}
