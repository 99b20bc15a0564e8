package terraform

import (
	"strings"
)

// summary is the one line of a plan's output that counts its changes, as Terraform and
// OpenTofu print it ("1 to add, 0 to change, 0 to destroy"), without "Plan: " and the final
// period.
func summary(out string, changes bool) string {
	lines := strings.Split(out, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if rest, ok := strings.CutPrefix(l, "Plan: "); ok {
			return strings.TrimSuffix(rest, ".")
		}
	}
	switch {
	case !changes:
		return "no changes"
	case strings.Contains(out, "Changes to Outputs:"):
		return "only outputs change"
	default:
		return "changes"
	}
}
