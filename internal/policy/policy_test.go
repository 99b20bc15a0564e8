package policy

import (
	"strings"
	"testing"
)

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	from := &Approvals{From: []Principal{{Group: "dba"}}}
	for _, c := range []struct {
		name   string
		policy Policy
		want   string
	}{
		{"name missing", Policy{Action: Allow}, `policies[0] ().name: "" must be a DNS label`},
		{"name not a label", Policy{Name: "Prod DB", Action: Allow}, `policies[0] (Prod DB).name: "Prod DB" must be a DNS label`},
		{"action missing", Policy{Name: "p"}, "policies[0] (p).action: required (allow, deny or requireApproval)"},
		{"action unknown", Policy{Name: "p", Action: "approve"}, `policies[0] (p).action: "approve" is not allow, deny or requireApproval`},
		{"undeclared variable", Policy{Name: "p", Action: Deny, When: "plan.destroy > 0 ||\n  planz.replace > 0"},
			"policies[0] (p).when: rule does not compile: undeclared reference to 'planz' (in container '') (line 2, column 3)"},
		{"unknown field", Policy{Name: "p", Action: Deny, When: "plan.destory > 0"},
			"policies[0] (p).when: rule does not compile: undefined field 'destory' (line 1, column 5)"},
		{"syntax", Policy{Name: "p", Action: Deny, When: "plan.destroy >"}, "policies[0] (p).when: rule does not compile: Syntax error"},
		{"not a bool", Policy{Name: "p", Action: Deny, When: "plan.destroy"}, "policies[0] (p).when: rule must give a bool, not int"},
		{"too long", Policy{Name: "p", Action: Deny, When: "true" + strings.Repeat(" ", maxRuleLength)}, "policies[0] (p).when: rule is longer than 4096 bytes"},
		{"bad selector", Policy{Name: "p", Action: Deny, Match: Match{Selector: "tier in critical"}}, "policies[0] (p).match.selector: \"tier in critical\": values must be in parentheses"},
		{"bad glob", Policy{Name: "p", Action: Deny, Match: Match{Namespaces: []string{"prod["}}}, `policies[0] (p).match.namespaces[0]: "prod[" is not a valid pattern`},
		{"empty kind", Policy{Name: "p", Action: Deny, Match: Match{Kinds: []string{""}}}, "policies[0] (p).match.kinds[0]: must not be empty"},
		{"approvals on deny", Policy{Name: "p", Action: Deny, Approvals: from}, "policies[0] (p).approvals: only a requireApproval policy takes approvals"},
		{"approvals missing", Policy{Name: "p", Action: RequireApproval}, "policies[0] (p).approvals: required for requireApproval"},
		{"from missing", Policy{Name: "p", Action: RequireApproval, Approvals: &Approvals{Count: 1}}, "policies[0] (p).approvals.from: required"},
		{"from both", Policy{Name: "p", Action: RequireApproval, Approvals: &Approvals{From: []Principal{{Group: "a", Token: "b"}}}},
			"policies[0] (p).approvals.from[0]: exactly one of group and token is required"},
		{"from neither", Policy{Name: "p", Action: RequireApproval, Approvals: &Approvals{From: []Principal{{}}}},
			"policies[0] (p).approvals.from[0]: exactly one of group and token is required"},
		{"negative count", Policy{Name: "p", Action: RequireApproval, Approvals: &Approvals{Count: -1, From: from.From}},
			"policies[0] (p).approvals.count: -1 must be positive"},
	} {
		_, err := Compile([]Policy{c.policy})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

func TestCompile(t *testing.T) {
	t.Parallel()
	_, err := Compile([]Policy{{Name: "a", Action: Allow}, {Name: "b", Action: Deny, When: "x"}, {Name: "a", Action: Deny}})
	for _, want := range []string{"policies[1] (b).when: rule does not compile: undeclared reference to 'x'", `policies[2] (a).name: policy "a" declared twice`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want every error, among them %q", err, want)
		}
	}
	s, err := Compile([]Policy{{Name: "r", Action: RequireApproval, Approvals: &Approvals{From: []Principal{{Token: "bot"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.policies[0].Approvals.Count; got != 1 || s.Len() != 1 {
		t.Errorf("count defaults to %d, want 1", got)
	}
	if s, err := Compile(nil); err != nil || s.Len() != 0 {
		t.Errorf("no policies: %v, %d", err, s.Len())
	}
}
