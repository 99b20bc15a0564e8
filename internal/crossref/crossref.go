// Package crossref owns the decision whether a resource may reference a resource of another
// namespace (an output reference or a dependsOn entry): the controller config's
// references.expose grants (config.References). The syncer asks it at ingest (through
// manifest.Options.CheckReference), the reconciler before resolving, with the same message.
package crossref

import (
	"fmt"
	"slices"
	"strings"

	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/graph"
)

// Check decides whether a resource in namespace from may depend on target and read its
// outputs (dotted paths; none for a plain dependsOn entry). A reference within from is
// always allowed. Otherwise every output read needs a grant matching target's namespace
// and kind, the output and from; a plain dependsOn needs one matching the namespace, kind
// and from (a grant with outputs: [] allows only that: ordering, no value). The error names the missing grant; it says nothing of whether target exists.
func Check(grants []config.ReferenceExpose, from string, target graph.ID, outputs []string) error {
	if target.Namespace == from {
		return nil
	}
	if len(outputs) == 0 {
		if slices.ContainsFunc(grants, func(g config.ReferenceExpose) bool { return covers(g, from, target, "") }) {
			return nil
		}
		return refused(from, target, nil)
	}
	var missing []string
	for _, o := range outputs {
		if !slices.ContainsFunc(grants, func(g config.ReferenceExpose) bool { return covers(g, from, target, o) }) {
			missing = append(missing, o)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return refused(from, target, missing)
}

// refused spells the missing grant as the entry that would allow the reference.
func refused(from string, target graph.ID, outputs []string) error {
	what, outs := "dependsOn "+target.String(), ""
	if len(outputs) > 0 {
		what = "reference to " + target.String() + " outputs " + strings.Join(outputs, ", ")
		outs = strings.Join(outputs, ", ")
	}
	return fmt.Errorf("%s crosses from namespace %s to %s without a grant: the controller config's references.expose needs {namespace: %s, kinds: [%s], outputs: [%s], to: [{namespace: %s}]}",
		what, from, target.Namespace, target.Namespace, target.Kind, outs, from)
}

// covers reports whether grant g lets namespace from read output (dotted; "" for none) of
// target.
func covers(g config.ReferenceExpose, from string, target graph.ID, output string) bool {
	if !match(g.Namespace, target.Namespace) {
		return false
	}
	if !slices.ContainsFunc(g.Kinds, func(k string) bool { return match(strings.ToLower(k), strings.ToLower(target.Kind)) }) {
		return false
	}
	if !slices.ContainsFunc(g.To, func(to config.ReferenceTo) bool { return match(to.Namespace, from) }) {
		return false
	}
	if output == "" {
		return true
	}
	return slices.ContainsFunc(g.Outputs, func(p string) bool { return matchOutput(p, output) })
}

// matchOutput reports whether pattern p allows output path o (both dotted), segment by
// segment: p's segments match o's leading segments, each whole or as a path.Match glob
// within the segment, so a grant of db allows db.host, db* allows dbx.host but never
// db.password through the dot, and * allows every output.
func matchOutput(p, o string) bool {
	ps, segs := strings.Split(p, "."), strings.Split(o, ".")
	if len(ps) > len(segs) {
		return false
	}
	for i, seg := range ps {
		if !match(seg, segs[i]) {
			return false
		}
	}
	return true
}

// match is config.Match: equal, or a path.Match glob.
func match(p, v string) bool { return config.Match(p, v) }
