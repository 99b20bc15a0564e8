package manifest

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func secretRefOf(name, key any) map[string]any {
	return map[string]any{"secretRef": map[string]any{"name": name, "key": key}}
}

func TestIsSecretRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		v    any
		want bool
	}{
		{"well formed", secretRefOf("db", "password"), true},
		{"empty name", secretRefOf("", "password"), false},
		{"key not a string", secretRefOf("db", 1), false},
		{"key missing", map[string]any{"secretRef": map[string]any{"name": "db"}}, false},
		{"extra key inside", map[string]any{"secretRef": map[string]any{"name": "db", "key": "k", "ns": "x"}}, false},
		{"sibling key", map[string]any{"secretRef": map[string]any{"name": "db", "key": "k"}, "other": 1}, false},
		{"secretRef not an object", map[string]any{"secretRef": "db/k"}, false},
		{"string", "secretRef", false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		if got := isSecretRef(tt.v); got != tt.want {
			t.Errorf("%s: isSecretRef = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestUnderSecretRef(t *testing.T) {
	t.Parallel()
	v := map[string]any{
		"a":    secretRefOf("db", "k"),
		"list": []any{"x", secretRefOf("db", "k")},
		"b":    map[string]any{"c": "plain"},
		"d~/e": secretRefOf("db", "k"),
	}
	tests := []struct {
		ptr  string
		want bool
	}{
		{"/a", true},
		{"/a/secretRef", true},
		{"/a/secretRef/name", true},
		{"/list/1", true},
		{"/list/1/secretRef", true},
		{"/list/0", false},
		{"/list/9", false},
		{"/b/c", false},
		{"/d~0~1e", true},
		{"", false},
		{"/missing", false},
	}
	for _, tt := range tests {
		if got := underSecretRef(v, tt.ptr); got != tt.want {
			t.Errorf("underSecretRef(%q) = %v, want %v", tt.ptr, got, tt.want)
		}
	}
	if !underSecretRef(secretRefOf("db", "k"), "") {
		t.Error("a reference as the whole value: want true")
	}
}

func TestSecretRefProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		v    any
		want []string
	}{
		{"none", map[string]any{"a": "x"}, nil},
		{"well formed", map[string]any{"a": secretRefOf("db", "k")}, nil},
		{"key missing", map[string]any{"a": map[string]any{"secretRef": map[string]any{"name": "db"}}}, []string{"spec.a.secretRef"}},
		{"extra key inside", map[string]any{"a": map[string]any{"secretRef": map[string]any{"name": "db", "key": "k", "x": "y"}}}, []string{"spec.a.secretRef"}},
		{"sibling key", map[string]any{"a": map[string]any{"secretRef": map[string]any{"name": "db", "key": "k"}, "x": "y"}}, []string{"spec.a.secretRef"}},
		{"in a list", map[string]any{"l": []any{map[string]any{"secretRef": "x"}}}, []string{"spec.l[0].secretRef"}},
		{"at the top", map[string]any{"secretRef": 1}, []string{"spec.secretRef"}},
	}
	for _, tt := range tests {
		var got []string
		for _, p := range secretRefProblems(tt.v, path{"spec"}) {
			got = append(got, p.path.String())
			if p.msg != secretRefHelp {
				t.Errorf("%s: message %q", tt.name, p.msg)
			}
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: problems at %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestSecretRefThroughLoad(t *testing.T) {
	t.Parallel()
	schema := `type: object
additionalProperties: false
required: [password, port]
properties:
  password: {type: string, minLength: 8}
  port: {type: integer}
  db:
    type: object
    additionalProperties: false
    required: [host]
    properties:
      host: {type: string}
      port: {type: integer, default: 5432}
`
	tests := []struct {
		name, spec string
		want       []string
	}{
		{"a reference stands for a string", "password: {secretRef: {name: db, key: password}}\nport: 1", nil},
		{"not for an integer or an object", "password: {secretRef: {name: db, key: password}}\nport: {secretRef: {name: db, key: port}}\ndb: {secretRef: {name: db, key: conn}}", []string{
			"w.yaml:6: spec.port: a secret reference resolves to a string; it cannot stand for an integer",
			"w.yaml:7: spec.db: a secret reference resolves to a string; it cannot stand for an object",
		}},
		{"other problems remain", "password: {secretRef: {name: db, key: password}}\nport: x", []string{"w.yaml:6: spec.port: expected integer, but got string"}},
		// Filling db.port in would also make the reference malformed.
		{"defaults leave a reference alone", "password: {secretRef: {name: db, key: password}}\nport: 1\ndb: {secretRef: {name: db, key: conn}}", []string{
			"w.yaml:7: spec.db: a secret reference resolves to a string; it cannot stand for an object",
		}},
		{"malformed reference", "password: {secretRef: {name: db}}\nport: 1", []string{"w.yaml:5: spec.password.secretRef: " + secretRefHelp}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewLoader().Load(files("types.yaml", widgetType(schema), "w.yaml", widget("w", tt.spec)), Options{})
			got := problems(t, err)
			// A malformed reference is also not a string: only its own problem is asserted.
			if len(tt.want) == 1 && strings.Contains(tt.want[0], "secretRef:") {
				if !slices.Contains(got, tt.want[0]) {
					t.Errorf("got\n%s\nwant among them\n%s", strings.Join(got, "\n"), tt.want[0])
				}
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestSecretRefPlacement: a reference resolves to a string, so it is refused at the root of
// the spec and wherever the schema wants something a string can never be.
func TestSecretRefPlacement(t *testing.T) {
	t.Parallel()
	const ref = "{secretRef: {name: db, key: k}}"
	const refused = "a secret reference resolves to a string; it cannot stand for "
	tests := []struct {
		name, schema, spec string
		want               []string
	}{
		{
			name: "whole spec",
			schema: `type: object
required: [size]
additionalProperties: false
properties: {size: {type: integer, maximum: 10}}
x-trueup-validations: [{rule: "self.size < 5"}]
`,
			spec: "secretRef: {name: anything, key: k}",
			want: []string{"w.yaml:4: spec: " + refRootMsg},
		},
		{name: "whole spec, no schema constraints", schema: "type: object\n", spec: "secretRef: {name: db, key: k}", want: []string{"w.yaml:4: spec: " + refRootMsg}},
		{name: "string", schema: "type: object\nproperties: {a: {type: string, pattern: '^x'}}\n", spec: "a: " + ref},
		{name: "no type", schema: "type: object\nproperties: {a: {description: anything}}\n", spec: "a: " + ref},
		{name: "not in the schema", schema: "type: object\n", spec: "a: " + ref},
		{name: "type list with string", schema: "type: object\nproperties: {a: {type: [integer, string]}}\n", spec: "a: " + ref},
		{name: "object", schema: "type: object\nproperties: {a: {type: object}}\n", spec: "a: " + ref, want: []string{"w.yaml:5: spec.a: " + refused + "an object"}},
		{name: "array", schema: "type: object\nproperties: {a: {type: array, items: {type: string}}}\n", spec: "a: " + ref, want: []string{"w.yaml:5: spec.a: " + refused + "an array"}},
		{name: "integer", schema: "type: object\nproperties: {a: {type: integer}}\n", spec: "a: " + ref, want: []string{"w.yaml:5: spec.a: " + refused + "an integer"}},
		{name: "number", schema: "type: object\nproperties: {a: {type: number}}\n", spec: "a: " + ref, want: []string{"w.yaml:5: spec.a: " + refused + "a number"}},
		{name: "boolean", schema: "type: object\nproperties: {a: {type: boolean}}\n", spec: "a: " + ref, want: []string{"w.yaml:5: spec.a: " + refused + "a boolean"}},
		{name: "type list without string", schema: "type: object\nproperties: {a: {type: [integer, 'null']}}\n", spec: "a: " + ref, want: []string{"w.yaml:5: spec.a: " + refused + "an integer or null"}},
		{name: "properties without type", schema: "type: object\nproperties: {a: {properties: {b: {type: string}}}}\n", spec: "a: " + ref, want: []string{"w.yaml:5: spec.a: " + refused + "an object"}},
		{name: "items without type", schema: "type: object\nproperties: {a: {items: {type: string}}}\n", spec: "a: " + ref, want: []string{"w.yaml:5: spec.a: " + refused + "an array"}},
		{name: "list item of strings", schema: "type: object\nproperties: {a: {type: array, items: {type: string}}}\n", spec: "a: [x, " + ref + "]"},
		{name: "list item of objects", schema: "type: object\nproperties: {a: {type: array, items: {type: object}}}\n", spec: "a: [" + ref + "]", want: []string{"w.yaml:5: spec.a[0]: " + refused + "an object"}},
		{name: "additionalProperties", schema: "type: object\nadditionalProperties: {type: integer}\n", spec: "a: " + ref, want: []string{"w.yaml:5: spec.a: " + refused + "an integer"}},
		{name: "nested", schema: "type: object\nproperties: {db: {type: object, properties: {port: {type: integer}, host: {type: string}}}}\n", spec: "db:\n  host: " + ref + "\n  port: " + ref, want: []string{"w.yaml:7: spec.db.port: " + refused + "an integer"}},
		{name: "local $ref", schema: "type: object\nproperties: {a: {$ref: '#/$defs/n'}}\n$defs: {n: {type: integer}}\n", spec: "a: " + ref, want: []string{"w.yaml:5: spec.a: " + refused + "an integer"}},
		{name: "allOf", schema: "type: object\nproperties: {a: {allOf: [{minimum: 1}, {type: number}]}}\n", spec: "a: " + ref, want: []string{"w.yaml:5: spec.a: " + refused + "a number"}},
		{name: "anyOf with a string branch", schema: "type: object\nproperties: {a: {anyOf: [{type: integer}, {type: string}]}}\n", spec: "a: " + ref},
		{name: "anyOf without one", schema: "type: object\nproperties: {a: {anyOf: [{type: integer}, {type: boolean}]}}\n", spec: "a: " + ref, want: []string{"w.yaml:5: spec.a: " + refused + "an integer or a boolean"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewLoader().Load(files("types.yaml", widgetType(tt.schema), "w.yaml", widget("w", tt.spec)), Options{})
			if got := problems(t, err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
