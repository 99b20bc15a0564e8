package manifest

import (
	"encoding/json"
	"testing"
)

// TopLevelField reads required, defaults, properties and patterns through allOf and local
// $ref, and says it cannot tell when anyOf, oneOf, not or if decide.
func TestTopLevelField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, schema string
		want         FieldSupport
	}{
		{"required", `{"type":"object","properties":{"owner":{"type":"string"}},"required":["owner"]}`, FieldGuaranteed},
		{"required only", `{"type":"object","required":["owner"]}`, FieldGuaranteed},
		{"default", `{"type":"object","properties":{"owner":{"type":"string","default":"ops"}}}`, FieldGuaranteed},
		{"required through $ref", `{"$ref":"#/$defs/b","$defs":{"b":{"properties":{"owner":{}},"required":["owner"]}}}`, FieldGuaranteed},
		{"required through allOf", `{"allOf":[{"required":["owner"]}]}`, FieldGuaranteed},
		{"optional", `{"type":"object","properties":{"owner":{"type":"string"}}}`, FieldOptional},
		{"optional through $ref", `{"$ref":"#/$defs/b","$defs":{"b":{"properties":{"owner":{}}}}}`, FieldOptional},
		{"nested default is not filled", `{"allOf":[{"properties":{"owner":{"default":"x"}}}]}`, FieldOptional},
		{"pattern", `{"type":"object","patternProperties":{"^own":{}}}`, FieldOptional},
		{"undeclared", `{"type":"object","properties":{"size":{}}}`, FieldUndeclared},
		{"forbidden", `{"type":"object","properties":{"size":{}},"additionalProperties":false}`, FieldForbidden},
		{"anyOf", `{"anyOf":[{"required":["owner"]},{"required":["team"]}]}`, FieldUnknown},
		{"unresolvable $ref", `{"$ref":"#/$defs/missing"}`, FieldUnknown},
	} {
		got, err := TopLevelField(json.RawMessage(tc.schema), "owner")
		if err != nil || got != tc.want {
			t.Errorf("%s: TopLevelField = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}
