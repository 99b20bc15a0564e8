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
