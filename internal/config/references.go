package config

import (
	"errors"
	"fmt"
	"path"
)

// References grants references that cross namespaces: a resource's output reference
// (`${{ Kind/namespace/name.outputs.x }}`) or dependsOn entry naming a resource of another
// namespace. Without a grant such a reference is refused at ingest (the revision is
// rejected) and, when a grant is removed later, the dependent stalls at reconcile. The
// block is read on every ingest and every reconcile, so a reload applies it at once.
type References struct {
	// Expose lists the grants; a reference is allowed when an entry matches its target's
	// namespace and kind, each output it reads, and the referring namespace.
	Expose []ReferenceExpose `yaml:"expose"`
}

// ReferenceExpose lets resources in the namespaces of to read the outputs of resources of
// kinds in namespace (and name them in dependsOn). Every field is required and holds exact
// values or globs (path.Match); "*" must be written to allow every kind or output, and
// `outputs: []` allows dependsOn only (ordering, no value). A namespace or kind pattern is
// matched against the whole name. An output entry is matched segment by segment (split on
// "."): it allows a referenced output path (db.host) whose leading segments it matches, a glob
// staying within its segment (db* allows dbx.host, not db.password; db allows db.host);
// kinds compare case-insensitively.
type ReferenceExpose struct {
	Namespace string        `yaml:"namespace"` // the namespace of the resources referred to
	Kinds     []string      `yaml:"kinds"`     // their kinds
	Outputs   []string      `yaml:"outputs"`   // the outputs that may be read ([]: dependsOn only)
	To        []ReferenceTo `yaml:"to"`        // the namespaces that may refer to them
}

// ReferenceTo names the namespace (or glob) a grant is given to.
type ReferenceTo struct {
	Namespace string `yaml:"namespace"` // a namespace name or glob
}

// validateReferences checks the references block.
func (c *Config) validateReferences() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	pattern := func(at, p string) {
		if p == "" {
			bad("%s: required", at)
		} else if _, err := path.Match(p, ""); err != nil {
			bad("%s: %q is not a valid pattern", at, p)
		}
	}
	for i, e := range c.References.Expose {
		at := fmt.Sprintf("references.expose[%d]", i)
		pattern(at+".namespace", e.Namespace)
		for _, l := range []struct {
			key  string
			pats []string
		}{{"kinds", e.Kinds}, {"outputs", e.Outputs}} {
			switch {
			case l.key == "outputs" && l.pats == nil:
				bad("%s.outputs: required (write \"*\" to allow every one, or [] to allow dependsOn only)", at)
			case l.key == "kinds" && len(l.pats) == 0:
				bad("%s.kinds: required (write \"*\" to allow every one)", at)
			}
			for j, p := range l.pats {
				pattern(fmt.Sprintf("%s.%s[%d]", at, l.key, j), p)
			}
		}
		if len(e.To) == 0 {
			bad("%s.to: required (the namespaces granted, e.g. [{namespace: staging}])", at)
		}
		for j, to := range e.To {
			pattern(fmt.Sprintf("%s.to[%d].namespace", at, j), to.Namespace)
		}
	}
	return errors.Join(errs...)
}

// Match reports whether v equals pattern p or matches it as a path.Match glob (the patterns of
// references.expose and secrets.expose).
func Match(p, v string) bool {
	if p == v {
		return true
	}
	ok, err := path.Match(p, v)
	return err == nil && ok
}
