package policy

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestChangedPaths(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, old, spec string
		want            []string
	}{
		{"same", `{"size":1,"tags":{"env":"prod"}}`, `{"tags":{"env":"prod"},"size":1}`, nil},
		{"scalar changed", `{"size":1}`, `{"size":2}`, []string{"spec.size"}},
		{"nested key changed", `{"tags":{"env":"prod","team":"a"}}`, `{"tags":{"env":"dev","team":"a"}}`, []string{"spec.tags.env"}},
		{"key added and removed", `{"a":1,"b":2}`, `{"a":1,"c":3}`, []string{"spec.b", "spec.c"}},
		{"object removed whole", `{"tags":{"env":"prod"}}`, `{}`, []string{"spec.tags"}},
		{"list element", `{"ports":[80,443]}`, `{"ports":[80,8443]}`, []string{"spec.ports[1]"}},
		{"list of another length", `{"ports":[80]}`, `{"ports":[80,443]}`, []string{"spec.ports"}},
		{"object in list", `{"rules":[{"port":80,"to":"a"}]}`, `{"rules":[{"port":81,"to":"a"}]}`, []string{"spec.rules[0].port"}},
		{"type changed", `{"size":{"gb":1}}`, `{"size":2}`, []string{"spec.size"}},
		{"first apply", ``, `{"size":1,"tags":{"env":"prod"}}`, []string{"spec.size", "spec.tags"}},
		{"spec gone", `{"size":1}`, ``, []string{"spec"}},
		{"numbers compare by value", `{"size":1.0}`, `{"size":1}`, nil},
		{"not JSON", `{`, `{"size":1}`, []string{"spec"}},
	} {
		got := ChangedPaths(json.RawMessage(c.old), json.RawMessage(c.spec))
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: ChangedPaths = %q; want %q", c.name, got, c.want)
		}
	}
}

// TestNeeds: a policy says which costly inputs its rule reads, for the resources it selects.
func TestNeeds(t *testing.T) {
	t.Parallel()
	prod := Match{Namespaces: []string{"production"}}
	other := Match{Namespaces: []string{"staging"}}
	for _, c := range []struct {
		name     string
		policies []Policy
		selected bool
		want     Reads
	}{
		{"none selects", []Policy{{Name: "a", Match: other, Action: Deny, When: "oldSpec.size > 1 && change.author.name == 'x'"}}, false, Reads{}},
		{"no rule", []Policy{{Name: "a", Match: prod, Action: Allow}}, true, Reads{}},
		{"change.type reads neither author nor paths", []Policy{{Name: "a", Match: prod, Action: Deny, When: "change.type == 'delete' && change.generation > 1"}}, true, Reads{}},
		{"change.author", []Policy{{Name: "a", Match: prod, Action: Deny, When: "change.author.email.endsWith('@x.org')"}}, true, Reads{Author: true}},
		{"has(change.author)", []Policy{{Name: "a", Match: prod, Action: Deny, When: "has(change.author)"}}, true, Reads{Author: true}},
		{"change.paths", []Policy{{Name: "a", Match: prod, Action: Deny, When: "'spec.size' in change.paths"}}, true, Reads{Paths: true}},
		{"change whole", []Policy{{Name: "a", Match: prod, Action: Deny, When: "change != null && change.type == 'x'"}}, true, Reads{Author: true, Paths: true}},
		{"oldSpec and plan", []Policy{{Name: "a", Match: prod, Action: Deny, When: "oldSpec.size > spec.size"},
			{Name: "b", Match: prod, Action: Deny, When: "plan.destroy > 0"}}, true, Reads{Plan: true, OldSpec: true}},
		{"read by one that does not select", []Policy{{Name: "a", Match: other, Action: Deny, When: "change.author.name == 'x'"},
			{Name: "b", Match: prod, Action: Deny, When: "spec.size > 1"}}, true, Reads{}},
		// Read as change passed whole: reading too much costs a query, never a wrong decision.
		{"a comprehension variable named change", []Policy{{Name: "a", Match: prod, Action: Deny, When: "[1].exists(change, change > 0)"}}, true, Reads{Author: true, Paths: true}},
	} {
		s := mustCompile(t, c.policies...)
		sel, got := s.Needs(&input().Resource)
		if sel != c.selected || got != c.want {
			t.Errorf("%s: Needs = %v, %+v; want %v, %+v", c.name, sel, got, c.selected, c.want)
		}
	}
}

// SetPaths gives every change its paths: a create's top-level keys, an empty list (not
// null) when nothing differs.
func TestSetPaths(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		old, spec string
		want      []string
	}{{"", `{"size":1,"tags":{"a":"b"}}`, []string{"spec.size", "spec.tags"}}, {`{"size":1}`, `{"size":1}`, []string{}}, {`{"size":1}`, `{"size":2}`, []string{"spec.size"}}} {
		in := Input{Spec: json.RawMessage(tc.spec)}
		if tc.old != "" {
			in.OldSpec = json.RawMessage(tc.old)
		}
		in.SetPaths()
		if in.Change.Paths == nil || !slices.Equal(in.Change.Paths, tc.want) {
			t.Errorf("SetPaths(%s, %s) = %#v, want %#v", tc.old, tc.spec, in.Change.Paths, tc.want)
		}
	}
}
