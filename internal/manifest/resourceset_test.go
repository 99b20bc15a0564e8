package manifest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// setTypes declares Database and Network for the ResourceSet tests.
const setTypes = `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Database}
spec:
  group: example.com
  versions:
    - name: v1
      schema:
        type: object
        additionalProperties: false
        required: [size, region]
        properties:
          size: {type: integer, minimum: 1}
          region: {type: string}
          tenant: {type: string}
          network: {type: string}
          tier: {type: string, default: standard}
  action: {name: provision}
---
apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Network}
spec:
  group: example.com
  versions: [{name: v1, schema: {type: object}}]
  action: {name: provision}
`

// networks declares the Networks the sets' resources depend on.
const networks = `apiVersion: example.com/v1
kind: Network
metadata: {name: net-eu-west-1, namespace: production}
---
apiVersion: example.com/v1
kind: Network
metadata: {name: net-us-east-1, namespace: production}
`

// tenantSet is the example: line 14 is the template's size.
const tenantSet = `apiVersion: trueup.dev/v1
kind: ResourceSet
metadata: {name: tenant-dbs, namespace: production}
spec:
  inputs: [{tenant: acme, size: 100}, {tenant: globex, size: 50}, {tenant: initech, size: 10}]
  matrix: {region: [eu-west-1, us-east-1]}
  resources:
    - apiVersion: example.com/v1
      kind: Database
      metadata: {name: "db-<< inputs.tenant >>-<< inputs.region >>", labels: {team: "<< inputs.tenant >>"}}
      dependsOn: [{kind: Network, name: "net-<< inputs.region >>"}]
      spec:
        region: "<< inputs.region >>"
        size: "<< inputs.size >>"
        network: "${{ Network/net-<< inputs.region >>.outputs.id }}"
`

func loadSet(t *testing.T, pairs ...string) (*Set, error) {
	t.Helper()
	return NewLoader().Load(files(append([]string{"types.yaml", setTypes, "networks.yaml", networks}, pairs...)...), Options{})
}

func TestResourceSetExpands(t *testing.T) {
	t.Parallel()
	set, err := loadSet(t, "sets/tenants.yaml", tenantSet)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range set.Resources {
		if r.Kind != "Database" {
			continue
		}
		var deps []string
		for _, d := range r.DependsOn {
			deps = append(deps, fmt.Sprintf("%s explicit=%v outputs=%v", d.Target, d.Explicit, d.Outputs))
		}
		got = append(got, fmt.Sprintf("%s/%s %s %s:%d labels=%v deps=%v", r.Namespace, r.Name, r.Spec, r.File, r.Line, r.Labels, deps))
	}
	want := []string{}
	for _, tn := range []struct {
		name string
		size int
	}{{"acme", 100}, {"globex", 50}, {"initech", 10}} {
		for _, region := range []string{"eu-west-1", "us-east-1"} {
			want = append(want, fmt.Sprintf(`production/db-%s-%s {"network":"${{ Network/net-%s.outputs.id }}","region":"%s","size":%d,"tier":"standard"} sets/tenants.yaml:8 labels=map[team:%s trueup.dev/resource-set:tenant-dbs] deps=[Network/production/net-%s explicit=true outputs=[id]]`,
				tn.name, region, region, region, tn.size, tn.name, region))
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("generated:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantSets := []ResourceSetInfo{{Namespace: "production", Name: "tenant-dbs", File: "sets/tenants.yaml", Line: 1, Inputs: 6, Members: 6}}
	if !slices.Equal(set.ResourceSets, wantSets) {
		t.Errorf("ResourceSets = %+v, want %+v", set.ResourceSets, wantSets)
	}
}

func TestResourceSetBadInput(t *testing.T) {
	t.Parallel()
	bad := strings.Replace(tenantSet, "{tenant: globex, size: 50}", "{tenant: globex, size: huge}", 1)
	_, err := loadSet(t, "sets/tenants.yaml", bad)
	got := problems(t, err)
	want := []string{
		"sets/tenants.yaml:14 (tenant=globex, region=eu-west-1): spec.size: expected integer, but got string",
		"sets/tenants.yaml:14 (tenant=globex, region=us-east-1): spec.size: expected integer, but got string",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
