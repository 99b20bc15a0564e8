package manifest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/graph"
)

// graphTypes declares Network, Database and App, whose specs may hold anything.
const graphTypes = `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Network}
spec: {group: example.com, action: {name: a}, versions: [{name: v1, schema: {type: object}}]}
---
apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Database}
spec: {group: example.com, action: {name: a}, versions: [{name: v1, schema: {type: object}}]}
---
apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: App}
spec: {group: example.com, action: {name: a}, versions: [{name: v1, schema: {type: object}}]}
`

// doc is a resource document of kind/name in namespace prod; rest (dependsOn, spec)
// follows from line 4.
func doc(kind, name, rest string) string {
	return "apiVersion: example.com/v1\nkind: " + kind + "\nmetadata: {name: " + name + ", namespace: prod}\n" + rest
}

func id(kind, ns, name string) graph.ID { return graph.ID{Kind: kind, Namespace: ns, Name: name} }

func TestDependsOnErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, rest string
		want       []string
	}{
		{"not a list", "dependsOn: {kind: Network, name: core}\n",
			[]string{"d.yaml:4: dependsOn: must be a list of {kind, name, namespace}, got mapping"}},
		{"entry not a mapping", "dependsOn:\n  - {kind: Network, name: core}\n  - Network/core\n",
			[]string{"d.yaml:6: dependsOn[1]: must be a mapping {kind, name, namespace}, got string"}},
		{"missing fields", "dependsOn:\n  - {kind: Network, name: core}\n  - namespace: prod\n",
			[]string{"d.yaml:6: dependsOn[1].kind: is required", "d.yaml:6: dependsOn[1].name: is required"}},
		{"wrong types", "dependsOn:\n  - kind: 1\n    name: [a]\n    namespace: {x: y}\n",
			[]string{
				"d.yaml:5: dependsOn[0].kind: must be a string, got number",
				"d.yaml:6: dependsOn[0].name: must be a string, got list",
				"d.yaml:7: dependsOn[0].namespace: must be a string, got mapping",
			}},
		{"invalid names", "dependsOn:\n  - kind: network\n    name: Core\n    namespace: -x\n",
			[]string{
				`d.yaml:5: dependsOn[0].kind: invalid kind "network": ` + kindHelp,
				`d.yaml:6: dependsOn[0].name: invalid name "Core": ` + labelHelp,
				`d.yaml:7: dependsOn[0].namespace: invalid namespace "-x": ` + labelHelp,
			}},
		{"unknown key", "dependsOn:\n  - kind: Network\n    name: core\n    outputs: [a]\n",
			[]string{`d.yaml:7: dependsOn[0]: unknown field "outputs"`}},
		{"itself", "dependsOn:\n  - {kind: Network, name: edge}\n  - {kind: Database, name: db}\n",
			[]string{"d.yaml:6: dependsOn[1]: a resource cannot depend on itself"}},
		{"itself, namespace spelled out", "dependsOn:\n  - {kind: Database, namespace: prod, name: db}\n",
			[]string{"d.yaml:5: dependsOn[0]: a resource cannot depend on itself"}},
		{"same name in another namespace is another resource", "dependsOn:\n  - {kind: Database, namespace: dev, name: db}\n", nil},
		{"null is none", "dependsOn:\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewLoader().Load(files("types.yaml", graphTypes, "d.yaml", doc("Database", "db", tt.rest)), Options{})
			if got := problems(t, err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// validKind and validLabel are the regular expressions in their comments, by hand.
func TestValidKindAndLabel(t *testing.T) {
	t.Parallel()
	kindRe := regexp.MustCompile(`^[A-Z][A-Za-z0-9]{0,62}$`)
	labelRe := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	inputs := []string{"", "a", "A", "-", "0", "Ab9", "aB9", "a-b", "-a", "a-", "a--b", "a_b", "a.b", "A-b", "é", "a\n", "Network\n",
		strings.Repeat("a", 63), strings.Repeat("a", 64), "A" + strings.Repeat("b", 62), "A" + strings.Repeat("b", 63), "a" + strings.Repeat("-", 61) + "a"}
	for _, s := range inputs {
		if got, want := validKind(s), kindRe.MatchString(s); got != want {
			t.Errorf("validKind(%q) = %v, want %v", s, got, want)
		}
		if got, want := validLabel(s), labelRe.MatchString(s); got != want {
			t.Errorf("validLabel(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestDependsOnOnResourceType(t *testing.T) {
	t.Parallel()
	typ := strings.Replace(graphTypes, "metadata: {name: App}\n", "metadata: {name: App}\ndependsOn: []\n", 1)
	_, err := NewLoader().Load(files("types.yaml", typ), Options{})
	want := []string{"types.yaml:14: dependsOn: a ResourceType does not take dependsOn: only resources depend on others"}
	if got := problems(t, err); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestOutputRefErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, spec string
		want       []string
	}{
		{"not closed", "a: ${{ Network/core.outputs.x", []string{
			"d.yaml:5: spec.a: invalid output reference at offset 0 is not closed with }}"}},
		{"no outputs", "a: {b: [x, '${{ Network/core }}']}", []string{
			"d.yaml:5: spec.a.b[1]: invalid output reference ${{ Network/core }}: want Kind/name.outputs.key or Kind/namespace/name.outputs.key"}},
		{"too many parts", "a: '${{ Network/a/b/c.outputs.x }}'", []string{
			`d.yaml:5: spec.a: invalid output reference ${{ Network/a/b/c.outputs.x }}: "Network/a/b/c": want Kind/name or Kind/namespace/name`}},
		{"empty key", "a: '${{ Network/core.outputs.a..b }}'", []string{
			`d.yaml:5: spec.a: invalid output reference ${{ Network/core.outputs.a..b }}: "outputs.a..b": want outputs.key or outputs.key.subkey`}},
		{"invalid kind", "a: '${{ network/core.outputs.x }}'", []string{
			"d.yaml:5: spec.a: invalid output reference ${{ network/prod/core.outputs.x }}: kind " + kindHelp}},
		{"invalid name", "a: '${{ Network/Core.outputs.x }}'", []string{
			"d.yaml:5: spec.a: invalid output reference ${{ Network/prod/Core.outputs.x }}: name " + labelHelp}},
		{"itself", "a: 1\nb: 'x-${{ Database/db.outputs.host }}'", []string{
			"d.yaml:6: spec.b: output reference ${{ Database/prod/db.outputs.host }}: a resource cannot reference its own outputs"}},
		{"itself, kind in other case", "b: '${{ DATABASE/prod/db.outputs.host }}'", []string{
			"d.yaml:5: spec.b: output reference ${{ DATABASE/prod/db.outputs.host }}: a resource cannot reference its own outputs"}},
		{"escape is no reference", "a: '$${{ Database/db.outputs.host }}'", nil},
		{"in a key is no reference", "'${{ x': 1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewLoader().Load(files("types.yaml", graphTypes, "d.yaml", doc("Database", "db", "spec:\n  "+strings.ReplaceAll(tt.spec, "\n", "\n  ")+"\n")), Options{})
			if got := problems(t, err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestDependsOnMerged(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, rest string
		want       []Dependency
	}{
		{"none", "spec: {a: x}\n", nil},
		{"dependsOn only, repeats collapse, sorted", `dependsOn:
  - {kind: Network, name: core}
  - {kind: App, namespace: dev, name: web}
  - {kind: Network, namespace: prod, name: core}
`, []Dependency{
			{Target: id("App", "dev", "web"), Explicit: true},
			{Target: id("Network", "prod", "core"), Explicit: true},
		}},
		{"references only", `spec:
  subnet: "${{ Network/core.outputs.subnetId }}"
  port: "${{ Network/prod/core.outputs.port }}"
  url: "postgres://${{ Network/core.outputs.db.host }}:5432/${{ Network/edge.outputs.x }}"
  again: ["${{ Network/core.outputs.port }}"]
`, []Dependency{
			{Target: id("Network", "prod", "core"), Outputs: []string{"db.host", "port", "subnetId"}},
			{Target: id("Network", "prod", "edge"), Outputs: []string{"x"}},
		}},
		{"both", `dependsOn:
  - {kind: Network, name: core}
  - {kind: App, name: web}
spec:
  subnet: "${{ Network/core.outputs.subnetId }}"
  other: "${{ Network/dev/core.outputs.id }}"
`, []Dependency{
			{Target: id("App", "prod", "web"), Explicit: true},
			{Target: id("Network", "dev", "core"), Outputs: []string{"id"}},
			{Target: id("Network", "prod", "core"), Explicit: true, Outputs: []string{"subnetId"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := NewLoader()
			fs := files("types.yaml", graphTypes, "d.yaml", doc("Database", "db", tt.rest))
			for _, pass := range []string{"cold", "warm"} {
				set, err := l.Load(fs, Options{})
				if err != nil {
					t.Fatalf("%s: %v", pass, err)
				}
				if got := set.Resources[0].DependsOn; !reflect.DeepEqual(got, tt.want) {
					t.Errorf("%s: DependsOn\n%+v\nwant\n%+v", pass, got, tt.want)
				}
			}
		})
	}
}

func TestDependencies(t *testing.T) {
	t.Parallel()
	self := id("Database", "prod", "db")
	got, err := Dependencies(self, []graph.ID{id("Network", "prod", "core"), id("App", "prod", "web"), id("Network", "prod", "core")},
		[]byte(`{"a":"${{ Network/core.outputs.subnetId }}","b":["${{ Cache/c.outputs.host }}"],"c":"$${{ x }}"}`))
	want := []Dependency{
		{Target: id("App", "prod", "web"), Explicit: true},
		{Target: id("Cache", "prod", "c"), Outputs: []string{"host"}},
		{Target: id("Network", "prod", "core"), Explicit: true, Outputs: []string{"subnetId"}},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Dependencies = %+v, %v; want %+v", got, err, want)
	}
	if got, err := Dependencies(self, nil, []byte(`{}`)); got != nil || err != nil {
		t.Errorf("no dependencies: %+v, %v", got, err)
	}
	// Found in the text: keys are not values, escapes are read.
	got, err = Dependencies(self, nil, []byte(`{"${{ Network/core.outputs.k }}" : "x", "q": "\"${{ Network/edge.outputs.a.b }}\"", "z": [ "${{ Network/edge.outputs.a.b }}" ]}`))
	want = []Dependency{{Target: id("Network", "prod", "edge"), Outputs: []string{"a.b"}}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Dependencies = %+v, %v; want %+v", got, err, want)
	}
	if _, err = Dependencies(self, nil, []byte(`{"a": "${{ Network/core.outputs.x }}`)); err == nil || !strings.HasPrefix(err.Error(), "spec: cannot decode") {
		t.Errorf("Dependencies of broken JSON: %v", err)
	}
	_, err = Dependencies(self, nil, []byte(`{"a":{"b":"${{ Database/db.outputs.x }}"},"c":"${{ x"}`))
	wantErr := "spec.a.b: output reference ${{ Database/prod/db.outputs.x }}: a resource cannot reference its own outputs\n" +
		"spec.c: invalid output reference at offset 0 is not closed with }}"
	if err == nil || err.Error() != wantErr {
		t.Errorf("Dependencies error:\n%v\nwant\n%s", err, wantErr)
	}
}

func TestMetaHashDependsOn(t *testing.T) {
	t.Parallel()
	hashes := func(rest string) (meta, spec string) {
		t.Helper()
		set, err := NewLoader().Load(files("types.yaml", graphTypes, "d.yaml", doc("Database", "db", rest)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return set.Resources[0].MetaHash, set.Resources[0].SpecHash
	}
	const spec = "spec: {a: '${{ Network/core.outputs.x }}'}\n"
	base, baseSpec := hashes(spec)
	tests := []struct {
		name, rest string
		same       bool
	}{
		{"empty dependsOn is none", "dependsOn: []\n" + spec, true},
		{"null dependsOn is none", "dependsOn:\n" + spec, true},
		{"a reference changes only the spec", "spec: {a: '${{ Network/edge.outputs.x }}'}\n", true},
		{"one entry", "dependsOn: [{kind: Network, name: core}]\n" + spec, false},
	}
	for _, tt := range tests {
		meta, specHash := hashes(tt.rest)
		if (meta == base) != tt.same {
			t.Errorf("%s: MetaHash same = %v, want %v", tt.name, meta == base, tt.same)
		}
		if tt.name != "a reference changes only the spec" && specHash != baseSpec {
			t.Errorf("%s: SpecHash changed", tt.name)
		}
	}
	one, _ := hashes("dependsOn: [{kind: Network, name: core}]\n" + spec)
	// The same targets, however spelled, are the same metadata; other targets are not.
	for _, rest := range []string{
		"dependsOn: [{kind: Network, namespace: prod, name: core}]\n",
		"dependsOn: [{kind: Network, name: core}, {name: core, kind: Network}]\n",
	} {
		if m, _ := hashes(rest + spec); m != one {
			t.Errorf("%q: MetaHash differs from the same single entry", rest)
		}
	}
	two, _ := hashes("dependsOn: [{kind: Network, name: core}, {kind: App, name: web}]\n" + spec)
	swapped, _ := hashes("dependsOn: [{kind: App, name: web}, {kind: Network, name: core}]\n" + spec)
	other, _ := hashes("dependsOn: [{kind: Network, namespace: dev, name: core}]\n" + spec)
	if two == one || two != swapped || other == one || other == base {
		t.Errorf("MetaHash does not follow dependsOn: one %s two %s swapped %s other %s", one, two, swapped, other)
	}
}

func TestOutputRefTolerance(t *testing.T) {
	t.Parallel()
	const schema = `type: object
additionalProperties: false
properties:
  port: {type: integer, minimum: 1}
  mode: {type: string, enum: [a, b]}
  host: {type: string, format: hostname, maxLength: 5, pattern: "^[a-z]+$"}
  tags: {type: array, items: {type: string}, maxItems: 3}
  nested: {type: object, required: [x], properties: {x: {type: boolean}}}
  checked: {type: integer, x-trueup-validations: [{rule: "self > 10", message: "checked must exceed 10"}]}
x-trueup-validations:
  - {rule: "!has(self.port) || self.port < 100", message: "port must be below 100"}
`
	const ref = "'${{ Network/core.outputs.v }}'"
	tests := []struct {
		name, spec string
		want       []string
	}{
		{"integer holding a whole reference", "port: " + ref, nil},
		{"integer holding text", "port: abc", []string{"w.yaml:5: spec.port: expected integer, but got string"}},
		{"integer holding an interpolation", "port: '1${{ Network/core.outputs.v }}'", []string{"w.yaml:5: spec.port: expected integer, but got string (a reference inside a longer string is interpolated as text: only a string that is exactly one reference takes the output's type)"}},
		{"enum holding a reference", "mode: " + ref, nil},
		{"enum holding something else", "mode: c", []string{`w.yaml:5: spec.mode: value must be one of "a", "b"`}},
		{"format, pattern and maxLength", "host: 'db-${{ Network/core.outputs.v }}.example.com'", nil},
		{"object holding a reference", "nested: " + ref, nil},
		{"array holding a reference", "tags: " + ref, nil},
		{"an escape is text, checked", "mode: '$${{ x }}'", []string{`w.yaml:5: spec.mode: value must be one of "a", "b"`}},
		{"CEL rule over a reference skipped", "port: " + ref, nil},
		{"CEL rule at the reference skipped", "checked: " + ref, nil},
		{"CEL rules still hold elsewhere", "port: 500\nchecked: 1", []string{
			"w.yaml:4: spec: port must be below 100",
			"w.yaml:6: spec.checked: checked must exceed 10",
		}},
		{"other problems still reported", "port: " + ref + "\nextra: 1", []string{
			"w.yaml:6: spec: additionalProperties 'extra' not allowed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewLoader().Load(files("types.yaml", widgetType(schema), "w.yaml", widget("w", tt.spec)), Options{})
			if got := problems(t, err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestTransitionRuleOverOutputRef(t *testing.T) {
	t.Parallel()
	const schema = `type: object
properties:
  size: {type: integer, x-trueup-validations: [{rule: "self >= oldSelf", message: "size cannot shrink"}]}
`
	l := NewLoader()
	set, err := l.Load(files("types.yaml", widgetType(schema), "w.yaml", widget("w", "size: '${{ Network/core.outputs.v }}'")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = l.CheckTransitions(set, map[ResourceKey]json.RawMessage{set.Resources[0].Key(): []byte(`{"size":5}`)})
	if err != nil {
		t.Errorf("a transition rule over a reference is not skipped: %v", err)
	}
}

func TestLoadCycles(t *testing.T) {
	t.Parallel()
	dep := func(kind, name string) string { return "dependsOn: [{kind: " + kind + ", name: " + name + "}]\n" }
	tests := []struct {
		name  string
		files []string
		want  []string
	}{
		{
			name: "two resources, one file",
			files: []string{"a.yaml", doc("Network", "core", dep("Database", "db")) + "---\n" +
				doc("Database", "db", "spec: {n: '${{ Network/core.outputs.id }}'}\n")},
			want: []string{
				"a.yaml:1: dependsOn: dependency cycle: Database/prod/db (a.yaml:6) → Network/prod/core (a.yaml:1) → Database/prod/db",
				"a.yaml:6: dependsOn: dependency cycle: Database/prod/db (a.yaml:6) → Network/prod/core (a.yaml:1) → Database/prod/db",
			},
		},
		{
			name: "three resources, three files",
			files: []string{
				"net.yaml", doc("Network", "core", dep("App", "web")),
				"db.yaml", "# the database\n\n" + doc("Database", "orders", dep("Network", "core")),
				"app.yaml", "\n\n\n\n" + doc("App", "web", "spec: {url: 'http://${{ Database/orders.outputs.host }}/'}\n"),
			},
			want: []string{
				"app.yaml:5: dependsOn: dependency cycle: App/prod/web (app.yaml:5) → Database/prod/orders (db.yaml:3) → Network/prod/core (net.yaml:1) → App/prod/web",
				"db.yaml:3: dependsOn: dependency cycle: App/prod/web (app.yaml:5) → Database/prod/orders (db.yaml:3) → Network/prod/core (net.yaml:1) → App/prod/web",
				"net.yaml:1: dependsOn: dependency cycle: App/prod/web (app.yaml:5) → Database/prod/orders (db.yaml:3) → Network/prod/core (net.yaml:1) → App/prod/web",
			},
		},
		{
			name: "a chain, and a dependency outside the set, is no cycle",
			files: []string{"a.yaml", doc("App", "web", dep("Database", "db")) + "---\n" +
				doc("Database", "db", dep("Network", "core")) + "---\n" +
				doc("Network", "core", dep("Network", "elsewhere"))},
		},
		{
			name:  "self through dependsOn is refused before the cycle check",
			files: []string{"a.yaml", doc("Network", "core", dep("Network", "core"))},
			want:  []string{"a.yaml:4: dependsOn[0]: a resource cannot depend on itself"},
		},
		{
			name: "no cycle check while the set has other problems",
			files: []string{"a.yaml", doc("Network", "core", dep("Database", "db")) + "---\n" +
				doc("Database", "db", dep("Network", "core")) + "---\n" + doc("Unknown", "u", "")},
			want: []string{"a.yaml:12: kind: unknown kind Unknown (no ResourceType declares it)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			set, err := NewLoader().Load(files(append([]string{"types.yaml", graphTypes}, tt.files...)...), Options{})
			if got := problems(t, err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if tt.want != nil && set != nil {
				t.Error("a Set with the errors")
			}
		})
	}
}

func TestCycleErrors(t *testing.T) {
	t.Parallel()
	net, db, app := id("Network", "prod", "core"), id("Database", "prod", "orders"), id("App", "prod", "web")
	node := func(n graph.ID, source, file string, line int, deps ...graph.ID) GraphNode {
		return GraphNode{ID: n, Source: source, File: file, Line: line, Deps: deps}
	}
	tests := []struct {
		name  string
		nodes []GraphNode
		want  []string
	}{
		{"none", []GraphNode{node(net, "s", "n.yaml", 1), node(db, "s", "d.yaml", 1, net, id("X", "p", "gone"))}, nil},
		{"self", []GraphNode{node(net, "s", "n.yaml", 2, net)}, []string{
			"n.yaml:2: dependsOn: dependency cycle: Network/prod/core (n.yaml:2) → Network/prod/core"}},
		{"kinds compare case-insensitively", []GraphNode{node(net, "s", "n.yaml", 1, id("DATABASE", "prod", "orders")), node(db, "s", "d.yaml", 1, net)}, []string{
			"d.yaml:1: dependsOn: dependency cycle: Database/prod/orders (d.yaml:1) → Network/prod/core (n.yaml:1) → Database/prod/orders",
			"n.yaml:1: dependsOn: dependency cycle: Database/prod/orders (d.yaml:1) → Network/prod/core (n.yaml:1) → Database/prod/orders",
		}},
		{"across sources, each error naming the other sources", []GraphNode{
			node(net, "infra", "net.yaml", 1, db),
			node(db, "data", "db.yaml", 3, app),
			node(app, "apps", "app.yaml", 5, net),
		}, []string{
			"app.yaml:5: dependsOn: dependency cycle: App/prod/web (app.yaml:5) → Network/prod/core (infra/net.yaml:1) → Database/prod/orders (data/db.yaml:3) → App/prod/web",
			"db.yaml:3: dependsOn: dependency cycle: App/prod/web (apps/app.yaml:5) → Network/prod/core (infra/net.yaml:1) → Database/prod/orders (db.yaml:3) → App/prod/web",
			"net.yaml:1: dependsOn: dependency cycle: App/prod/web (apps/app.yaml:5) → Network/prod/core (net.yaml:1) → Database/prod/orders (data/db.yaml:3) → App/prod/web",
		}},
		{"two cycles", []GraphNode{
			node(id("A", "p", "a"), "s", "a.yaml", 1, id("B", "p", "b")),
			node(id("B", "p", "b"), "s", "b.yaml", 1, id("A", "p", "a")),
			node(id("C", "p", "c"), "s", "c.yaml", 1, id("C", "p", "c"), id("A", "p", "a")),
		}, []string{
			"a.yaml:1: dependsOn: dependency cycle: A/p/a (a.yaml:1) → B/p/b (b.yaml:1) → A/p/a",
			"b.yaml:1: dependsOn: dependency cycle: A/p/a (a.yaml:1) → B/p/b (b.yaml:1) → A/p/a",
			"c.yaml:1: dependsOn: dependency cycle: C/p/c (c.yaml:1) → C/p/c",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			errs := CycleErrors(tt.nodes)
			var got []string
			if errs != nil {
				got = strings.Split(errs.Error(), "\n")
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			// The order of the nodes changes nothing.
			rev := make([]GraphNode, len(tt.nodes))
			for i, n := range tt.nodes {
				rev[len(rev)-1-i] = n
			}
			if again := CycleErrors(rev); !reflect.DeepEqual(again, errs) {
				t.Errorf("nodes reversed:\n%v\nwant\n%v", again, errs)
			}
		})
	}
}

// chain100k is 100,000 nodes, each depending on the next three: a DAG of 300,000 edges.
func chain100k() []GraphNode {
	const n = 100_000
	ids := make([]graph.ID, n+3)
	for i := range ids {
		ids[i] = id("Widget", fmt.Sprintf("team-%d", i%100), fmt.Sprintf("w-%d", i))
	}
	nodes := make([]GraphNode, n)
	for i := range nodes {
		nodes[i] = GraphNode{ID: ids[i], File: "w.yaml", Line: i + 1, Deps: ids[i+1 : i+4 : i+4]}
	}
	return nodes
}

func TestCycleErrorsLargeChain(t *testing.T) {
	t.Parallel()
	nodes := chain100k()
	if errs := CycleErrors(nodes); errs != nil {
		t.Fatalf("a DAG has cycles: %v", errs[0])
	}
	// Closing the chain makes one component of every node, found without a deep stack;
	// its shortest cycle has a third of them, which the message abbreviates.
	nodes[len(nodes)-1].Deps = []graph.ID{nodes[0].ID}
	cycles := DependencyCycles(nodes)
	if len(cycles) != 1 || len(cycles[0]) != 33_334 {
		t.Fatalf("closed chain: %d cycles", len(cycles))
	}
	errs := CycleErrors(nodes)
	if len(errs) != len(cycles[0]) {
		t.Fatalf("closed chain: %d errors, want %d", len(errs), len(cycles[0]))
	}
	want := "dependency cycle: Widget/team-0/w-0 (w.yaml:1) → Widget/team-3/w-3 (w.yaml:4) → "
	if msg := errs[0].Msg; !strings.HasPrefix(msg, want) || !strings.Contains(msg, " → … 33314 more → ") || len(msg) > 2000 {
		t.Errorf("closed chain: message %q", msg)
	}
}

func BenchmarkCycleErrors100k(b *testing.B) {
	nodes := chain100k()
	b.ReportAllocs()
	for b.Loop() {
		if errs := CycleErrors(nodes); errs != nil {
			b.Fatal(errs[0])
		}
	}
}
