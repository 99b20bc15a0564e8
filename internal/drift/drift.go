// Package drift owns what a resync's drift is made of: the paths (JSON pointers, jsonptr)
// where a spec as found differs from the spec the call sent (leaf values), the ignore
// pointers of a ResourceType's drift policy, and the message that lists what drifted. It decides only, as pure functions; the reconciler acts.
package drift

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/jsonptr"
)

// Filter splits paths into those no ignore pointer covers (kept) and those one does.
func Filter(paths []actions.DriftPath, ignore []string) (kept, ignored []actions.DriftPath) {
	for _, p := range paths {
		if slices.ContainsFunc(ignore, func(i string) bool { return jsonptr.Covers(i, p.Path) }) {
			ignored = append(ignored, p)
		} else {
			kept = append(kept, p)
		}
	}
	return kept, ignored
}

// maxPaths bounds how many paths Compare returns: a spec found entirely different is
// reported by its first paths, which say enough.
const maxPaths = 100

// Compare returns the leaf values where observed (the spec as an action found it) differs
// from spec (the spec the call sent), in key order. Only what the spec sets is compared: a
// field found but not in the spec (a default the action fills in) is no drift; a field of
// the spec not found is (found: null). Lists of the same length are compared item by item,
// lists whose length differs are one drifted value. Numbers compare by value (1 and 1.0
// agree). Both must be JSON objects. At most maxPaths paths are returned.
func Compare(spec, observed json.RawMessage) ([]actions.DriftPath, error) {
	want, err := decode(spec)
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	got, err := decode(observed)
	if err != nil {
		return nil, fmt.Errorf("observed: %w", err)
	}
	if _, ok := want.(map[string]any); !ok {
		return nil, fmt.Errorf("spec: not a JSON object")
	}
	if _, ok := got.(map[string]any); !ok {
		return nil, fmt.Errorf("observed: not a JSON object")
	}
	var out []actions.DriftPath
	compare("", want, got, true, &out)
	return out, nil
}

func decode(b json.RawMessage) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	return v, nil
}

func compare(at string, want, got any, found bool, out *[]actions.DriftPath) {
	if len(*out) >= maxPaths {
		return
	}
	switch w := want.(type) {
	case map[string]any:
		if g, ok := got.(map[string]any); ok {
			keys := make([]string, 0, len(w))
			for k := range w {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				gv, ok := g[k]
				compare(at+"/"+jsonptr.Escape(k), w[k], gv, ok, out)
			}
			return
		}
	case []any:
		if g, ok := got.([]any); ok && len(g) == len(w) {
			for i := range w {
				compare(at+"/"+strconv.Itoa(i), w[i], g[i], true, out)
			}
			return
		}
	}
	if found && same(want, got) {
		return
	}
	*out = append(*out, actions.DriftPath{Path: at, Expected: want, Actual: got})
}

// same compares two decoded leaves (or a leaf and a container).
func same(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		fx, ex := strconv.ParseFloat(string(x), 64)
		fy, ey := strconv.ParseFloat(string(y), 64)
		return ex == nil && ey == nil && fx == fy
	case map[string]any, []any:
		ab, _ := json.Marshal(a)
		bb, _ := json.Marshal(b)
		return bytes.Equal(ab, bb)
	}
	return a == b
}

// Bounds of a drift message: each value quoted, then the list, are cut to these many bytes.
const (
	maxValue   = 200
	maxMessage = 4 << 10
)

// Describe lists what drifted, one "PATH: expected E, found F" per path joined by "; "
// (values as JSON, each cut to maxValue bytes; PATH alone when the action said neither), the
// whole cut to maxMessage bytes. scrub (nil: none) removes secrets: it runs on each value
// before that value is cut and on the list before the list is cut, since it matches only whole
// secrets and a cut one would be left as its beginning. A path whose expected value holds a
// secret (scrub changes it) is "PATH: differs (secret value)", without either value: what
// was found there is likely a live credential too. No paths: "" (the caller says what the
// action said).
func Describe(paths []actions.DriftPath, scrub func(string) string) string {
	if scrub == nil {
		scrub = func(s string) string { return s }
	}
	var b strings.Builder
	for i, p := range paths {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.Path)
		if p.Expected != nil || p.Actual != nil {
			if e := jsonOf(p.Expected); scrub(e) != e {
				b.WriteString(": differs (secret value)")
			} else {
				fmt.Fprintf(&b, ": expected %s, found %s", clip.Storable(e, maxValue), value(p.Actual, scrub))
			}
		}
		if b.Len() > maxMessage {
			break
		}
	}
	return clip.Storable(scrub(b.String()), maxMessage)
}

// value is v as JSON, scrubbed, then cut to maxValue bytes.
func value(v any, scrub func(string) string) string {
	return clip.Storable(scrub(jsonOf(v)), maxValue)
}

// jsonOf is v as JSON (as %v when it does not encode).
func jsonOf(v any) string {
	j, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(j)
}

// Outcome is what a resync's drift comes to under a type's ignore pointers.
type Outcome struct {
	// Ignored: every path the drift has is ignored; the resource is in sync.
	Ignored bool
	// Message lists what drifted: the paths not ignored (Describe), else the action's own
	// message when it gave no paths, else "drift detected". When Ignored, the ignored paths
	// (without values), joined by ", ".
	Message string
}

// Judge decides a drift: o is what Observe returned (not InSync), spec the spec the call
// sent. Paths come from o.Drift, else from comparing o.Observed with spec; drift without
// paths (neither given, or Observed found no difference to show) is never ignored. scrub
// (nil: none) removes the call's secrets from the message before it is cut (Describe); the
// action's own message, returned whole, is the caller's to scrub.
func Judge(o actions.Observation, spec json.RawMessage, ignore []string, scrub func(string) string) Outcome {
	if scrub == nil {
		scrub = func(s string) string { return s }
	}
	paths := o.Drift
	if len(paths) == 0 && len(o.Observed) > 0 {
		paths, _ = Compare(spec, o.Observed) // an Observed that does not decode says nothing
	}
	fallback := o.Message
	if fallback == "" {
		fallback = "drift detected"
	}
	if len(paths) == 0 {
		return Outcome{Message: fallback}
	}
	kept, ignored := Filter(paths, ignore)
	if len(kept) == 0 {
		names := make([]string, len(ignored))
		for i, p := range ignored {
			names[i] = p.Path
		}
		return Outcome{Ignored: true, Message: clip.Storable(scrub(strings.Join(names, ", ")), maxMessage)}
	}
	return Outcome{Message: Describe(kept, scrub)}
}
