// Package manifesttest builds manifest documents for the tests of the packages that load
// them, so that a fixture names what differs instead of repeating the document.
package manifesttest

import (
	"fmt"
	"strings"
)

// TypeDoc is a ResourceType document: kind name in group with one version, v1, whose schema
// is a YAML flow mapping, handled by the action named action.
func TypeDoc(name, group, schema, action string) string {
	return fmt.Sprintf(`apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: %s}
spec:
  group: %s
  versions:
    - name: v1
      schema: %s
  action: {name: %s}
`, name, group, schema, action)
}

// Fleet is a repository of one ResourceSet generating a Database per tenant and region
// (tenants × regions resources, each depending on its region's Network by dependsOn and
// by an output reference), with the types, the Networks (one file each) and the tenants
// in an inputs file: the benchmarks' fleet. It returns path, content pairs.
func Fleet(tenants, regions int) []string {
	pairs := []string{"types.yaml", TypeDoc("Database", "example.com",
		"{type: object, additionalProperties: false, required: [tenant, size, region], properties: {tenant: {type: string}, size: {type: integer, minimum: 1}, region: {type: string}, network: {type: string}, tier: {type: string, default: standard}}}",
		"provision") + "---\n" + TypeDoc("Network", "example.com", "{type: object}", "provision")}
	var b strings.Builder
	for r := range regions {
		pairs = append(pairs, fmt.Sprintf("networks/region-%03d.yaml", r),
			fmt.Sprintf("apiVersion: example.com/v1\nkind: Network\nmetadata: {name: net-region-%03d, namespace: fleet}\nspec: {cidr: 10.%d.0.0/16}\n", r, r%256))
	}
	b.Reset()
	for t := range tenants {
		fmt.Fprintf(&b, "- {tenant: tenant-%05d, size: %d}\n", t, 1+t%500)
	}
	pairs = append(pairs, "fleet/tenants.yaml", b.String())
	b.Reset()
	b.WriteString(`apiVersion: trueup.dev/v1
kind: ResourceSet
metadata: {name: tenant-dbs, namespace: fleet}
spec:
  inputsFrom: [{path: tenants.yaml}]
  matrix:
    region:
`)
	for r := range regions {
		fmt.Fprintf(&b, "      - region-%03d\n", r)
	}
	b.WriteString(`  resources:
    - apiVersion: example.com/v1
      kind: Database
      metadata: {name: "db-<< inputs.tenant >>-<< inputs.region >>"}
      dependsOn: [{kind: Network, name: "net-<< inputs.region >>"}]
      spec:
        tenant: << inputs.tenant >>
        size: << inputs.size >>
        region: << inputs.region >>
        network: "${{ Network/net-<< inputs.region >>.outputs.id }}"
`)
	return append(pairs, "fleet/set.yaml", b.String())
}
