package store

import (
	"fmt"

	"github.com/trueup-dev/trueup/internal/labelsel"
)

// LabelRequirement is one term of a Kubernetes-style label selector.
type LabelRequirement = labelsel.Requirement

// ParseLabelSelector parses "a=b,c!=d,e,!f,g in (x,y),h notin (z)".
func ParseLabelSelector(sel string) ([]LabelRequirement, error) { return labelsel.Parse(sel) }

func requirementSQL(r LabelRequirement, arg func(any) string) string {
	switch r.Op {
	case "=":
		// Containment, which the GIN index resources_labels serves (migration 0029).
		return fmt.Sprintf("labels @> jsonb_build_object(%s::text, %s::text)", arg(r.Key), arg(r.Values[0]))
	case "!=":
		return fmt.Sprintf("(labels->>%s IS DISTINCT FROM %s)", arg(r.Key), arg(r.Values[0]))
	case "exists":
		return fmt.Sprintf("labels ? %s", arg(r.Key))
	case "!exists":
		return fmt.Sprintf("NOT (labels ? %s)", arg(r.Key))
	case "in":
		return fmt.Sprintf("labels->>%s = ANY(%s::text[])", arg(r.Key), arg(r.Values))
	default: // notin
		return fmt.Sprintf("NOT (COALESCE(labels->>%s, '') = ANY(%s::text[]) AND labels ? %s)", arg(r.Key), arg(r.Values), arg(r.Key))
	}
}
