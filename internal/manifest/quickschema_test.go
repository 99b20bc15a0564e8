package manifest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// quickCompiled compiles schema as the loader does.
func quickCompiled(t testing.TB, schema string) *compiledSchema {
	t.Helper()
	cs := compileSchema(json.RawMessage(schema), hashJSON([]byte(schema)))
	if cs.schema == nil {
		t.Fatalf("%s: %s", schema, cs.errMsg)
	}
	return cs
}

// TestQuickSchemaPart: which schemas get a quickSchema, and what it accepts of values the
// library judges, for each of its keywords.
func TestQuickSchemaPart(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		schema string
		quick  bool
	}{
		{`{"type": "object", "required": ["size"], "properties": {"size": {"type": "integer", "minimum": 0}, "color": {"type": "string", "default": "blue"}}}`, true},
		{`{"type": "object", "additionalProperties": false, "properties": {"a": {"type": ["string", "null"], "enum": ["x", null]}}}`, true},
		{`{"properties": {"l": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 3}, "minItems": 1}}}`, true},
		{`{"additionalProperties": {"type": "number", "exclusiveMaximum": 10}}`, true},
		{`{"description": "anything", "x-trueup-validations": [{"rule": "true"}]}`, true},
		{`{"properties": {"e": {"type": "string", "format": "email"}}}`, false},
		{`{"properties": {"n": {"minimum": 0.5}}}`, false},
		{`{"properties": {"n": {"enum": [1, 2]}}}`, false},
		{`{"properties": {"n": {"const": "x"}}}`, false},
		{`{"anyOf": [{"type": "string"}, {"type": "integer"}]}`, false},
		{`{"$defs": {"d": {"type": "string"}}, "properties": {"r": {"$ref": "#/$defs/d"}}}`, false},
		{`{"properties": {"b": true}}`, false},
		{`{"patternProperties": {"^x": {"type": "string"}}}`, false},
		{`{"type": "array", "prefixItems": [{"type": "string"}]}`, false},
		{`{"type": "array", "uniqueItems": true}`, false},
		{`{"type": "object", "minProperties": 1}`, false},
		{`{"properties": {"n": {"multipleOf": 2}}}`, false},
		{`{"not": {"type": "string"}}`, false},
		{`{"if": {"type": "string"}, "then": {"minLength": 2}}`, false},
		{`{"propertyNames": {"maxLength": 3}}`, false},
		{`{"type": "array", "contains": {"type": "string"}}`, false},
		{`{"dependentRequired": {"a": ["b"]}}`, false},
		{`{"dependentSchemas": {"a": {"required": ["b"]}}}`, false},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "dependencies": {"a": ["b"]}}`, false},
		{`{"unevaluatedProperties": false}`, false},
		{`{"type": "array", "unevaluatedItems": false}`, false},
		{`{"type": "string", "contentMediaType": "application/json"}`, false},
		{`{"type": "string", "contentEncoding": "base64"}`, false},
		{`{"maxProperties": 2}`, false},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "type": "array", "items": [{"type": "string"}]}`, false},
		// additionalItems only speaks after a tuple: the library leaves it out.
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "type": "array", "items": {"type": "string"}, "additionalItems": false}`, true},
		{`{"$schema": "http://json-schema.org/draft-04/schema#", "properties": {"n": {"type": "integer", "minimum": 0, "exclusiveMinimum": true}}}`, true},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"s": {"type": "string", "maxLength": 2}}, "items": {"type": "string"}}`, true},
	} {
		if got := quickCompiled(t, c.schema).quick != nil; got != c.quick {
			t.Errorf("%s: a quickSchema %t, want %t", c.schema, got, c.quick)
		}
	}

	schema := `{"type": "object", "required": ["size"], "additionalProperties": false, "properties": {
		"size": {"type": "integer", "minimum": -2, "maximum": 10},
		"x": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 3},
		"n": {"type": "number"},
		"s": {"type": "string", "minLength": 2, "maxLength": 3, "pattern": "^[a-zé]+$"},
		"e": {"enum": ["a", true, null]},
		"l": {"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 2},
		"m": {"type": "object", "additionalProperties": {"type": "string"}}}}`
	cs := quickCompiled(t, schema)
	for _, c := range []struct {
		value string
		quick bool // accepted by the quickSchema; the library accepts every one of those
	}{
		{`{"size": 0}`, true}, {`{"size": -2}`, true}, {`{"size": 10}`, true}, {`{"size": 11}`, false}, {`{"size": -3}`, false},
		{`{"size": 1.0}`, false}, {`{"size": "1"}`, false}, {`{}`, false}, {`{"size": 1, "other": 1}`, false},
		{`{"size": 1, "x": 1}`, true}, {`{"size": 1, "x": 2}`, true}, {`{"size": 1, "x": 0}`, false}, {`{"size": 1, "x": 3}`, false},
		{`{"size": 1, "n": 1.5}`, true}, {`{"size": 1, "n": 7}`, true}, {`{"size": 1, "n": "7"}`, false},
		{`{"size": 1, "s": "ab"}`, true}, {`{"size": 1, "s": "ééé"}`, true}, {`{"size": 1, "s": "a"}`, false},
		{`{"size": 1, "s": "abcd"}`, false}, {`{"size": 1, "s": "A1"}`, false},
		{`{"size": 1, "e": "a"}`, true}, {`{"size": 1, "e": true}`, true}, {`{"size": 1, "e": null}`, true},
		{`{"size": 1, "e": "b"}`, false}, {`{"size": 1, "e": false}`, false}, {`{"size": 1, "e": 1}`, false},
		{`{"size": 1, "l": [true]}`, true}, {`{"size": 1, "l": []}`, false}, {`{"size": 1, "l": [true, false, true]}`, false},
		{`{"size": 1, "l": ["true"]}`, false},
		{`{"size": 1, "m": {"a": "b", "c": "d"}}`, true}, {`{"size": 1, "m": {"a": 1}}`, false}, {`{"size": 1, "m": []}`, false},
		{`{"size": 9223372036854775807}`, false}, {`{"size": 99999999999999999999}`, false}, {`{"size": -0}`, true},
	} {
		v := quickValue(t, c.value)
		if got := cs.quick.accepts(v, 0); got != c.quick {
			t.Errorf("%s: accepted %t, want %t", c.value, got, c.quick)
		}
		if c.quick {
			if err := cs.schema.Validate(v); err != nil {
				t.Errorf("%s: accepted, but the library says %v", c.value, err)
			}
		}
	}
}

func quickValue(t testing.TB, s string) any {
	t.Helper()
	v, err := decodeWithJSON(s)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

// TestQuickSchemaNeverAcceptsMore: random schemas of quickSchema's part (and past it), in
// each draft, and random values: whatever a quickSchema accepts, the library accepts.
func TestQuickSchemaNeverAcceptsMore(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(26, 27))
	drafts := []string{"", "http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-06/schema#",
		"http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2019-09/schema", "https://json-schema.org/draft/2020-12/schema"}
	quick, accepted := 0, 0
	for range 1000 {
		schema := randomSchema(r, 0)
		if d := drafts[r.IntN(len(drafts))]; d != "" {
			schema = fmt.Sprintf(`{"$schema": %q, `, d) + strings.TrimPrefix(schema, "{")
			schema = strings.Replace(schema, `", }`, `"}`, 1)
		}
		cs := compileSchema(json.RawMessage(schema), hashJSON([]byte(schema)))
		if cs.schema == nil || cs.quick == nil {
			continue
		}
		quick++
		for range 50 {
			value := randomValue(r, 0)
			v := quickValue(t, value)
			if cs.quick.accepts(v, 0) {
				accepted++
				if err := cs.schema.Validate(v); err != nil {
					t.Fatalf("schema %s, value %s: accepted, but the library says %v", schema, value, err)
				}
			}
		}
	}
	t.Logf("%d schemas, %d accepted", quick, accepted)
	if quick < 100 || accepted < 1000 {
		t.Fatalf("%d schemas of 1,000 had a quickSchema, which accepted %d values: too few to tell", quick, accepted)
	}
}

var (
	quickKeys    = []string{"a", "b", "size", "é"}
	quickNumbers = []string{"0", "-1", "3", "10", "-0", "1.0", "1.5", "1e2", "9223372036854775808", "-12"}
	quickStrings = []string{`""`, `"a"`, `"ab"`, `"abc"`, `"ééé"`, `"A"`, `"a b"`}
)

func randomSchema(r *rand.Rand, depth int) string {
	var parts []string
	add := func(p string, args ...any) { parts = append(parts, fmt.Sprintf(p, args...)) }
	types := []string{"null", "boolean", "integer", "number", "string", "array", "object"}
	switch r.IntN(3) {
	case 0:
		add(`"type": %q`, types[r.IntN(len(types))])
	case 1:
		add(`"type": [%q, %q]`, types[r.IntN(len(types))], types[(r.IntN(len(types)))])
	}
	bound := func() string {
		if r.IntN(6) == 0 {
			return "2.5"
		}
		return []string{"-1", "0", "3", "10"}[r.IntN(4)]
	}
	for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
		switch r.IntN(16) {
		case 0, 1, 2, 3:
			add(`%q: %s`, k, bound())
		case 4:
			if strings.HasPrefix(k, "exclusive") {
				add(`%q: true`, k) // draft-04's spelling, another draft's error
			}
		}
	}
	for _, k := range []string{"minLength", "maxLength", "minItems", "maxItems"} {
		if r.IntN(5) == 0 {
			add(`%q: %d`, k, r.IntN(4))
		}
	}
	if r.IntN(6) == 0 {
		add(`"pattern": %q`, []string{"^a", "b$", "^[a-z]*$"}[r.IntN(3)])
	}
	if r.IntN(6) == 0 {
		add(`"enum": [%s, %s]`, []string{`"a"`, `true`, `null`, `1`}[r.IntN(4)], quickStrings[r.IntN(len(quickStrings))])
	}
	if r.IntN(12) == 0 {
		add(`"format": "email"`)
	}
	if depth < 3 {
		if r.IntN(2) == 0 {
			var props []string
			for _, k := range quickKeys {
				if r.IntN(2) == 0 {
					props = append(props, fmt.Sprintf("%q: %s", k, randomSchema(r, depth+1)))
				}
			}
			add(`"properties": {%s}`, strings.Join(props, ", "))
		}
		if r.IntN(4) == 0 {
			add(`"required": [%q]`, quickKeys[r.IntN(len(quickKeys))])
		}
		switch r.IntN(5) {
		case 0:
			add(`"additionalProperties": false`)
		case 1:
			add(`"additionalProperties": %s`, randomSchema(r, depth+1))
		}
		switch r.IntN(12) {
		case 0, 1, 2, 3:
			add(`"items": %s`, randomSchema(r, depth+1))
		case 4:
			add(`"items": [%s]`, randomSchema(r, depth+1)) // a tuple before 2020-12
		case 5:
			add(`"additionalProperties": %t`, r.IntN(2) == 0)
		case 6:
			add(`"items": %t`, r.IntN(2) == 0) // a boolean subschema
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func randomValue(r *rand.Rand, depth int) string {
	k := r.IntN(7)
	if depth >= 3 {
		k = r.IntN(4)
	}
	switch k {
	case 0:
		return []string{"null", "true", "false"}[r.IntN(3)]
	case 1:
		return quickNumbers[r.IntN(len(quickNumbers))]
	case 2, 3:
		return quickStrings[r.IntN(len(quickStrings))]
	case 4:
		var items []string
		for range r.IntN(4) {
			items = append(items, randomValue(r, depth+1))
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	var fields []string
	for _, key := range quickKeys {
		if r.IntN(2) == 0 {
			fields = append(fields, fmt.Sprintf("%q:%s", key, randomValue(r, depth+1)))
		}
	}
	return "{" + strings.Join(fields, ",") + "}"
}
