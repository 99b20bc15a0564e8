//go:build unix

package terraform_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/actions"
)

// The review's scenario: a reconcile puts a revealed secret in the state through a variable
// the module does not mark sensitive; a pull request's preview (the field is a marker there)
// must not show it. The plan's text names the changes without values, and the secret
// variables are marked sensitive for Terraform, so that the state records them so.
func TestPlanShowsNoStateValues(t *testing.T) {
	t.Parallel()
	mod := t.TempDir()
	tf := `variable "size" {}
variable "api_key" {
  type    = string
  default = ""
}
resource "terraform_data" "svc" {
  input = { size = var.size, api_key = var.api_key }
}
`
	if err := os.WriteFile(filepath.Join(mod, "main.tf"), []byte(tf), 0o600); err != nil {
		t.Fatal(err)
	}
	f := setup(t, "planleak", config{Module: mod})
	// "token" is not a variable of the module: it must not be declared by the override.
	req := request("svc", `{"size": 1, "api_key": "sk-live-REVEALED-123456", "token": {"secretRef": {"name": "a", "key": "b"}}}`)
	req.Secrets = []string{"sk-live-REVEALED-123456"}
	res, err := f.action.Reconcile(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Message, "sk-live-REVEALED") {
		t.Fatalf("reconcile message leaks: %s", res.Message)
	}
	st := f.states(t)["team-a.Database.svc"]
	if !strings.Contains(st, `"sensitive_attributes": [`) || strings.Contains(st, `"sensitive_attributes": []`) {
		t.Fatalf("the state does not record the secret variable's value as sensitive:\n%s", st)
	}

	plan, err := f.action.(actions.Planner).Plan(t.Context(), request("svc", `{"size": 2, "api_key": "*** sops:0123abcd"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"sk-live-REVEALED", "sops:0123abcd", "size", "= "} {
		if strings.Contains(plan.Text, leak) {
			t.Errorf("the preview's plan text shows a value (%q):\n%s", leak, plan.Text)
		}
	}
	if !strings.Contains(plan.Text, "# terraform_data.svc will be updated in-place") || !strings.Contains(plan.Text, "Plan: 0 to add, 1 to change, 0 to destroy.") {
		t.Errorf("plan text lacks the change's header or summary:\n%s", plan.Text)
	}
}
