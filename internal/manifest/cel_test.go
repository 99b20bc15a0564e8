package manifest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// widgetType declares Widget with schema (YAML, any indentation-free block: every line is
// indented under schema:). The schema's first line is line 10 of the file.
func widgetType(schema string) string {
	lines := strings.Split(strings.TrimRight(schema, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "        " + l
	}
	return `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Widget}
spec:
  group: example.com
  action: {name: provision}
  versions:
    - name: v1
      schema:
` + strings.Join(lines, "\n") + "\n"
}

// widget is a Widget named name with spec (YAML lines indented under spec:, from line 5).
func widget(name, spec string) string {
	lines := strings.Split(strings.TrimRight(spec, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: " + name + "}\nspec:\n" + strings.Join(lines, "\n") + "\n"
}

func TestCELRules(t *testing.T) {
	t.Parallel()
	minMax := `type: object
x-trueup-validations:
  - {rule: "self.min <= self.max", message: "min must not exceed max"}
properties:
  min: {type: integer}
  max: {type: integer}
`
	tests := []struct {
		name, schema, spec string
		want               []string
	}{
		{
			name:   "rule holds",
			schema: minMax,
			spec:   "min: 3\nmax: 5",
		},
		{
			name:   "violation at the object",
			schema: minMax,
			spec:   "min: 5\nmax: 3",
			want:   []string{"w.yaml:4: spec: min must not exceed max"},
		},
		{
			name: "default message, fieldPath",
			schema: `type: object
x-trueup-validations:
  - {rule: "self.min <= self.max", fieldPath: ".max"}
`,
			spec: "min: 5\nmax: 3",
			want: []string{"w.yaml:6: spec.max: failed rule: self.min <= self.max"},
		},
		{
			name: "rule on a nested property",
			schema: `type: object
properties:
  limits:
    type: object
    x-trueup-validations: [{rule: "self.cpu < 64", message: "at most 63 CPUs"}]
`,
			spec: "limits:\n  cpu: 64",
			want: []string{"w.yaml:5: spec.limits: at most 63 CPUs"},
		},
		{
			name: "rule on array items",
			schema: `type: object
properties:
  ports:
    type: array
    items:
      type: object
      x-trueup-validations: [{rule: "self.port > 0 && self.port < 65536", message: "port out of range"}]
`,
			spec: "ports:\n  - {port: 80}\n  - {port: 70000}\n  - {port: 0}",
			want: []string{"w.yaml:7: spec.ports[1]: port out of range", "w.yaml:8: spec.ports[2]: port out of range"},
		},
		{
			name: "rule on additionalProperties",
			schema: `type: object
additionalProperties:
  type: string
  x-trueup-validations: [{rule: "self.startsWith('v')", message: "must start with v"}]
`,
			spec: "a: v1\nb: x2",
			want: []string{"w.yaml:6: spec.b: must start with v"},
		},
		{
			name: "rule on a list as a whole",
			schema: `type: object
properties:
  tags:
    type: array
    x-trueup-validations: [{rule: "self.size() <= 2", message: "at most 2 tags"}]
`,
			spec: "tags: [a, b, c]",
			want: []string{"w.yaml:5: spec.tags: at most 2 tags"},
		},
		{
			name: "integers are ints",
			schema: `type: object
x-trueup-validations:
  - {rule: "type(self.n) == int && self.n == 3 && self.n / 2 == 1", message: "int arithmetic"}
  - {rule: "type(self.f) == double && self.f > 1.4", message: "double"}
  - {rule: "self.big > 1000000000000000000000.0", message: "big integers are doubles"}
`,
			spec: "n: 3\nf: 1.5\nbig: 123456789012345678901234567890",
		},
		{
			name:   "absent field: evaluation error",
			schema: "type: object\nx-trueup-validations: [{rule: \"self.missing == 1\"}]\n",
			spec:   "other: 1",
			want:   []string{"w.yaml:4: spec: rule could not be evaluated: self.missing == 1"},
		},
		{
			name:   "has() guards an optional field",
			schema: "type: object\nx-trueup-validations: [{rule: \"!has(self.missing) || self.missing == 1\"}]\n",
			spec:   "other: 1",
		},
		{
			name:   "not a bool",
			schema: "type: object\nx-trueup-validations: [{rule: \"self.other\"}]\n",
			spec:   "other: 1",
			want:   []string{"w.yaml:4: spec: rule did not return a bool: self.other"},
		},
		{
			name:   "rules run only once the schema holds",
			schema: "type: object\nrequired: [min]\nx-trueup-validations: [{rule: \"self.min > 0\"}]\n",
			spec:   "other: 1",
			want:   []string{"w.yaml:4: spec: missing properties: 'min'"},
		},
		{
			name:   "over the cost limit",
			schema: "type: object\nx-trueup-validations: [{rule: \"self.l.all(x, self.l.all(y, self.l.all(z, x + y + z >= 0)))\"}]\n",
			spec:   "l: [" + strings.Repeat("1, ", 199) + "1]",
			want:   []string{"w.yaml:4: spec: rule is too expensive to evaluate (over the cost limit of 1000000): self.l.all(x, self.l.all(y, self.l.all(z, x + y + z >= 0)))"},
		},
		{
			name:   "over the cost limit beside a secret reference",
			schema: "type: object\nx-trueup-validations: [{rule: \"self.l.all(x, self.l.all(y, self.l.all(z, x + y + z >= 0)))\"}]\n",
			spec:   "pw: {secretRef: {name: db, key: k}}\nl: [" + strings.Repeat("1, ", 199) + "1]",
			want:   []string{"w.yaml:4: spec: rule is too expensive to evaluate (over the cost limit of 1000000): self.l.all(x, self.l.all(y, self.l.all(z, x + y + z >= 0)))"},
		},
		{
			name: "over the cost budget of one resource",
			schema: `type: object
x-trueup-validations:
  - rule: "self.l.all(x, self.l.all(y, x + y >= 0))"
  - rule: "self.l.all(x, self.l.all(y, x + y >= 1))"
  - rule: "self.l.all(x, self.l.all(y, x + y >= 2))"
  - rule: "self.l.all(x, self.l.all(y, x + y >= 3))"
`,
			spec: "l: [" + strings.Repeat("1, ", 329) + "1]",
			want: []string{"w.yaml:4: spec: rules are too expensive to evaluate (over the cost budget of 1000000 for one resource): " +
				"self.l.all(x, self.l.all(y, x + y >= 2)) and the rules after it were not evaluated"},
		},
		{
			name: "many cheap evaluations stay within the budget",
			schema: `type: object
properties:
  ranges:
    type: array
    items:
      type: object
      x-trueup-validations: [{rule: "self.min <= self.max"}, {rule: "self.min == oldSelf.min"}]
`,
			spec: "ranges: [" + strings.Repeat("{min: 1, max: 2}, ", 499) + "{min: 1, max: 2}]",
		},
		{
			name: "error on a secret reference is skipped",
			schema: `type: object
properties:
  password:
    type: string
    minLength: 8
x-trueup-validations: [{rule: "self.password.startsWith('x')"}]
`,
			spec: "password: {secretRef: {name: db, key: password}}",
		},
		{
			name: "a rule reading a reference is skipped",
			schema: `type: object
x-trueup-validations: [{rule: "has(self.password.secretRef) == false", message: "no references here"}]
`,
			spec: "password: {secretRef: {name: db, key: password}}",
		},
		{
			name: "transition rules do not run at load",
			schema: `type: object
properties:
  engine: {type: string, x-trueup-validations: [{rule: "self == oldSelf"}]}
`,
			spec: "engine: postgres",
		},
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

func TestCELRuleCompileErrors(t *testing.T) {
	t.Parallel()
	const at = "types.yaml:%d: spec.versions[0].schema: invalid schema at "
	tests := []struct {
		name, schema string
		want         string // the problem, after "invalid schema at "
		line         int
	}{
		{"syntax", "type: object\nx-trueup-validations: [{rule: \"self.min <=\"}]\n",
			"x-trueup-validations[0].rule: rule does not compile: Syntax error: mismatched input '<EOF>'", 11},
		{"undeclared name", "type: object\nx-trueup-validations:\n  - rule: \"self.a > 0\"\n  - rule: \"other > 0\"\n",
			"x-trueup-validations[1].rule: rule does not compile: undeclared reference to 'other' (in container '') (column 1)", 13},
		{"not a bool", "type: object\nx-trueup-validations: [{rule: \"1 + 2\"}]\n",
			"x-trueup-validations[0].rule: rule must evaluate to a bool, not int", 11},
		{"rule missing", "type: object\nx-trueup-validations: [{message: hi}]\n",
			"x-trueup-validations[0]: rule is required", 11},
		{"rule not a string", "type: object\nx-trueup-validations: [{rule: 5}]\n",
			"x-trueup-validations[0].rule: rule must be a string", 11},
		{"message not a string", "type: object\nx-trueup-validations: [{rule: 'true', message: [x]}]\n",
			"x-trueup-validations[0].message: message must be a string", 11},
		{"unknown key", "type: object\nx-trueup-validations: [{rule: 'true', reason: FieldValueInvalid}]\n",
			`x-trueup-validations[0].reason: unknown field "reason" (allowed: rule, message, fieldPath)`, 11},
		{"not a list", "type: object\nx-trueup-validations: {rule: 'true'}\n",
			"x-trueup-validations: x-trueup-validations must be a list of {rule, message, fieldPath}", 11},
		{"entry not an object", "type: object\nx-trueup-validations: ['true']\n",
			"x-trueup-validations[0]: a validation must be an object {rule, message, fieldPath}", 11},
		{"bad fieldPath", "type: object\nx-trueup-validations: [{rule: 'true', fieldPath: 'a.b'}]\n",
			`x-trueup-validations[0].fieldPath: fieldPath: "a.b": must start with '.' or '['`, 11},
		{"nested", "type: object\nproperties:\n  a:\n    type: object\n    x-trueup-validations:\n      - rule: \"self.x >\"\n",
			"properties.a.x-trueup-validations[0].rule: rule does not compile: Syntax error: mismatched input '<EOF>'", 15},
		{"under anyOf", "type: object\nanyOf:\n  - required: [a]\n  - x-trueup-validations: [{rule: 'true'}]\n",
			"anyOf[1].x-trueup-validations: x-trueup-validations is read only at the top of a schema and under properties, items and additionalProperties, not under anyOf", 13},
		{"under a list of items (draft 7)", "$schema: 'http://json-schema.org/draft-07/schema#'\ntype: array\nitems: [{x-trueup-validations: [{rule: 'true'}]}]\n",
			"items[0].x-trueup-validations: x-trueup-validations is not read under a list of items schemas", 12},
		{"rule too long", "type: object\nx-trueup-validations: [{rule: \"" + strings.Repeat("true && ", 600) + "true\"}]\n",
			"x-trueup-validations[0].rule: rule is longer than 4096 bytes", 11},
		{"too many rules", "type: object\nx-trueup-validations:\n" + strings.Repeat("  - rule: 'true'\n", 101),
			"x-trueup-validations[100]: more than 100 rules in one schema", 112},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewLoader().Load(files("types.yaml", widgetType(tt.schema)), Options{})
			got := problems(t, err)
			want := strings.Replace(at, "%d", itoa(tt.line), 1) + tt.want
			if len(got) != 1 || !strings.HasPrefix(got[0], want) {
				t.Errorf("got\n%s\nwant one starting with\n%s", strings.Join(got, "\n"), want)
			}
		})
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestCELRuleBreaksOnlyItsType(t *testing.T) {
	t.Parallel()
	// The type is broken: its resources are not told their version is missing.
	_, err := NewLoader().Load(files("types.yaml", widgetType("type: object\nx-trueup-validations: [{rule: 'nope('}]\n"),
		"w.yaml", widget("w", "a: 1")), Options{})
	got := problems(t, err)
	if len(got) != 1 || !strings.HasPrefix(got[0], "types.yaml:11: spec.versions[0].schema: invalid schema at x-trueup-validations[0].rule:") {
		t.Errorf("got %q", got)
	}
}

func TestTransitionRules(t *testing.T) {
	t.Parallel()
	schema := `type: object
properties:
  engine:
    type: string
    x-trueup-validations: [{rule: "self == oldSelf", message: "engine is immutable"}]
  size:
    type: integer
    x-trueup-validations: [{rule: "self >= oldSelf", message: "size may only grow"}]
  zone:
    type: string
x-trueup-validations:
  - {rule: "!has(oldSelf.zone) || self.zone == oldSelf.zone", message: "zone is immutable", fieldPath: ".zone"}
`
	key := ResourceKey{Namespace: "default", Kind: "Widget", Name: "w"}
	tests := []struct {
		name string
		spec string
		old  map[ResourceKey]json.RawMessage
		want []string
	}{
		{"new resource: not evaluated", "engine: mysql\nsize: 1", nil, nil},
		{"unchanged", "engine: postgres\nsize: 5", map[ResourceKey]json.RawMessage{key: json.RawMessage(`{"engine":"postgres","size":5}`)}, nil},
		{"allowed change", "engine: postgres\nsize: 6", map[ResourceKey]json.RawMessage{key: json.RawMessage(`{"engine":"postgres","size":5}`)}, nil},
		{"immutable field changed", "engine: mysql\nsize: 5\nzone: b", map[ResourceKey]json.RawMessage{key: json.RawMessage(`{"engine":"postgres","size":5,"zone":"a"}`)},
			[]string{"w.yaml:5: spec.engine: engine is immutable", "w.yaml:7: spec.zone: zone is immutable"}},
		{"shrunk", "engine: postgres\nsize: 4", map[ResourceKey]json.RawMessage{key: json.RawMessage(`{"engine":"postgres","size":5}`)},
			[]string{"w.yaml:6: spec.size: size may only grow"}},
		{"field new in this revision: its rule does not run", "engine: postgres\nsize: 1", map[ResourceKey]json.RawMessage{key: json.RawMessage(`{"engine":"postgres"}`)}, nil},
		{"other resource's old spec", "engine: mysql", map[ResourceKey]json.RawMessage{{Namespace: "default", Kind: "Widget", Name: "x"}: json.RawMessage(`{"engine":"postgres"}`)}, nil},
		// A reference's value is unknown, old or new: a rule comparing it is skipped, the
		// others run.
		{"reference replaces a value", "engine: {secretRef: {name: db, key: e}}\nsize: 5", map[ResourceKey]json.RawMessage{key: json.RawMessage(`{"engine":"postgres","size":5}`)}, nil},
		{"value replaces a reference", "engine: mysql\nsize: 5", map[ResourceKey]json.RawMessage{key: json.RawMessage(`{"engine":{"secretRef":{"name":"db","key":"e"}},"size":5}`)}, nil},
		{"reference elsewhere", "engine: {secretRef: {name: db, key: e}}\nsize: 5\nzone: b", map[ResourceKey]json.RawMessage{key: json.RawMessage(`{"engine":{"secretRef":{"name":"db","key":"e"}},"size":5,"zone":"a"}`)},
			[]string{"w.yaml:7: spec.zone: zone is immutable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := NewLoader()
			set, err := l.Load(files("types.yaml", widgetType(schema), "w.yaml", widget("w", tt.spec)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if c := set.TransitionCandidates(); len(c) != 1 || c[0].Key() != key {
				t.Fatalf("candidates %+v", c)
			}
			got := problems(t, l.CheckTransitions(set, tt.old))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			// From a compiled schema the cache no longer holds.
			set2, _ := NewLoader().Load(files("types.yaml", widgetType(schema), "w.yaml", widget("w", tt.spec)), Options{})
			if got2 := problems(t, NewLoader().CheckTransitions(set2, tt.old)); !reflect.DeepEqual(got2, got) {
				t.Errorf("with a cold loader: %q, want %q", got2, got)
			}
		})
	}
}

func TestNoTransitionCandidatesWithoutTransitionRules(t *testing.T) {
	t.Parallel()
	set, err := NewLoader().Load(files("types.yaml", widgetType("type: object\nx-trueup-validations: [{rule: 'has(self.a)'}]\n"),
		"w.yaml", widget("w", "a: 1")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c := set.TransitionCandidates(); len(c) != 0 {
		t.Errorf("candidates %+v, want none", c)
	}
}

func TestParseFieldPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want path
		err  bool
	}{
		{".a", path{"a"}, false},
		{".a.b", path{"a", "b"}, false},
		{".a['x.y'].b", path{"a", "x.y", "b"}, false},
		{`.a["k"]`, path{"a", "k"}, false},
		{".ports[2].port", path{"ports", 2, "port"}, false},
		{"", nil, true},
		{"a", nil, true},
		{".", nil, true},
		{".a[", nil, true},
		{".a[x]", nil, true},
		{".a[-1]", nil, true},
	}
	for _, tt := range tests {
		got, err := parseFieldPath(tt.in)
		if (err != nil) != tt.err || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseFieldPath(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestNumberValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   json.Number
		want ref.Val
	}{
		{"3", types.Int(3)},
		{"-9223372036854775808", types.Int(-9223372036854775808)},
		{"9223372036854775808", types.Double(9223372036854775808)},
		{"1.5", types.Double(1.5)},
		{"1e3", types.Double(1000)},
	}
	for _, tt := range tests {
		if got := numberValue(tt.in); got != tt.want {
			t.Errorf("numberValue(%s) = %#v, want %#v", tt.in, got, tt.want)
		}
	}
}

// TestCELSecretRefs: on a level holding secret references, the references' places are
// unknown. A rule whose outcome depends on one is skipped; a rule that is false or fails
// whatever the secret is a violation.
func TestCELSecretRefs(t *testing.T) {
	t.Parallel()
	const ref = "{secretRef: {name: db, key: k}}"
	schemaOf := func(rule string) string {
		return `type: object
properties:
  engine: {type: string}
  password: {type: string}
  tags: {type: array, items: {type: string}}
  users:
    type: array
    items:
      type: object
      properties: {name: {type: string}, password: {type: string}}
      x-trueup-validations: [{rule: "self.name != ''", message: "a user needs a name"}]
x-trueup-validations: [{rule: "` + rule + `", message: "violated"}]
`
	}
	tests := []struct {
		name, rule, spec string
		want             []string
	}{
		{"false on another field", "self.engine == 'postgres'", "engine: mysql\npassword: " + ref, []string{"w.yaml:4: spec: violated"}},
		{"error on another field", "int(self.engine) > 0", "engine: mysql\npassword: " + ref, []string{"w.yaml:4: spec: rule could not be evaluated: int(self.engine) > 0"}},
		{"true on another field", "self.engine == 'postgres'", "engine: postgres\npassword: " + ref, nil},
		{"reads the reference", "self.password.size() >= 8", "engine: mysql\npassword: " + ref, nil},
		{"would fail on the reference itself", "self.password.startsWith('x')", "password: " + ref, nil},
		{"presence of the reference", "!has(self.password)", "password: " + ref, nil},
		{"unknown or true", "self.password.size() > 8 || self.engine == 'postgres'", "engine: postgres\npassword: " + ref, nil},
		{"unknown or false", "self.password.size() > 8 || self.engine == 'postgres'", "engine: mysql\npassword: " + ref, nil},
		{"false whatever the secret", "self.engine == 'postgres' && self.password.size() > 8", "engine: mysql\npassword: " + ref, []string{"w.yaml:4: spec: violated"}},
		{"list holding a reference", "self.tags.all(t, t.size() <= 3)", "tags: [a, " + ref + "]", nil},
		{"whole self holding a reference", "size(self) > 5", "password: " + ref, nil},
		{"no reference: errors are violations", "self.password.startsWith('x')", "engine: x", []string{"w.yaml:4: spec: rule could not be evaluated: self.password.startsWith('x')"}},
		{"reference in a list item, rule on the item", "true", "users:\n- {name: '', password: " + ref + "}\n- {name: b, password: " + ref + "}", []string{"w.yaml:6: spec.users[0]: a user needs a name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewLoader().Load(files("types.yaml", widgetType(schemaOf(tt.rule)), "w.yaml", widget("w", tt.spec)), Options{})
			if got := problems(t, err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestCELRevisionBudget: the rules of all resources of a revision share one budget; past
// it, one error for the revision, and the resources not evaluated are checked again by the
// next load.
func TestCELRevisionBudget(t *testing.T) {
	t.Parallel()
	schema := `type: object
properties: {engine: {type: string}, size: {type: integer}}
x-trueup-validations: [{rule: "self.engine == 'postgres'", message: "only postgres"}]
`
	resources := func(n int, engine string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w%02d}\nspec: {engine: %s}\n", i, engine)
		}
		return b.String()
	}
	countBudget := func(got []string) (budget, other int) {
		for _, g := range got {
			if strings.Contains(g, "of this revision are too expensive to evaluate") {
				budget++
			} else {
				other++
			}
		}
		return budget, other
	}

	t.Run("over: one error", func(t *testing.T) {
		t.Parallel()
		l := NewLoader()
		l.revisionBudget = 10
		_, err := l.Load(files("types.yaml", widgetType(schema), "w.yaml", resources(40, "mysql")), Options{})
		budget, other := countBudget(problems(t, err))
		if budget != 1 || other == 0 || other >= 40 {
			t.Errorf("%d budget errors and %d violations, want 1 and some but not all 40", budget, other)
		}
		// The resources not evaluated are not remembered as checked.
		l.revisionBudget = celRevisionBudget
		_, err = l.Load(files("types.yaml", widgetType(schema), "w.yaml", resources(40, "mysql")), Options{})
		if budget, other := countBudget(problems(t, err)); budget != 0 || other != 40 {
			t.Errorf("with the full budget: %d budget errors and %d violations, want 0 and 40", budget, other)
		}
	})
	t.Run("under", func(t *testing.T) {
		t.Parallel()
		l := NewLoader()
		l.revisionBudget = 10_000
		if _, err := l.Load(files("types.yaml", widgetType(schema), "w.yaml", resources(40, "postgres")), Options{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("cached resources count", func(t *testing.T) {
		t.Parallel()
		// What one resource's rules cost.
		l := NewLoader()
		if _, err := l.Load(files("types.yaml", widgetType(schema), "w.yaml", resources(1, "postgres")), Options{}); err != nil {
			t.Fatal(err)
		}
		var one uint32
		for _, fe := range l.files {
			for _, d := range fe.docs {
				if d.res != nil {
					one = d.res.celCost
				}
			}
		}
		if one == 0 {
			t.Fatal("no cost recorded")
		}
		// Each file alone is within the budget...
		l = NewLoader()
		l.revisionBudget = 30 * uint64(one)
		a := files("a.yaml", resources(20, "postgres"))[0]
		if _, err := l.Load(append(files("types.yaml", widgetType(schema)), a), Options{}); err != nil {
			t.Fatal(err)
		}
		b := files("b.yaml", strings.ReplaceAll(resources(20, "postgres"), "name: w", "name: b"))[0]
		if _, err := NewLoader().Load(append(files("types.yaml", widgetType(schema)), b), Options{}); err != nil {
			t.Fatal(err)
		}
		// ...but not both, though only b is checked: a counts at what it cost before.
		_, err := l.Load(append(files("types.yaml", widgetType(schema)), a, b), Options{})
		if budget, other := countBudget(problems(t, err)); budget != 1 || other != 0 {
			t.Errorf("%d budget errors and %d others, want 1 and 0", budget, other)
		}
		// Without b, the revision fits again.
		if _, err := l.Load(append(files("types.yaml", widgetType(schema)), a), Options{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("transition rules", func(t *testing.T) {
		t.Parallel()
		schema := `type: object
properties: {engine: {type: string, x-trueup-validations: [{rule: "self == oldSelf", message: "immutable"}]}}
`
		l := NewLoader()
		set, err := l.Load(files("types.yaml", widgetType(schema), "w.yaml", resources(40, "mysql")), Options{})
		if err != nil {
			t.Fatal(err)
		}
		old := map[ResourceKey]json.RawMessage{}
		for _, r := range set.Resources {
			old[r.Key()] = json.RawMessage(`{"engine":"postgres"}`)
		}
		l.revisionBudget = 10
		budget, other := countBudget(problems(t, l.CheckTransitions(set, old)))
		if budget != 1 || other == 0 || other >= 40 {
			t.Errorf("%d budget errors and %d violations, want 1 and some but not all 40", budget, other)
		}
	})
}

// TestCELEncryptedUnknown: with Options.EncryptedUnknown, an encrypted field's marker is a
// value not known, as a secret reference is: the schema and the rules say nothing about it,
// in plain and in transition rules; without the option it is the string it looks like.
func TestCELEncryptedUnknown(t *testing.T) {
	t.Parallel()
	const marker = `"*** sops:0123456789abcdef"`
	schemaOf := func(rule string) string {
		return `type: object
properties:
  engine: {type: string}
  port: {type: integer}
  password: {type: string, minLength: 40}
x-trueup-validations: [{rule: "` + rule + `", message: "violated"}]
`
	}
	tests := []struct {
		name, rule, spec string
		unknown          bool
		want             []string
	}{
		{"rule reads the marker", "self.password.startsWith('h')", "password: " + marker, true, nil},
		{"rule on another field", "self.engine == 'postgres'", "engine: mysql\npassword: " + marker, true, []string{"w.yaml:4: spec: violated"}},
		{"schema type at the marker", "true", "port: " + marker, true, nil},
		{"schema keyword at the marker", "true", "password: " + marker, true, nil},
		{"without the option: a string", "self.password.startsWith('h')", "password: " + marker, false,
			[]string{"w.yaml:5: spec.password: length must be >= 40, but got 25"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewLoader().Load(files("types.yaml", widgetType(schemaOf(tt.rule)), "w.yaml", widget("w", tt.spec)), Options{EncryptedUnknown: tt.unknown})
			if got := problems(t, err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
	t.Run("transition", func(t *testing.T) {
		t.Parallel()
		l := NewLoader()
		typ := widgetType(`type: object
properties: {size: {type: integer}, password: {type: string}}
x-trueup-validations:
  - {rule: "oldSelf.password == 'hunter2'", message: "old password read"}
  - {rule: "self.size == oldSelf.size", message: "size is immutable"}
`)
		set, err := l.Load(files("types.yaml", typ, "w.yaml", widget("w", "size: 2\npassword: "+marker)), Options{EncryptedUnknown: true})
		if err != nil {
			t.Fatal(err)
		}
		old := map[ResourceKey]json.RawMessage{{Namespace: "default", Kind: "Widget", Name: "w"}: json.RawMessage(`{"password":"*** sops:fedcba9876543210","size":1}`)}
		got := problems(t, l.CheckTransitions(set, old))
		if want := []string{"w.yaml:4: spec: size is immutable"}; !reflect.DeepEqual(got, want) {
			t.Errorf("got %q, want %q", got, want)
		}
	})
}
