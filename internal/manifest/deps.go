package manifest

import "github.com/trueup-dev/trueup/internal/graph"

// Dependency is one resource a Resource depends on: listed under dependsOn (Explicit), or
// implied by output references in its spec (Outputs), or both. Target's namespace is always
// filled in (the resource's own when the manifest leaves it out).
type Dependency struct {
	Target   graph.ID
	Explicit bool
	// Outputs are the referenced output paths, dotted ("subnetId", "db.host"), sorted and
	// without repeats; empty for a plain dependsOn entry.
	Outputs []string
}
