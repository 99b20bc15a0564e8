package server

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/trueup-dev/trueup/internal/store"
)

// masked stands in for a value the caller may not read.
const masked = "***"

// resolvedFor is the resolved spec of the resource with neighbours n, as a
// caller who sees sc may read it (maskForeign). A spec stored without origins (NULL: written
// before origins were recorded; a resolution without foreign values records none as {}) is
// left out whole for a caller who may not read every namespace: which of its paths came from
// where is not known, and the references it was resolved from may have changed since (a
// spec change keeps the stored resolved spec until the next call).
func resolvedFor(n store.Neighbours, sc store.Scope) json.RawMessage {
	if n.ResolvedOrigins == nil && len(n.ResolvedSpec) > 0 && !sc.All() {
		return nil
	}
	return maskForeign(n.ResolvedSpec, n.ResolvedOrigins, sc)
}

// maskForeign returns a resolved spec with every value that came from a namespace the caller
// may not read (origins: path → namespaces, as the reconciler recorded them) replaced by
// "***". A value is copied from its dependency's namespace into the dependent's, whose readers
// may not read the dependency (STYLE 24): the copy is shown as its origin allows. Paths are
// spelled like the reconciler's (spec.a.b[0]); a spec that does not decode is left out whole
// when it has foreign values.
func maskForeign(spec json.RawMessage, origins map[string][]string, sc store.Scope) json.RawMessage {
	if len(spec) == 0 || len(origins) == 0 || sc.All() {
		return spec
	}
	hidden := map[string]bool{}
	for p, nss := range origins {
		for _, ns := range nss {
			if !sc.Contains(ns) {
				hidden[p] = true
			}
		}
	}
	if len(hidden) == 0 {
		return spec
	}
	dec := json.NewDecoder(bytes.NewReader(spec))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	v = maskPaths(v, "spec", hidden)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}

// maskPaths replaces the values at hidden paths of v (below path p) with "***".
func maskPaths(v any, p string, hidden map[string]bool) any {
	if hidden[p] {
		return masked
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = maskPaths(e, p+"."+k, hidden)
		}
	case []any:
		for i, e := range x {
			x[i] = maskPaths(e, p+"["+strconv.Itoa(i)+"]", hidden)
		}
	}
	return v
}
