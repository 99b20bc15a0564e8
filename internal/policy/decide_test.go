package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// input is a requested change of a critical production database that replaces it.
func input() *Input {
	return &Input{
		Resource: Resource{Source: "infra", APIVersion: "example.com/v1", Kind: "Database", Namespace: "production", Name: "orders",
			Labels: map[string]string{"tier": "critical"}, Annotations: map[string]string{"owner": "dba"}},
		Spec:    json.RawMessage(`{"size": "large", "replicas": 3, "tags": ["a", "b"], "ratio": 0.5}`),
		OldSpec: json.RawMessage(`{"size": "small", "replicas": 3}`),
		Change: Change{Type: ChangeUpdate, Generation: 7, Revision: "abc123", Author: Author{Name: "Ada", Email: "ada@example.com"},
			Paths: []string{"spec.size"}},
		Plan: Plan{Available: true, Changes: true, Counted: true, Add: 1, Change: 2, Destroy: 1, Replace: 1, Summary: "1 to add, 2 to change, 1 to destroy"},
		Now:  time.Date(2026, 11, 26, 15, 0, 0, 0, time.UTC),
	}
}

func mustCompile(t testing.TB, ps ...Policy) *Set {
	t.Helper()
	s, err := Compile(ps)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestVariables checks that each variable reads as documented: every rule holds on input().
func TestVariables(t *testing.T) {
	t.Parallel()
	for _, rule := range []string{
		"resource.source == 'infra' && resource.apiVersion == 'example.com/v1'",
		"resource.kind == 'Database' && resource.namespace == 'production' && resource.name == 'orders'",
		"resource.labels.tier == 'critical' && resource.annotations['owner'] == 'dba'",
		"!('env' in resource.labels)",
		"spec.size == 'large' && spec.replicas == 3 && spec.replicas > 2 && spec.tags.size() == 2 && spec.ratio == 0.5",
		"oldSpec.size == 'small' && oldSpec.replicas == spec.replicas",
		"!has(oldSpec.tags)",
		"change.type == 'update' && change.generation == 7 && change.revision == 'abc123'",
		"change.author.name == 'Ada' && change.author.email.endsWith('@example.com')",
		"change.paths == ['spec.size'] && 'spec.size' in change.paths",
		"plan.available && plan.changes && plan.counted && plan.add == 1 && plan.change == 2 && plan.destroy == 1 && plan.replace == 1",
		"plan.summary.startsWith('1 to add')",
		"now == timestamp('2026-11-26T15:00:00Z') && now.getHours() == 15",
	} {
		checkHolds(t, rule, input())
	}
}

// TestPlanOf: what rules read of a plan an action made, counted or not.
func TestPlanOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		plan Plan
		rule string
	}{
		{PlanOf(true, true, 1, 0, 2, 0, "1 to add, 2 to destroy"), "plan.available && plan.changes && plan.counted && plan.add == 1 && plan.destroy == 2"},
		{PlanOf(false, true, 0, 0, 0, 0, "no changes"), "plan.counted && !plan.changes && plan.destroy == 0"},
		{PlanOf(true, false, 0, 0, 0, 0, "changes"), "plan.available && plan.changes && !plan.counted && plan.add == 0 && plan.summary == 'changes'"},
		{PlanOf(true, false, 0, 0, 0, 0, ""), "!(plan.counted && plan.destroy == 0)"}, // no destroy is known only when counted
	} {
		in := input()
		in.Plan = c.plan
		checkHolds(t, c.rule, in)
	}
}

// checkHolds fails t unless rule holds on in.
func checkHolds(t *testing.T, rule string, in *Input) {
	t.Helper()
	s := mustCompile(t, Policy{Name: "p", When: rule, Action: Deny})
	if d := s.Decide(context.Background(), in); d.Action != Deny || d.Err != nil {
		t.Errorf("%s: got %+v, want the rule to hold", rule, d)
	}
}

// TestVariablesAbsent: a create has a null oldSpec, an unknown author and an unavailable plan
// reads as zero values.
func TestVariablesAbsent(t *testing.T) {
	t.Parallel()
	in := &Input{Resource: Resource{Kind: "Database", Namespace: "ns", Name: "n"}, Spec: json.RawMessage(`{}`), Change: Change{Type: ChangeCreate}}
	for _, rule := range []string{
		"oldSpec == null",
		"change.type == 'create' && change.author.email == '' && change.paths.size() == 0",
		"!plan.available && !plan.counted && plan.add == 0 && plan.summary == ''",
		"resource.labels.size() == 0",
	} {
		checkHolds(t, rule, in)
	}
}

func TestMatch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		match Match
		want  bool
	}{
		{"empty selects all", Match{}, true},
		{"all lists", Match{Sources: []string{"infra"}, Namespaces: []string{"production"}, Kinds: []string{"Database"}, Selector: "tier=critical"}, true},
		{"one of a list", Match{Namespaces: []string{"staging", "production"}}, true},
		{"other namespace", Match{Namespaces: []string{"staging"}}, false},
		{"other source", Match{Sources: []string{"apps"}}, false},
		{"other kind", Match{Kinds: []string{"Bucket"}}, false},
		{"kind in another case", Match{Kinds: []string{"database"}}, true},
		{"kind glob in another case", Match{Kinds: []string{"data*"}}, true},
		{"namespace glob", Match{Namespaces: []string{"prod*"}}, true},
		{"namespace glob is case-sensitive", Match{Namespaces: []string{"Prod*"}}, false},
		{"source glob", Match{Sources: []string{"in?ra"}}, true},
		{"selector not matching", Match{Selector: "tier=low"}, false},
		{"selector set term", Match{Selector: "tier in (critical,high),!legacy"}, true},
		{"lists match, selector not", Match{Namespaces: []string{"production"}, Selector: "tier!=critical"}, false},
	} {
		s := mustCompile(t, Policy{Name: "p", Match: c.match, Action: Deny})
		selected, _ := s.Applies(&input().Resource)
		d := s.Decide(context.Background(), input())
		if selected != c.want || (d.Action == Deny) != c.want {
			t.Errorf("%s: selected %v, decision %s; want selected %v", c.name, selected, d.Action, c.want)
		}
	}
}

func TestApplies(t *testing.T) {
	t.Parallel()
	prod := Match{Namespaces: []string{"production"}}
	other := Match{Namespaces: []string{"staging"}}
	for _, c := range []struct {
		name                string
		policies            []Policy
		selected, needsPlan bool
	}{
		{"no policy", nil, false, false},
		{"none selects", []Policy{{Name: "a", Match: other, Action: Deny, When: "plan.destroy > 0"}}, false, false},
		{"selects without plan", []Policy{{Name: "a", Match: prod, Action: Deny, When: "change.type == 'delete'"}}, true, false},
		{"selects without rule", []Policy{{Name: "a", Match: prod, Action: Allow}}, true, false},
		{"selects with plan", []Policy{{Name: "a", Match: prod, Action: Allow, When: "plan.available"},
			{Name: "b", Match: prod, Action: Deny, When: "change.type == 'delete'"}}, true, true},
		{"plan read by one that does not select", []Policy{{Name: "a", Match: other, Action: Allow, When: "plan.available"},
			{Name: "b", Match: prod, Action: Deny, When: "spec.size == 'x'"}}, true, false},
	} {
		s := mustCompile(t, c.policies...)
		if sel, plan := s.Applies(&input().Resource); sel != c.selected || plan != c.needsPlan {
			t.Errorf("%s: Applies = %v, %v; want %v, %v", c.name, sel, plan, c.selected, c.needsPlan)
		}
	}
	var none *Set
	if sel, plan := none.Applies(&input().Resource); sel || plan || none.Len() != 0 {
		t.Error("a nil Set selects something")
	}
	if d := none.Decide(context.Background(), input()); d.Action != Allow {
		t.Errorf("a nil Set decides %+v", d)
	}
}

// TestDecideOrder: the first deny that holds wins wherever it is, requireApproval collects
// the requirements of every policy that holds, allow decides nothing.
func TestDecideOrder(t *testing.T) {
	t.Parallel()
	dba := &Approvals{Count: 1, From: []Principal{{Group: "dba"}}}
	sec := &Approvals{Count: 2, From: []Principal{{Group: "security"}, {Token: "release-bot"}}, NotAuthor: true}
	holds, fails := "plan.replace > 0", "change.type == 'delete'"
	for _, c := range []struct {
		name     string
		policies []Policy
		action   Effect
		policy   string
		message  string
		needs    []string // the policies whose approvals are required
	}{
		{"no policy allows", nil, Allow, "", "", nil},
		{"allow that holds", []Policy{{Name: "a", When: holds, Action: Allow}}, Allow, "", "", nil},
		{"deny that does not hold", []Policy{{Name: "d", When: fails, Action: Deny}}, Allow, "", "", nil},
		{"deny that holds", []Policy{{Name: "d", When: holds, Action: Deny, Message: "no replacing"}}, Deny, "d", "no replacing", nil},
		{"deny default message", []Policy{{Name: "d", When: holds, Action: Deny}}, Deny, "d", "denied by policy d", nil},
		{"deny after requireApproval wins", []Policy{
			{Name: "r", When: holds, Action: RequireApproval, Approvals: dba},
			{Name: "d", When: holds, Action: Deny, Message: "no"}}, Deny, "d", "no", nil},
		{"first deny wins", []Policy{
			{Name: "d1", When: holds, Action: Deny, Message: "first"},
			{Name: "d2", When: holds, Action: Deny, Message: "second"}}, Deny, "d1", "first", nil},
		{"allow does not override a deny", []Policy{
			{Name: "a", When: holds, Action: Allow},
			{Name: "d", When: holds, Action: Deny, Message: "no"}}, Deny, "d", "no", nil},
		{"requireApproval default message", []Policy{{Name: "r", When: holds, Action: RequireApproval, Approvals: sec}},
			RequireApproval, "r", "policy r needs 2 approvals from group security or token release-bot, not by the commit's author", []string{"r"}},
		{"every requireApproval that holds", []Policy{
			{Name: "r1", When: holds, Action: RequireApproval, Approvals: dba, Message: "dba"},
			{Name: "skip", When: fails, Action: RequireApproval, Approvals: dba},
			{Name: "r2", Action: RequireApproval, Approvals: sec}}, RequireApproval, "r1", "dba", []string{"r1", "r2"}},
		{"policy not selecting is skipped", []Policy{
			{Name: "d", Match: Match{Kinds: []string{"Bucket"}}, Action: Deny},
			{Name: "r", Action: RequireApproval, Approvals: dba, Message: "m"}}, RequireApproval, "r", "m", []string{"r"}},
	} {
		s := mustCompile(t, c.policies...)
		d := s.Decide(context.Background(), input())
		var needs []string
		for _, r := range d.Approvals {
			needs = append(needs, r.Policy)
		}
		if d.Action != c.action || d.Policy != c.policy || d.Message != c.message || fmt.Sprint(needs) != fmt.Sprint(c.needs) || d.Err != nil {
			t.Errorf("%s: got %+v; want %s by %q (%q) needing %v", c.name, d, c.action, c.policy, c.message, c.needs)
		}
	}
}

// TestDecideErrors: a rule that cannot be evaluated denies at its place, with the error as the
// message; a deny that holds before it still wins.
func TestDecideErrors(t *testing.T) {
	t.Parallel()
	list := make([]int, 50)
	for i := range list {
		list[i] = i
	}
	in := input()
	var err error
	if in.Spec, err = json.Marshal(map[string]any{"items": list}); err != nil {
		t.Fatal(err)
	}
	notJSON := input()
	notJSON.OldSpec = json.RawMessage(`{"size": `)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expensive := "spec.items.all(x, spec.items.all(y, x == y || x != y))"
	for _, c := range []struct {
		name     string
		ctx      context.Context
		policies []Policy
		limit    uint64
		policy   string
		message  string // a part of it
	}{
		{"over the cost limit", context.Background(), []Policy{{Name: "big", When: expensive, Action: Allow}}, 1000, "big",
			"policy big: rule is too expensive to evaluate (over the cost limit of 1000)"},
		{"within the cost limit", context.Background(), []Policy{{Name: "big", When: expensive, Action: Allow}}, CostLimit, "", ""},
		{"cancelled", cancelled, []Policy{{Name: "c", When: expensive, Action: Allow}}, CostLimit, "c", "policy c: rule could not be evaluated: operation interrupted"},
		{"missing key", context.Background(), []Policy{{Name: "k", When: "spec.nothing == 1", Action: RequireApproval,
			Approvals: &Approvals{From: []Principal{{Group: "g"}}}}}, CostLimit, "k", "policy k: rule could not be evaluated: no such key: nothing"},
		{"not a bool", context.Background(), []Policy{{Name: "b", When: "spec.items[0]", Action: Allow}}, CostLimit, "b", "policy b: rule gave double, not a bool"},
		{"a spec that is not JSON", context.Background(), []Policy{{Name: "j", When: "oldSpec.size == 'small'", Action: Allow}}, CostLimit, "j",
			"policy j: rule could not be evaluated: oldSpec is not JSON: unexpected end of JSON input"},
		{"an earlier deny wins", context.Background(), []Policy{{Name: "d", Action: Deny}, {Name: "k", When: "spec.nothing == 1", Action: Allow}},
			CostLimit, "d", "denied by policy d"},
	} {
		s, err := compile(c.policies, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		at := in
		if strings.Contains(c.policies[0].When, "oldSpec") {
			at = notJSON // the only case that reads oldSpec
		}
		d := s.Decide(c.ctx, at)
		if c.policy == "" {
			if d.Action != Allow || d.Err != nil {
				t.Errorf("%s: got %+v, want allow", c.name, d)
			}
			continue
		}
		if d.Action != Deny || d.Policy != c.policy || !strings.Contains(d.Message, c.message) || (d.Err != nil) != (c.policy != "d") {
			t.Errorf("%s: got %+v (%v); want a deny by %s saying %q", c.name, d, d.Err, c.policy, c.message)
		}
		if errors.Is(d.Err, context.Canceled) != (c.ctx == cancelled) {
			t.Errorf("%s: Err %v; context.Canceled in it only when the context ended", c.name, d.Err)
		}
	}
}

// TestDecideConcurrent: one Set decides for many goroutines at once (run with -race).
func TestDecideConcurrent(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, Policy{Name: "d", When: "spec.size == 'large' && oldSpec.size == 'small' && plan.replace > 0", Action: Deny})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if d := s.Decide(context.Background(), input()); d.Action != Deny || d.Err != nil {
					t.Errorf("got %+v", d)
					return
				}
			}
		})
	}
	wg.Wait()
}
