package main

import (
	"strings"
	"testing"
)

// TestValidateKustomizeResourceSetInputs: trueup validate --kustomize over a base holding a
// ResourceSet reads the set's inputsFrom folder from the checkout, which kustomize does
// not render, resolved from the set's file.
func TestValidateKustomizeResourceSetInputs(t *testing.T) {
	files := kustomizeFleet()
	files["deploy/sets/kustomization.yaml"] = "resources: [../tenants]\n"
	files["deploy/tenants/kustomization.yaml"] = "resources: [set.yaml]\n"
	files["deploy/tenants/set.yaml"] = `apiVersion: trueup.dev/v1
kind: ResourceSet
metadata: {name: tenants, namespace: shop}
spec:
  inputsFrom: [{path: tenants/}]
  resources:
    - apiVersion: example.com/v1
      kind: Database
      metadata: {name: "<< inputs.tenant >>-orders"}
      spec: {tier: small, size: "<< inputs.size >>"}
`
	files["deploy/tenants/tenants/a.yaml"] = "- {tenant: acme, size: 10}\n- {tenant: globex, size: 20}\n"
	dir := writeDir(t, files)
	out, stderr, err := runCLI(t, "validate", dir+"/deploy", "--kustomize", "types", "--kustomize", "overlays/*", "--kustomize", "sets")
	if err != nil || !strings.Contains(out, "valid: 1 resource type, 6 resources") {
		t.Fatalf("validate: %v\n%s%s", err, out, stderr)
	}
}

// TestValidateSourceWithoutConfig: --source picks a source of the config, so without
// --config it is refused rather than ignored.
func TestValidateSourceWithoutConfig(t *testing.T) {
	dir := writeDir(t, map[string]string{"db.yaml": "apiVersion: trueup.dev/v1\nkind: ResourceType\nmetadata: {name: Database}\n"})
	_, _, err := runCLI(t, "validate", dir, "--source", "shop")
	if err == nil || !strings.Contains(err.Error(), "--source shop names a source of the controller config: give the config with --config") {
		t.Fatalf("validate --source without --config: %v", err)
	}
}
