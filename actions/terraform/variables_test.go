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
	got, err := requiredVariables(dir, false, nil)
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
	if _, err := requiredVariables(dir, false, nil); err == nil {
		t.Error("a file HCL cannot parse: no error")
	}
}

// A variable the spec need not set is not required: the instance's env sets TF_VAR_<name>, a
// variable-definitions file Terraform loads by itself sets it, or an override file gives it a
// default. Files Terraform ignores are not read; OpenTofu's .tofu files replace .tf files.
func TestRequiredVariablesProvidedElsewhere(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		files map[string]string
		tofu  bool
		env   []string
		want  []string
	}{
		{name: "env TF_VAR", files: map[string]string{"main.tf": `variable "owner" {}` + "\n" + `variable "size" {}`},
			env: []string{"AWS_REGION=x", "TF_VAR_owner=team-a"}, want: []string{"size"}},
		{name: "terraform.tfvars", files: map[string]string{"main.tf": `variable "region" {}` + "\n" + `variable "size" {}`,
			"terraform.tfvars": `region = "eu-west-1"`}, want: []string{"size"}},
		{name: "auto.tfvars.json", files: map[string]string{"main.tf": `variable "region" {}` + "\n" + `variable "size" {}`,
			"prod.auto.tfvars.json": `{"region": "eu-west-1"}`}, want: []string{"size"}},
		{name: "other tfvars are not loaded", files: map[string]string{"main.tf": `variable "region" {}`,
			"prod.tfvars": `region = "eu-west-1"`}, want: []string{"region"}},
		{name: "override default", files: map[string]string{"main.tf": `variable "tier" {}` + "\n" + `variable "size" {}`,
			"override.tf": `variable "tier" { default = "gold" }`}, want: []string{"size"}},
		{name: "override without default counts once", files: map[string]string{"main.tf": `variable "tier" {}`,
			"x_override.tf.json": `{"variable": {"tier": {"type": "string"}}}`}, want: []string{"tier"}},
		{name: "ignored files", files: map[string]string{"main.tf": `variable "size" {}`,
			".hidden.tf": `variable "dot" {}`, "main.tf~": `variable "backup" {}`, "#main.tf#": `variable "autosave" {}`},
			want: []string{"size"}},
		{name: "tofu replaces tf", tofu: true, files: map[string]string{"main.tf": `variable "tf_only" {}`,
			"main.tofu": `variable "tofu_only" {}`, "extra.tofu.json": `{"variable": {"more": {}}}`}, want: []string{"more", "tofu_only"}},
		{name: "terraform ignores tofu files", files: map[string]string{"main.tf": `variable "tf_only" {}`,
			"main.tofu": `variable "tofu_only" {}`}, want: []string{"tf_only"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := requiredVariables(dir, tc.tofu, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range got {
				names = append(names, f.Name)
			}
			if !reflect.DeepEqual(names, tc.want) {
				t.Errorf("required = %q, want %q", names, tc.want)
			}
		})
	}
}

// An editor's lock file (.#main.tf, a dangling symbolic link) is not read.
func TestRequiredVariablesSkipsLockFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`variable "size" {}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("user@host.1234:1700000000", filepath.Join(dir, ".#main.tf")); err != nil {
		t.Fatal(err)
	}
	got, err := requiredVariables(dir, false, nil)
	if err != nil || len(got) != 1 || got[0].Name != "size" {
		t.Errorf("required = %+v, %v; want size", got, err)
	}
}
