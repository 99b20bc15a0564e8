package manifest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/sources"
)

// setTypes declares Database and Network for the ResourceSet tests.
var setTypes = manifesttest.TypeDoc("Database", "example.com", `{type: object, additionalProperties: false, required: [size, region],
        properties: {size: {type: integer, minimum: 1}, region: {type: string}, tenant: {type: string}, network: {type: string}, tier: {type: string, default: standard}}}`,
	"provision") + "---\n" + manifesttest.TypeDoc("Network", "example.com", "{type: object}", "provision")

// networks declares the Networks the sets' resources depend on.
const networks = `apiVersion: example.com/v1
kind: Network
metadata: {name: net-eu-west-1, namespace: production}
---
apiVersion: example.com/v1
kind: Network
metadata: {name: net-us-east-1, namespace: production}
`

// tenantSet is the example: line 14 is the template's size.
const tenantSet = `apiVersion: trueup.dev/v1
kind: ResourceSet
metadata: {name: tenant-dbs, namespace: production}
spec:
  inputs: [{tenant: acme, size: 100}, {tenant: globex, size: 50}, {tenant: initech, size: 10}]
  matrix: {region: [eu-west-1, us-east-1]}
  resources:
    - apiVersion: example.com/v1
      kind: Database
      metadata: {name: "db-<< inputs.tenant >>-<< inputs.region >>", labels: {team: "<< inputs.tenant >>"}}
      dependsOn: [{kind: Network, name: "net-<< inputs.region >>"}]
      spec:
        region: "<< inputs.region >>"
        size: "<< inputs.size >>"
        network: "${{ Network/net-<< inputs.region >>.outputs.id }}"
`

func loadSet(t *testing.T, pairs ...string) (*Set, error) {
	t.Helper()
	return NewLoader().Load(files(append([]string{"types.yaml", setTypes, "networks.yaml", networks}, pairs...)...), Options{})
}

func TestResourceSetExpands(t *testing.T) {
	t.Parallel()
	set, err := loadSet(t, "sets/tenants.yaml", tenantSet)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range set.Resources {
		if r.Kind != "Database" {
			continue
		}
		var deps []string
		for _, d := range r.DependsOn {
			deps = append(deps, fmt.Sprintf("%s explicit=%v outputs=%v", d.Target, d.Explicit, d.Outputs))
		}
		got = append(got, fmt.Sprintf("%s/%s %s %s:%d labels=%v deps=%v", r.Namespace, r.Name, r.Spec, r.File, r.Line, r.Labels, deps))
	}
	want := []string{}
	for _, tn := range []struct {
		name string
		size int
	}{{"acme", 100}, {"globex", 50}, {"initech", 10}} {
		for _, region := range []string{"eu-west-1", "us-east-1"} {
			want = append(want, fmt.Sprintf(`production/db-%s-%s {"network":"${{ Network/net-%s.outputs.id }}","region":"%s","size":%d,"tier":"standard"} sets/tenants.yaml:8 labels=map[team:%s trueup.dev/resource-set:tenant-dbs] deps=[Network/production/net-%s explicit=true outputs=[id]]`,
				tn.name, region, region, region, tn.size, tn.name, region))
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("generated:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantSets := []ResourceSetInfo{{Namespace: "production", Name: "tenant-dbs", File: "sets/tenants.yaml", Line: 1, Inputs: 6, Members: 6}}
	if !slices.Equal(set.ResourceSets, wantSets) {
		t.Errorf("ResourceSets = %+v, want %+v", set.ResourceSets, wantSets)
	}
}

func TestResourceSetBadInput(t *testing.T) {
	t.Parallel()
	bad := strings.Replace(tenantSet, "{tenant: globex, size: 50}", "{tenant: globex, size: huge}", 1)
	_, err := loadSet(t, "sets/tenants.yaml", bad)
	got := problems(t, err)
	want := []string{
		"sets/tenants.yaml:14 (tenant=globex, region=eu-west-1): spec.size: expected integer, but got string",
		"sets/tenants.yaml:14 (tenant=globex, region=us-east-1): spec.size: expected integer, but got string",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// names lists the Databases of set as namespace/name.
func names(set *Set) []string {
	var out []string
	for _, r := range set.Resources {
		if r.Kind == "Database" {
			out = append(out, r.Namespace+"/"+r.Name)
		}
	}
	return out
}

func TestResourceSetInputs(t *testing.T) {
	t.Parallel()
	const tmpl = `  resources:
    - apiVersion: example.com/v1
      kind: Database
      metadata: {name: "db-<< inputs.tenant >>-<< inputs.region >>"}
      spec: {size: 1, region: "<< inputs.region >>"}
`
	set := func(spec string) string {
		return "apiVersion: trueup.dev/v1\nkind: ResourceSet\nmetadata: {name: s}\nspec:\n" + spec + tmpl
	}
	for _, tc := range []struct {
		name  string
		files []string
		want  []string
	}{
		{"matrix only", []string{"s.yaml", set("  matrix: {region: [b, a], tenant: [x]}\n")},
			[]string{"default/db-x-a", "default/db-x-b"}},
		{"inputs empty", []string{"s.yaml", set("  inputs: []\n  matrix: {region: [a]}\n")}, nil},
		{"none of the three", []string{"s.yaml", strings.NewReplacer("db-<< inputs.tenant >>-<< inputs.region >>", "db-one", "<< inputs.region >>", "eu").Replace(set(""))},
			[]string{"default/db-one"}},
		{"inputsFrom file, folder, documents, JSON", []string{
			"sets/s.yaml", set("  inputs: [{tenant: w, region: eu}]\n  inputsFrom: [{path: tenants/eu.yaml}, {path: ../more}]\n"),
			"sets/tenants/eu.yaml", "tenant: a\nregion: eu\n---\n- {tenant: b, region: eu}\n- {tenant: c, region: eu}\n",
			"more/z.json", `[{"tenant": "z", "region": "us"}]`,
			"more/deep/y.yml", "{tenant: y, region: us}\n",
		}, []string{"default/db-a-eu", "default/db-b-eu", "default/db-c-eu", "default/db-w-eu", "default/db-y-us", "default/db-z-us"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := loadSet(t, tc.files...)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(s); !slices.Equal(got, tc.want) {
				t.Errorf("generated %v, want %v", got, tc.want)
			}
		})
	}
}

func TestResourceSetProblems(t *testing.T) {
	t.Parallel()
	// header is 4 lines; the template's item starts on line 6.
	set := func(name, spec, item string) string {
		return "apiVersion: trueup.dev/v1\nkind: ResourceSet\nmetadata: {name: " + name + ", namespace: production}\nspec:\n" + spec +
			"  resources:\n    - apiVersion: example.com/v1\n      kind: Database\n" + item
	}
	const named = "      metadata: {name: \"db-<< inputs.tenant >>\"}\n      spec: {size: 1, region: eu}\n"
	for _, tc := range []struct {
		name  string
		files []string
		want  []string
	}{
		{"invalid generated name", []string{"s.yaml", set("s", "  inputs: [{tenant: ok}, {tenant: Bad_Name}]\n", named)},
			[]string{`s.yaml:9 (tenant=Bad_Name): metadata.name: invalid name "db-Bad_Name": ` + labelHelp}},
		{"name reading no input", []string{"s.yaml", set("s", "  inputs: [{tenant: a}, {tenant: b}]\n", "      metadata: {name: db}\n      spec: {size: \"<< inputs.tenant >>\", region: eu}\n")},
			[]string{
				"s.yaml:10 (inputs[0]): spec.size: expected integer, but got string",
				"s.yaml:10 (inputs[1]): spec.size: expected integer, but got string",
				"s.yaml:7 (inputs[1]): duplicate resource production/Database/db (also declared at s.yaml:7 (inputs[0]))",
				"s.yaml:7 (inputs[0]): duplicate resource production/Database/db (also declared at s.yaml:7 (inputs[1]))",
			}},
		{"set and file", []string{"s.yaml", set("s", "  inputs: [{tenant: a}]\n", named),
			"db.yaml", "apiVersion: example.com/v1\nkind: Database\nmetadata: {name: db-a, namespace: production}\nspec: {size: 1, region: eu}\n"},
			[]string{
				"db.yaml:1: duplicate resource production/Database/db-a (also declared at s.yaml:7 (tenant=a))",
				"s.yaml:7 (tenant=a): duplicate resource production/Database/db-a (also declared at db.yaml:1)",
			}},
		{"set and set", []string{"a.yaml", set("a", "  inputs: [{tenant: a}]\n", named), "b.yaml", set("b", "  inputs: [{tenant: a}]\n", named)},
			[]string{
				"a.yaml:7 (tenant=a): duplicate resource production/Database/db-a (also declared at b.yaml:7 (tenant=a))",
				"b.yaml:7 (tenant=a): duplicate resource production/Database/db-a (also declared at a.yaml:7 (tenant=a))",
			}},
		{"duplicate set", []string{"a.yaml", set("s", "  inputs: [{tenant: a}]\n", named), "b.yaml", set("s", "  inputs: [{tenant: b}]\n", named)},
			[]string{
				"a.yaml:1: duplicate ResourceSet production/s (also declared at b.yaml:1)",
				"b.yaml:1: duplicate ResourceSet production/s (also declared at a.yaml:1)",
			}},
		{"template in another namespace, reserved label", []string{"s.yaml", set("s", "  inputs: [{tenant: a}]\n",
			"      metadata: {name: db, namespace: other, labels: {trueup.dev/resource-set: x}}\n      spec: {size: 1, region: eu}\n")},
			[]string{
				`s.yaml:9: spec.resources[0].metadata.labels["trueup.dev/resource-set"]: label trueup.dev/resource-set is reserved: the set labels each resource it generates with its name`,
				"s.yaml:9: spec.resources[0].metadata.namespace: must be the set's namespace production or left out: a set generates resources in its own namespace",
			}},
		{"reserved label in a written resource", []string{"db.yaml", "apiVersion: example.com/v1\nkind: Database\nmetadata:\n  name: db\n  labels: {trueup.dev/resource-set: x}\nspec: {size: 1, region: eu}\n"},
			[]string{`db.yaml:5: metadata.labels["trueup.dev/resource-set"]: label trueup.dev/resource-set is reserved: a ResourceSet sets it on the resources it generates`}},
		{"ResourceType template", []string{"s.yaml", strings.Replace(set("s", "", named), "example.com/v1\n      kind: Database", "trueup.dev/v1\n      kind: ResourceType", 1)},
			[]string{"s.yaml:7: spec.resources[0].kind: a ResourceSet generates resources, not trueup.dev documents"}},
		{"templated kind, dependsOn on the set", []string{"s.yaml", strings.Replace(set("s", "", named), "kind: Database", "kind: \"<< inputs.kind >>\"", 1) + "dependsOn: []\n"},
			[]string{
				"s.yaml:7: spec.resources[0].kind: cannot be templated: kind is written out in each template",
				"s.yaml:10: dependsOn: a ResourceSet does not take dependsOn: put it in the templates (spec.resources[].dependsOn)",
			}},
		{"matrix key clash", []string{"s.yaml", set("s", "  inputs: [{tenant: a, region: eu}]\n  matrix: {region: [us]}\n", named)},
			[]string{"s.yaml:6: spec.matrix.region: matrix key region is also a key of the input at s.yaml:5"}},
		{"inputsFrom missing, leaving", []string{"sets/s.yaml", set("s", "  inputsFrom: [{path: nope.yaml}, {path: ../../x}]\n", named)},
			[]string{
				`sets/s.yaml:5: spec.inputsFrom[0].path: no YAML or JSON file at sets/nope.yaml`,
				`sets/s.yaml:5: spec.inputsFrom[1].path: "../../x" leads out of the revision`,
			}},
		{"inputsFrom absolute", []string{"sets/s.yaml", set("s", "  inputsFrom: [{path: /etc/x}]\n", named)},
			[]string{`sets/s.yaml:5: spec.inputsFrom[0].path: "/etc/x" is absolute: inputsFrom paths are relative to the set's folder`}},
		{"inputs file holding a manifest, bad input", []string{"s.yaml", set("s", "  inputsFrom: [{path: in}]\n", named),
			"in/a.yaml", "apiVersion: example.com/v1\nkind: Database\nmetadata: {name: x}\n", "in/b.yaml", "- 3\n"},
			[]string{
				"in/a.yaml:1: an inputs file of ResourceSet production/s (s.yaml:1) holds a manifest (apiVersion and kind): inputs files hold inputs only",
				"in/b.yaml:1: [0]: an input must be a mapping, got number",
			}},
		{"name reading no input defined, matrix", []string{"sets/s.yaml", set("s", "  inputs: [{tenant: a}]\n  inputsFrom: [{path: t.yaml}]\n  matrix: {region: [eu, us]}\n", named),
			"sets/t.yaml", "- {tenant: b}\n- {other: 1}\n"},
			[]string{
				"sets/s.yaml:11 (inputs[2], region=eu): metadata.name: input tenant is not defined (inputs: other, region)",
				"sets/s.yaml:11 (inputs[2], region=us): metadata.name: input tenant is not defined (inputs: other, region)",
				"sets/s.yaml:9 (tenant=a): duplicate resource production/Database/db-a (also declared at sets/s.yaml:9 (tenant=a))",
				"sets/s.yaml:9 (tenant=b): duplicate resource production/Database/db-b (also declared at sets/s.yaml:9 (tenant=b))",
			}},
		{"broken set's inputs file", []string{"sets/s.yaml", set("s", "  bogus: 1\n  inputsFrom: [{path: tenants.yaml}]\n", named),
			"sets/tenants.yaml", "- {tenant: a, size: 1}\n- {tenant: b, size: 2}\n"},
			[]string{`sets/s.yaml:5: spec: unknown field "bogus"`}},
		{"broken set's bad inputs file", []string{"sets/s.yaml", set("s", "  bogus: 1\n  inputsFrom: [{path: tenants.yaml}, {path: none.yaml}]\n", named),
			"sets/tenants.yaml", "- {tenant: a}\n- 3\n"},
			[]string{
				`sets/s.yaml:5: spec: unknown field "bogus"`,
				"sets/s.yaml:6: spec.inputsFrom[1].path: no YAML or JSON file at sets/none.yaml",
				"sets/tenants.yaml:2: [1]: an input must be a mapping, got number",
			}},
		{"duplicate set's inputs file", []string{"a.yaml", set("s", "  inputsFrom: [{path: a}]\n", named), "a/t.yaml", "- {tenant: a}\n",
			"b.yaml", set("s", "  inputsFrom: [{path: b}]\n", named), "b/t.yaml", "- {tenant: b}\n- 3\n"},
			[]string{
				"a.yaml:1: duplicate ResourceSet production/s (also declared at b.yaml:1)",
				"b.yaml:1: duplicate ResourceSet production/s (also declared at a.yaml:1)",
				"b/t.yaml:2: [1]: an input must be a mapping, got number",
			}},
		{"inputs file of two sets", []string{"a.yaml", set("a", "  inputsFrom: [{path: t.yaml}]\n", named),
			"b.yaml", set("b", "  inputsFrom: [{path: t.yaml}]\n", named), "t.yaml", "- {tenant: a}\n- 3\n"},
			[]string{"t.yaml:2: [1]: an input must be a mapping, got number"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := loadSet(t, tc.files...)
			got := problems(t, err)
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(got, want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestResourceSetCaps(t *testing.T) {
	// 10^20 would not fit in memory, nor in an int: refused from the counts.
	var b strings.Builder
	b.WriteString("apiVersion: trueup.dev/v1\nkind: ResourceSet\nmetadata: {name: huge}\nspec:\n  matrix:\n")
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		b.WriteString("    " + k + ": [")
		for i := range 10_000 {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(i))
		}
		b.WriteString("]\n")
	}
	b.WriteString("  resources:\n    - {apiVersion: example.com/v1, kind: Network, metadata: {name: \"n-<< inputs.a >>\"}}\n")
	huge := files("s.yaml", b.String())
	l := NewLoader()
	if allocs := testing.AllocsPerRun(1, func() {
		_, err := l.Load(huge, Options{})
		want := "s.yaml:4: spec: ResourceSet default/huge would generate more than 9223372036854775807 resources, more than the limit of 10000 (limits.maxResourcesPerSet in the controller config)"
		if got := problems(t, err); !slices.Equal(got, []string{want}) {
			t.Errorf("problems %q, want %q", got, want)
		}
	}); allocs > 2_000_000 {
		t.Errorf("%v allocations: the set was expanded", allocs)
	}

	set := "apiVersion: trueup.dev/v1\nkind: ResourceSet\nmetadata: {name: s}\nspec:\n  matrix: {n: [1, 2, 3]}\n  resources:\n" +
		"    - {apiVersion: example.com/v1, kind: Network, metadata: {name: \"a-<< inputs.n >>\"}}\n" +
		"    - {apiVersion: example.com/v1, kind: Network, metadata: {name: \"b-<< inputs.n >>\"}}\n"
	for _, tc := range []struct {
		lim  Limits
		want string
	}{
		{Limits{MaxResourcesPerSet: 5}, "s.yaml:4: spec: ResourceSet default/s would generate 6 resources, more than the limit of 5 (limits.maxResourcesPerSet in the controller config)"},
		{Limits{MaxResources: 7}, "revision has 8 resources (6 generated by ResourceSets), more than the limit of 7 (limits.maxResources in the controller config)"},
	} {
		_, err := NewLoader().Load(files("types.yaml", setTypes, "s.yaml", set, "networks.yaml", networks), Options{Limits: tc.lim})
		if got := problems(t, err); !slices.Equal(got, []string{tc.want}) {
			t.Errorf("limits %+v: problems %q, want %q", tc.lim, got, tc.want)
		}
	}
	if s, err := NewLoader().Load(files("types.yaml", setTypes, "s.yaml", set), Options{Limits: Limits{MaxResources: 6, MaxResourcesPerSet: 6}}); err != nil || len(s.Resources) != 6 {
		t.Errorf("at the caps: %v", err)
	}
}

// thirtyTenants is a set default/s of 30 Databases db-t0 to db-t29, from inputs {tenant,
// size} and the template's spec written on line 10.
func thirtyTenants(size, spec string) string {
	var ins []string
	for i := range 30 {
		ins = append(ins, fmt.Sprintf("{tenant: t%d, size: %s}", i, size))
	}
	return "apiVersion: trueup.dev/v1\nkind: ResourceSet\nmetadata: {name: s}\nspec:\n  inputs: [" + strings.Join(ins, ", ") + "]\n  resources:\n" +
		"    - apiVersion: example.com/v1\n      kind: Database\n      metadata: {name: \"db-<< inputs.tenant >>\"}\n      spec: " + spec + "\n"
}

func TestResourceSetProblemCap(t *testing.T) {
	t.Parallel()
	_, err := loadSet(t, "s.yaml", thirtyTenants("bad", `{size: "<< inputs.size >>", region: eu}`))
	got := problems(t, err)
	if len(got) != 21 || got[0] != "s.yaml:10 (tenant=t0): spec.size: expected integer, but got string" ||
		got[20] != "s.yaml:10: … and 10 more problems of ResourceSet default/s in other inputs" {
		t.Errorf("problems:\n%s", strings.Join(got, "\n"))
	}
}

func TestResourceSetGraph(t *testing.T) {
	t.Parallel()
	// Each generated resource depends on the next one, the last on the first.
	set := `apiVersion: trueup.dev/v1
kind: ResourceSet
metadata: {name: ring}
spec:
  inputs: [{n: a, next: b}, {n: b, next: c}, {n: c, next: a}]
  resources:
    - apiVersion: example.com/v1
      kind: Network
      metadata: {name: "net-<< inputs.n >>"}
      dependsOn: [{kind: Network, name: "net-<< inputs.next >>", namespace: "<< inputs.ns >>"}]
`
	_, err := loadSet(t, "s.yaml", set)
	want := "s.yaml:10 (n=a): dependsOn[0].namespace: input ns is not defined (inputs: n, next)"
	if got := problems(t, err); len(got) != 3 || got[0] != want {
		t.Errorf("problems %q, want 3 starting with %q", got, want)
	}
	_, err = loadSet(t, "s.yaml", strings.Replace(set, `, namespace: "<< inputs.ns >>"`, "", 1))
	if got := problems(t, err); len(got) != 1 || !strings.Contains(got[0], "dependency cycle") {
		t.Errorf("problems %q, want a cycle", got)
	}
	// Across namespaces, CheckReference names the input.
	_, err = NewLoader().Load(files("types.yaml", setTypes, "s.yaml", strings.Replace(set, "<< inputs.ns >>", "other", 1)), Options{
		CheckReference: func(from string, target graph.ID, outputs []string) error {
			return fmt.Errorf("%s may not depend on %s", from, target)
		},
	})
	want = "s.yaml:7 (n=a): dependsOn: default may not depend on Network/other/net-b"
	if got := problems(t, err); len(got) != 3 || got[0] != want {
		t.Errorf("problems %q, want 3 starting with %q", got, want)
	}
}

func TestResourceSetCache(t *testing.T) {
	t.Parallel()
	set := strings.Replace(tenantSet, "  inputs: [{tenant: acme, size: 100}, {tenant: globex, size: 50}, {tenant: initech, size: 10}]\n",
		"  inputsFrom: [{path: tenants.yaml}]\n", 1)
	base := files("types.yaml", setTypes, "networks.yaml", networks, "sets/set.yaml", set, "sets/tenants.yaml", "- {tenant: acme, size: 100}\n")
	l := NewLoader()
	load := func(fs []sources.File) *Set {
		t.Helper()
		s, err := l.Load(fs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	load(base)
	entry := func() *setEntry {
		if len(l.sets) != 1 {
			t.Fatalf("%d sets cached", len(l.sets))
		}
		for _, e := range l.sets {
			return e
		}
		return nil
	}
	first := entry()
	// An unrelated change: the set's documents, and their checks, are reused.
	other := slices.Clone(base)
	other[1] = files("networks.yaml", networks+"# edited\n")[0]
	if got := names(load(other)); !slices.Equal(got, []string{"production/db-acme-eu-west-1", "production/db-acme-us-east-1"}) {
		t.Errorf("generated %v", got)
	}
	if entry() != first || first.docs[0].res.checkedWith == (sym{}) {
		t.Error("an unrelated change expanded the set again")
	}
	// A changed inputs file expands it again.
	more := slices.Clone(other)
	more[3] = files("sets/tenants.yaml", "- {tenant: acme, size: 100}\n- {tenant: hooli, size: 5}\n")[0]
	if got := names(load(more)); len(got) != 4 || got[2] != "production/db-hooli-eu-west-1" {
		t.Errorf("generated %v", got)
	}
	if entry() == first {
		t.Error("a changed inputs file did not expand the set again")
	}
	// A schema change checks the cached documents again, rendered from their template.
	stricter := slices.Clone(more)
	stricter[0] = files("types.yaml", strings.Replace(setTypes, "minimum: 1}", "minimum: 10}", 1))[0]
	_, err := l.Load(stricter, Options{})
	want := "sets/set.yaml:14 (tenant=hooli, region=eu-west-1): spec.size: must be >= 10 but found 5"
	if got := problems(t, err); len(got) != 2 || got[0] != want {
		t.Errorf("problems %q, want 2 starting with %q", got, want)
	}
}

// checkShrunk loads pairs with a Database size that may only grow, and checks the
// candidates' transitions from specs in which the size was applied as from, not to. It
// returns how many candidates there are, and the problems.
func checkShrunk(t *testing.T, from, to string, pairs ...string) (int, error) {
	t.Helper()
	types := strings.Replace(setTypes, "size: {type: integer, minimum: 1}", `size: {type: integer, minimum: 1, x-trueup-validations: [{rule: "self >= oldSelf", message: "size may only grow"}]}`, 1)
	l := NewLoader()
	set, err := l.Load(files(append([]string{"types.yaml", types}, pairs...)...), Options{})
	if err != nil {
		t.Fatal(err)
	}
	old := map[ResourceKey]json.RawMessage{}
	for _, r := range set.TransitionCandidates() {
		old[r.Key()] = json.RawMessage(strings.Replace(string(r.Spec), `"size":`+to, `"size":`+from, 1))
	}
	return len(old), l.CheckTransitions(set, old)
}

func TestResourceSetTransition(t *testing.T) {
	t.Parallel()
	_, err := checkShrunk(t, "200", "100", "networks.yaml", networks, "sets/tenants.yaml", tenantSet)
	want := []string{
		"sets/tenants.yaml:14 (tenant=acme, region=eu-west-1): spec.size: size may only grow",
		"sets/tenants.yaml:14 (tenant=acme, region=us-east-1): spec.size: size may only grow",
	}
	if got := problems(t, err); !slices.Equal(got, want) {
		t.Errorf("problems %q, want %q", got, want)
	}
}

// A transition rule a template breaks for every input is reported as Load reports its
// problems: the first maxSetProblems of the set, then how many more.
func TestResourceSetTransitionCap(t *testing.T) {
	t.Parallel()
	written := "apiVersion: example.com/v1\nkind: Database\nmetadata: {name: db}\nspec: {size: 1, region: eu}\n"
	n, err := checkShrunk(t, "2", "1", "s.yaml", thirtyTenants("1", "{size: 1, region: eu}"), "db.yaml", written)
	if n != 31 {
		t.Fatalf("%d candidates, want 31", n)
	}
	got := problems(t, err)
	if len(got) != 22 || got[0] != "db.yaml:4: spec.size: size may only grow" || got[1] != "s.yaml:10 (tenant=t0): spec.size: size may only grow" ||
		got[20] != "s.yaml:10 (tenant=t26): spec.size: size may only grow" || got[21] != "s.yaml:10: … and 10 more problems of ResourceSet default/s in other inputs" {
		t.Errorf("problems:\n%s", strings.Join(got, "\n"))
	}
}

// TestResourceSetFleet loads the benchmarks' fleet at a size that spreads the expansion and
// the checks over several batches.
func TestResourceSetFleet(t *testing.T) {
	t.Parallel()
	set, err := NewLoader().Load(files(manifesttest.Fleet(40, 60)...), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Resources) != 2460 || set.ResourceSets[0].Members != 2400 || set.ResourceSets[0].Inputs != 2400 {
		t.Fatalf("%d resources, sets %+v", len(set.Resources), set.ResourceSets)
	}
	r := set.Resources[2399] // the last Database: Networks sort after
	want := `{"network":"${{ Network/net-region-059.outputs.id }}","region":"region-059","size":40,"tenant":"tenant-00039","tier":"standard"}`
	if r.Name != "db-tenant-00039-region-059" || string(r.Spec) != want || len(r.DependsOn) != 1 || r.Labels[LabelResourceSet] != "tenant-dbs" {
		t.Errorf("last resource %s: %s %+v %v", r.Name, r.Spec, r.DependsOn, r.Labels)
	}
}

func TestResourceSetSpecBudget(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 100<<10)
	// 100 references to a 100 KiB input: 10 MB per spec, as a mapping of whole values and
	// as one interpolated string.
	var fields, text strings.Builder
	for i := range 100 {
		fmt.Fprintf(&fields, "f%d: \"<< inputs.big >>\", ", i)
		text.WriteString("<< inputs.big >>")
	}
	for _, spec := range []string{"{" + fields.String() + "}", `{s: "` + text.String() + `"}`} {
		set := "apiVersion: trueup.dev/v1\nkind: ResourceSet\nmetadata: {name: s}\nspec:\n  inputs: [{n: a, big: " + big + "}]\n  resources:\n" +
			"    - apiVersion: example.com/v1\n      kind: Network\n      metadata: {name: \"n-<< inputs.n >>\"}\n      spec: " + spec + "\n"
		_, err := loadSet(t, "s.yaml", set)
		want := "s.yaml:10 (n=a): spec: spec would be more than 1 MiB, the limit of a document"
		if got := problems(t, err); !slices.Equal(got, []string{want}) {
			t.Errorf("problems %q, want %q", got, want)
		}
	}

	// 300 inputs of a 900 KiB value: each spec is within the document limit, the set's
	// specs together are not, and nothing is rendered.
	set := "apiVersion: trueup.dev/v1\nkind: ResourceSet\nmetadata: {name: s}\nspec:\n  inputs: [{big: " + strings.Repeat("y", 900<<10) + "}]\n" +
		"  matrix: {n: [" + strings.Repeat("0, ", 299) + "0]}\n  resources:\n" +
		"    - apiVersion: example.com/v1\n      kind: Network\n      metadata: {name: \"n-<< inputs.n >>\"}\n      spec: {v: \"<< inputs.big >>\"}\n"
	_, err := loadSet(t, "s.yaml", set)
	want := "s.yaml:4: spec: ResourceSet default/s would render up to 263 MiB of specs, more than the limit of 256 MiB per set (each reference counted at its input's largest value)"
	if got := problems(t, err); !slices.Equal(got, []string{want}) {
		t.Errorf("problems %q, want %q", got, want)
	}
}
