package manifest

import (
	"testing"
)

func TestSchemaParts(t *testing.T) {
	t.Parallel()
	const object = `{"type": "object", "required": ["size"], "additionalProperties": false, "$defs": {"name": {"type": "string", "pattern": "^[a-z]+$"}},
		"properties": {"size": {"type": "integer", "minimum": 1}, "name": {"$ref": "#/$defs/name"}, "tags": {"type": "array", "items": {"type": "string"}}}}`
	for _, tc := range []struct {
		name   string
		schema string
		spec   string
		split  bool // the schema's root is split
		valid  bool // validated whole
	}{
		{"valid", object, `{"size": 3, "name": "abc", "tags": ["x"]}`, true, true},
		{"property invalid", object, `{"size": 0, "name": "abc"}`, true, false},
		{"through $ref", object, `{"size": 1, "name": "ABC"}`, true, false},
		{"missing required", object, `{"name": "abc"}`, true, false},
		{"additional closed", object, `{"size": 1, "other": 1}`, true, false},
		{"additional schema", `{"properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}}`, `{"a": "x", "b": "y"}`, true, false},
		{"additional schema valid", `{"properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}}`, `{"a": "x", "b": 2}`, true, true},
		{"open", `{"type": "object", "properties": {"a": {"type": "string"}}}`, `{"a": "x", "b": [1]}`, true, true},
		{"root keyword not split", `{"type": "object", "minProperties": 3, "properties": {"a": {"type": "string"}}}`, `{"a": "x"}`, false, false},
		{"combinator not split", `{"oneOf": [{"required": ["a"]}, {"required": ["b"]}], "properties": {"a": {}, "b": {}}}`, `{"a": 1, "b": 2}`, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			canon, err := Canonical([]byte(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			cs := compileSchema(canon, hashJSON(canon))
			if cs.schema == nil {
				t.Fatalf("schema: %s", cs.errMsg)
			}
			if (cs.parts != nil) != tc.split {
				t.Fatalf("split %v, want %v", cs.parts != nil, tc.split)
			}
			v, err := decodeNumbers([]byte(tc.spec))
			if err != nil {
				t.Fatal(err)
			}
			if whole := len(cs.validate(v, specRoot)) == 0; whole != tc.valid {
				t.Fatalf("validated whole: valid %v, want %v", whole, tc.valid)
			}
			var pm partsMemo
			for range 2 { // the second time from the memo
				if got := pm.valid(cs, v); got != (tc.split && tc.valid) {
					t.Errorf("valid by parts %v, want %v", got, tc.split && tc.valid)
				}
			}
		})
	}
}

// A schema whose rules do not compile keeps nothing compiled of it: its type is broken.
func TestSchemaBrokenRuleKeepsNoParts(t *testing.T) {
	t.Parallel()
	canon, err := Canonical([]byte(`{"type": "object", "properties": {"size": {"type": "integer", "default": 1}},
		"x-trueup-validations": [{"rule": "self.size <"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	cs := compileSchema(canon, hashJSON(canon))
	if cs.errMsg == "" {
		t.Fatal("the broken rule compiled")
	}
	if cs.schema != nil || cs.defaults != nil || cs.doc != nil || cs.parts != nil || cs.rules != nil {
		t.Fatalf("kept of a broken schema: schema %v, defaults %v, doc %v, parts %v, rules %v",
			cs.schema != nil, cs.defaults != nil, cs.doc != nil, cs.parts != nil, cs.rules != nil)
	}
}
