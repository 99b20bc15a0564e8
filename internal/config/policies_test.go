package config

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/policy"
)

// The example, as a policies block.
const policiesExample = `
policies:
  - name: prod-destroy-needs-dba
    match: {sources: [infra], namespaces: [production], kinds: [Database], selector: "tier=critical"}
    when: "plan.destroy > 0 || plan.replace > 0 || change.type == 'delete'"
    action: requireApproval
    approvals: {count: 1, from: [{group: dba}, {token: release-bot}], notAuthor: true}
    message: "replacing or deleting a critical production database needs a DBA"
`

func TestPolicies(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(policiesExample), "/x", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.ApprovalTTL != DefaultApprovalTTL || c.PolicySet().Len() != 1 {
		t.Fatalf("approvalTTL %s, %d policies", c.ApprovalTTL, c.PolicySet().Len())
	}
	in := &policy.Input{
		Resource: policy.Resource{Source: "infra", Namespace: "production", Kind: "Database", Name: "orders", Labels: map[string]string{"tier": "critical"}},
		Plan:     policy.Plan{Available: true, Replace: 1},
	}
	d := c.PolicySet().Decide(context.Background(), in)
	if d.Action != policy.RequireApproval || d.Message != "replacing or deleting a critical production database needs a DBA" ||
		len(d.Approvals) != 1 || !d.Approvals[0].NotAuthor || len(d.Approvals[0].From) != 2 {
		t.Errorf("decision %+v", d)
	}
	c, err = Parse([]byte("approvalTTL: 2h\n"), "/x", env(nil))
	if err != nil || c.ApprovalTTL != 2*time.Hour || c.PolicySet().Len() != 0 {
		t.Errorf("approvalTTL: %v, %v", c, err)
	}
}

func TestPoliciesErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, yaml, want string }{
		{"rule does not compile", strings.Replace(policiesExample, "plan.replace", "plan.replaced", 1),
			"policies[0] (prod-destroy-needs-dba).when: rule does not compile: undefined field 'replaced' (line 1, column 25)"},
		{"unknown key in a policy", strings.Replace(policiesExample, "message:", "mesage:", 1), "line 8: field mesage not found in Policy"},
		{"unknown key in match", strings.Replace(policiesExample, "kinds:", "kind:", 1), "line 4: field kind not found in Match"},
		{"unknown key in approvals", strings.Replace(policiesExample, "notAuthor:", "notauthor:", 1), "line 7: field notauthor not found in Approvals"},
		{"unknown key in from", strings.Replace(policiesExample, "{group: dba}", "{groups: dba}", 1), "line 7: field groups not found in Principal"},
		{"bad action", strings.Replace(policiesExample, "action: requireApproval", "action: approve", 1),
			`policies[0] (prod-destroy-needs-dba).action: "approve" is not allow, deny or requireApproval`},
		{"negative approvalTTL", "approvalTTL: -1h\n", "approvalTTL: -1h0m0s must not be negative"},
	} {
		_, err := Parse([]byte(c.yaml), "/x", env(nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}
