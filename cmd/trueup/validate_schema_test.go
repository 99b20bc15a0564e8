package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// ownerModule requires owner and size; region has a default.
const ownerModule = `variable "size" {
  type = number
}

variable "region" {
  type    = string
  default = "eu-west-1"
}

variable "owner" {
  type = string
  validation {
    condition     = length(var.owner) > 0
    error_message = "owner is empty"
  }
}
`

// bucketType is a type of the terraform action whose schema has size but not owner.
const bucketType = `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Bucket}
spec:
  group: storage.example.com
  versions:
    - name: v1
      schema:
        type: object
        required: [size]
        properties:
          size: {type: integer}
  action: {name: tf}
`

// validate --config names each variable a terraform module requires that the type's schema
// lacks, at the schema's line, with the fix; a module kept in the repository is read from the
// checkout the validated folder is part of.
func TestValidateRequiredVariables(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, module string
	}{
		{"module in the repository", "{source: infra, path: modules/bucket}"},
		{"module beside the config", "REPO/modules/bucket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := t.TempDir()
			writeTestFile(t, filepath.Join(repo, "modules", "bucket", "main.tf"), ownerModule)
			writeTestFile(t, filepath.Join(repo, "manifests", "types", "bucket.yaml"), bucketType)
			cfgPath := filepath.Join(t.TempDir(), "trueup.yaml")
			writeTestFile(t, cfgPath, `dataDir: /tmp/trueup-test
sources:
  - name: infra
    git: {url: "https://git.example.com/infra.git", path: manifests}
actions:
  - name: tf
    type: terraform
    config: {module: `+strings.ReplaceAll(tc.module, "REPO", repo)+`}
`)
			stdout, stderr, err := runCLI(t, "validate", filepath.Join(repo, "manifests"), "--config", cfgPath)
			want := "types/bucket.yaml:11: spec.versions[0].schema.properties: action tf needs spec.owner (variable \"owner\" at " +
				filepath.Join(repo, "modules", "bucket", "main.tf") + ":10 has no default), which the type's schema does not have: " +
				"add `owner` to the type's schema (spec.versions[0].schema.properties.owner)\n"
			if err == nil || stdout != "" || !strings.HasPrefix(stderr, want) || !strings.HasSuffix(stderr, ": 1 error\n") {
				t.Errorf("err %v, stdout %q, stderr:\n%s\nwant first:\n%s", err, stdout, stderr, want)
			}

			// With owner in the schema it passes.
			writeTestFile(t, filepath.Join(repo, "manifests", "types", "bucket.yaml"),
				strings.Replace(bucketType, "size: {type: integer}", "size: {type: integer}\n          owner: {type: string}", 1))
			if stdout, stderr, err := runCLI(t, "validate", filepath.Join(repo, "manifests"), "--config", cfgPath); err != nil || !strings.Contains(stdout, "valid: 1 resource type, 0 resources") {
				t.Errorf("with owner in the schema: err %v, stdout %q, stderr:\n%s", err, stdout, stderr)
			}
		})
	}
}

// A module validate cannot read (the controller's folder, absent from the manifests' CI) is
// not checked: a warning says so and the folder still validates.
func TestValidateRequiredVariablesModuleMissing(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	writeTestFile(t, filepath.Join(repo, "types", "bucket.yaml"), bucketType)
	cfgPath := filepath.Join(t.TempDir(), "trueup.yaml")
	writeTestFile(t, cfgPath, `dataDir: /tmp/trueup-test
actions:
  - name: tf
    type: terraform
    config: {module: modules/absent}
`)
	stdout, stderr, err := runCLI(t, "validate", repo, "--config", cfgPath)
	if err != nil || !strings.Contains(stdout, "valid: 1 resource type, 0 resources") ||
		!strings.Contains(stderr, "warning: action tf: module ") || !strings.Contains(stderr, "its types' schemas are not checked against it") {
		t.Errorf("err %v, stdout %q, stderr:\n%s", err, stdout, stderr)
	}
}

// A variable is satisfied by the schema's guarantee (required, or a default the loader fills,
// through $ref and allOf), by the instance's TF_VAR_ env, by a tfvars file Terraform loads
// itself, or by an override file's default. An optional field is a warning; a field the schema
// lacks is an error, or a warning for a version no resource uses.
func TestValidateRequiredVariablesCases(t *testing.T) {
	t.Parallel()
	const sizeOwner = `variable "size" {}` + "\n" + `variable "owner" {}` + "\n"
	schemaWith := func(schema string) string {
		return `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Bucket}
spec:
  group: storage.example.com
  versions:
    - name: v1
      schema: ` + schema + `
  action: {name: tf}
`
	}
	const undeclared = "which the type's schema does not have: add `owner` to the type's schema"
	const optional = "resources that leave `owner` out fail at run time: make it required or give it a default"
	for _, tc := range []struct {
		name     string
		files    map[string]string // module files
		env      string
		typeYAML string
		extra    string // more manifests
		fail     bool
		want     []string // substrings of stderr
	}{
		{name: "required in the schema", files: map[string]string{"main.tf": sizeOwner},
			typeYAML: schemaWith(`{type: object, required: [size, owner], properties: {size: {}, owner: {}}}`)},
		{name: "default in the schema", files: map[string]string{"main.tf": sizeOwner},
			typeYAML: schemaWith(`{type: object, required: [size], properties: {size: {}, owner: {type: string, default: ops}}}`)},
		{name: "required through $ref", files: map[string]string{"main.tf": sizeOwner},
			typeYAML: schemaWith(`{$ref: "#/$defs/b", $defs: {b: {type: object, required: [size, owner], properties: {size: {}, owner: {}}}}}`)},
		{name: "required through allOf", files: map[string]string{"main.tf": sizeOwner},
			typeYAML: schemaWith(`{type: object, allOf: [{required: [size, owner]}]}`)},
		{name: "TF_VAR in the env", files: map[string]string{"main.tf": sizeOwner}, env: "{TF_VAR_owner: team-a}",
			typeYAML: schemaWith(`{type: object, required: [size], properties: {size: {}}}`)},
		{name: "terraform.tfvars", files: map[string]string{"main.tf": sizeOwner, "terraform.tfvars": `owner = "team-a"`},
			typeYAML: schemaWith(`{type: object, required: [size], properties: {size: {}}}`)},
		{name: "auto.tfvars.json", files: map[string]string{"main.tf": sizeOwner, "team.auto.tfvars.json": `{"owner": "team-a"}`},
			typeYAML: schemaWith(`{type: object, required: [size], properties: {size: {}}}`)},
		{name: "override default", files: map[string]string{"main.tf": sizeOwner, "override.tf": `variable "owner" { default = "ops" }`},
			typeYAML: schemaWith(`{type: object, required: [size], properties: {size: {}}}`)},
		{name: "optional in the schema", files: map[string]string{"main.tf": sizeOwner},
			typeYAML: schemaWith(`{type: object, required: [size], properties: {size: {}, owner: {type: string}}}`),
			want:     []string{"warning: types/bucket.yaml:", optional}},
		{name: "pattern in the schema", files: map[string]string{"main.tf": sizeOwner},
			typeYAML: schemaWith(`{type: object, required: [size], properties: {size: {}}, patternProperties: {"^o": {}}}`),
			want:     []string{"warning: types/bucket.yaml:", optional}},
		{name: "anyOf", files: map[string]string{"main.tf": sizeOwner},
			typeYAML: schemaWith(`{type: object, required: [size], anyOf: [{required: [owner]}, {required: [team]}]}`),
			want:     []string{"warning: types/bucket.yaml:", "the schema's anyOf, oneOf, not, if or $ref decide"}},
		{name: "missing", files: map[string]string{"main.tf": sizeOwner},
			typeYAML: schemaWith(`{type: object, required: [size], properties: {size: {}}}`),
			fail:     true, want: []string{undeclared, ": 1 error"}},
		{name: "refused by additionalProperties", files: map[string]string{"main.tf": sizeOwner},
			typeYAML: schemaWith(`{type: object, required: [size], properties: {size: {}}, additionalProperties: false}`),
			fail:     true, want: []string{undeclared, ": 1 error"}},
		{name: "override without default is reported once", files: map[string]string{"main.tf": sizeOwner, "override.tf": `variable "owner" { type = string }`},
			typeYAML: schemaWith(`{type: object, required: [size], properties: {size: {}}}`),
			fail:     true, want: []string{undeclared, ": 1 error"}},
		{name: "version no resource uses", files: map[string]string{"main.tf": sizeOwner},
			typeYAML: `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Bucket}
spec:
  group: storage.example.com
  versions:
    - name: v1
      schema: {type: object, required: [size], properties: {size: {}}}
    - name: v2
      schema: {type: object, required: [size, owner], properties: {size: {}, owner: {}}}
  action: {name: tf}
`,
			extra: `apiVersion: storage.example.com/v2
kind: Bucket
metadata: {name: logs}
spec: {size: 1, owner: ops}
`,
			want: []string{"warning: types/bucket.yaml:", undeclared, "(no resource here uses version v1)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := t.TempDir()
			for name, text := range tc.files {
				writeTestFile(t, filepath.Join(repo, "modules", "bucket", name), text)
			}
			writeTestFile(t, filepath.Join(repo, "manifests", "types", "bucket.yaml"), tc.typeYAML)
			if tc.extra != "" {
				writeTestFile(t, filepath.Join(repo, "manifests", "buckets.yaml"), tc.extra)
			}
			env := ""
			if tc.env != "" {
				env = ", env: " + tc.env
			}
			cfgPath := filepath.Join(t.TempDir(), "trueup.yaml")
			writeTestFile(t, cfgPath, `dataDir: /tmp/trueup-test
actions:
  - name: tf
    type: terraform
    config: {module: `+filepath.Join(repo, "modules", "bucket")+env+`}
`)
			stdout, stderr, err := runCLI(t, "validate", filepath.Join(repo, "manifests"), "--config", cfgPath)
			if (err != nil) != tc.fail || (!tc.fail && !strings.Contains(stdout, ": valid: ")) {
				t.Errorf("err %v (want failure: %v), stdout %q, stderr:\n%s", err, tc.fail, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if len(tc.want) == 0 && stderr != "" {
				t.Errorf("stderr:\n%s", stderr)
			}
			if !tc.fail && strings.Contains(stderr, "error") {
				t.Errorf("an error on a valid config:\n%s", stderr)
			}
		})
	}
}
