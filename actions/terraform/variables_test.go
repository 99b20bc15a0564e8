package terraform

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/trueup-dev/trueup/actions"
)

// Variables without a default are required, in .tf and .tf.json files alike; a default (even
// null) or a nested block does not confuse the parser; trueup's own override files are not
// the module's.
func TestRequiredVariables(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"main.tf": `variable "size" { type = number }
variable "region" {
  default = "eu-west-1"
}
variable "owner" {
  type = string
  validation {
    condition     = length(var.owner) > 0
    error_message = "{ not a brace }"
  }
}
variable "note" { default = null }
`,
		"extra.tf.json":  `{"variable": {"team": {"type": "string"}, "tier": {"default": "gold"}}}`,
		sensitiveFile:    `{"variable": {"ignored": {}}}`,
		"README.md":      `variable "nope" {}`,
		"outputs.tf":     `output "id" { value = var.size }`,
		"versions.tf":    "terraform {\n  required_version = \">= 1.5\"\n}\n",
		"sub/ignored.tf": `variable "deeper" {}`,
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := requiredVariables(dir)
	if err != nil {
		t.Fatal(err)
	}
	main, extra := filepath.Join(dir, "main.tf"), filepath.Join(dir, "extra.tf.json")
	want := []actions.RequiredField{{Name: "team", File: extra, Line: 1}, {Name: "size", File: main, Line: 1}, {Name: "owner", File: main, Line: 5}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("required = %+v\nwant %+v", got, want)
	}

	if err := os.WriteFile(filepath.Join(dir, "broken.tf"), []byte(`variable "x" {`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := requiredVariables(dir); err == nil {
		t.Error("a file HCL cannot parse: no error")
	}
}
