package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
)

// fleetSchemas is the fleet source: a ResourceSet of 2 tenants × 2 regions and a Schema
// written by hand.
const fleetSchemas = `apiVersion: trueup.dev/v1
kind: ResourceSet
metadata: {name: tenant-schemas, namespace: production}
spec:
  inputs: [{tenant: acme}, {tenant: globex}]
  matrix: {region: [eu-west-1, us-east-1]}
  resources:
    - apiVersion: db.example.com/v1
      kind: Schema
      metadata: {name: "<< inputs.tenant >>-<< inputs.region >>"}
      spec: {owner: "<< inputs.tenant >>"}
---
apiVersion: db.example.com/v1
kind: Schema
metadata: {name: shared, namespace: production}
spec: {owner: platform}
`

// setupSets is the fixture of setup with the source fleet applied at t0 + 3 days; of the
// set's 4 members, the acme ones are Ready.
func setupSets(t *testing.T) *api {
	t.Helper()
	a := setup(t)
	ctx := context.Background()
	if err := a.store.RegisterSource(ctx, store.SourceConfig{Name: "fleet", URL: "https://github.com/acme/fleet.git", Branch: "main"}); err != nil {
		t.Fatal(err)
	}
	set, err := manifest.NewLoader().Load([]sources.File{
		{Path: "types.yaml", Data: []byte(manifesttest.TypeDoc("Schema", "db.example.com", "{type: object}", "noop"))},
		{Path: "sets/schemas.yaml", Data: []byte(fleetSchemas)},
	}, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.store.ApplyRevision(ctx, store.ApplyParams{Source: "fleet", Revision: strings.Repeat("e", 40), Set: set, Prune: true}); err != nil {
		t.Fatal(err)
	}
	at := t0.Add(72 * time.Hour)
	for _, sql := range []string{
		`UPDATE resources SET created_at = $1, updated_at = $1, uid = md5(namespace || '/' || kind || '/' || name)::uuid,
			conditions = (SELECT jsonb_agg(c || jsonb_build_object('lastTransitionTime', $1::timestamptz)) FROM jsonb_array_elements(conditions) c)
			WHERE source = 'fleet'`,
		`UPDATE events SET created_at = $1 WHERE source = 'fleet'`,
		`UPDATE resource_sets SET created_at = $1, updated_at = $1`,
		`UPDATE resource_types SET created_at = $1, updated_at = $1 WHERE source = 'fleet'`,
	} {
		if _, err := a.store.Pool().Exec(ctx, sql, at); err != nil {
			t.Fatal(err)
		}
	}
	phase, conds, observed := status.Apply(status.Initial(at), 0, status.Outcome{Done: true, Generation: 1, CurrentGeneration: 1}, at.Add(time.Minute))
	cj, err := json.Marshal(conds)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.store.Pool().Exec(ctx, `WITH r AS (UPDATE resources SET phase = $1, observed_generation = $2, conditions = $3
		WHERE source = 'fleet' AND name LIKE 'acme-%' RETURNING id) UPDATE resource_queue q SET run_at = NULL, last_reconcile_time = $4 FROM r WHERE q.id = r.id`, phase, observed, cj, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestGetResourceSets: the sets' table and documents, a set's members by --set, the SET
// column of -o wide and the ResourceSet line of describe.
func TestGetResourceSets(t *testing.T) {
	t.Parallel()
	a := setupSets(t)
	runGolden(t, a, []goldenCase{
		{"get_resourcesets_table.txt", []string{"get", "resourcesets"}},
		{"get_resourcesets_json.txt", []string{"get", "rs", "-o", "json", "-n", "production"}},
		{"get_resourcesets_yaml.txt", []string{"get", "resourceset", "-o", "yaml", "--source", "fleet"}},
		{"get_resources_set.txt", []string{"get", "resources", "--set", "tenant-schemas"}},
		{"get_resources_set_wide.txt", []string{"get", "res", "--source", "fleet", "-o", "wide"}},
		{"describe_generated.txt", []string{"describe", "Schema/globex-us-east-1", "-n", "production"}},
	})
	out, stderr, err := a.run(t, "get", "resources", "--set", "tenant-schemas", "-l", "!trueup.dev/resource-set")
	if err != nil || out != "" || stderr != "No resources found.\n" {
		t.Errorf("--set with a selector excluding it: err %v stdout %q stderr %q", err, out, stderr)
	}
	out, stderr, err = a.run(t, "get", "rs", "-n", "staging")
	if err != nil || out != "" || stderr != "No resource sets found in namespace staging.\n" {
		t.Errorf("no sets: err %v stdout %q stderr %q", err, out, stderr)
	}
	if _, _, err := a.run(t, "get", "rs", "--kind", "Schema"); err == nil || !strings.Contains(err.Error(), "--kind does not apply to resourcesets") {
		t.Errorf("get rs --kind: %v", err)
	}
}

// TestValidateAndDiffResourceSet: validate counts generated resources and rejects a bad input
// at the template's line naming it; diff shows the resources an added input generates.
func TestValidateAndDiffResourceSet(t *testing.T) {
	t.Parallel()
	tenants := "- {tenant: acme, size: 1}\n- {tenant: globex, size: 2}\n"
	dir := writeDir(t, map[string]string{"types.yaml": fleetTypes, "sets/tenant-dbs.yaml": fleetSet, "sets/tenants.yaml": tenants})
	if out, stderr, err := runCLI(t, "validate", dir); err != nil || out != dir+": valid: 2 resource types, 6 resources\n" {
		t.Errorf("validate: %v\nstdout %q\nstderr %s", err, out, stderr)
	}
	dir = writeDir(t, map[string]string{"types.yaml": fleetTypes, "sets/tenant-dbs.yaml": fleetSet, "sets/tenants.yaml": tenants + "- {tenant: bad, size: huge}\n"})
	_, stderr, err := runCLI(t, "validate", dir)
	var code exitCode
	if !errors.As(err, &code) || code != 1 {
		t.Fatalf("validate of a bad input: exit %v, want 1\n%s", err, stderr)
	}
	for _, region := range []string{"eu-west-1", "us-east-1"} {
		if want := fmt.Sprintf("sets/tenant-dbs.yaml:%d (tenant=bad, region=%s): spec.size: expected integer, but got string", fleetSizeLine, region); !strings.Contains(stderr, want) {
			t.Errorf("validate of a bad input lacks %q:\n%s", want, stderr)
		}
	}

	a := setupSets(t)
	added := strings.Replace(fleetSchemas, "{tenant: globex}]", "{tenant: globex}, {tenant: initech}]", 1)
	dir = writeDir(t, map[string]string{"types.yaml": manifesttest.TypeDoc("Schema", "db.example.com", "{type: object}", "noop"), "sets/schemas.yaml": added})
	out, stderr, err := a.run(t, "diff", dir, "--source", "fleet")
	if !errors.As(err, &code) || code != 1 || stderr != "" {
		t.Fatalf("diff: exit %v, want 1\n%s%s", err, out, stderr)
	}
	golden(t, "diff_resourceset.txt", out)
}
