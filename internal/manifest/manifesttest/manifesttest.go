// Package manifesttest builds manifest documents for the tests of the packages that load
// them, so that a fixture names what differs instead of repeating the document.
package manifesttest

import "fmt"

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
