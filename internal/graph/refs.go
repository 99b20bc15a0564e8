// Package graph is the dependency graph between resources (DESIGN §4, Dependencies): output
// references in specs (`${{ Kind/name.outputs.key }}`), what a resource depends on, cycles,
// and resolving references against outputs. Everything here is pure: the loader, the store
// and the reconciler feed it.
package graph

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ID names a resource. Kind compares case-insensitively, as everywhere in trueup.
type ID struct {
	Kind      string
	Namespace string
	Name      string
}

func (id ID) String() string { return id.Kind + "/" + id.Namespace + "/" + id.Name }

// Key is the identity's comparable form (kind lower-cased).
func (id ID) Key() ID {
	return ID{Kind: strings.ToLower(id.Kind), Namespace: id.Namespace, Name: id.Name}
}

// Ref is one `${{ Kind/[namespace/]name.outputs.path }}` in a string.
type Ref struct {
	Target ID
	Output []string // the path below outputs, at least one key
	// Start and End delimit the reference in the string, `${{` to `}}` included.
	Start, End int
}

// String spells the reference as in the manifest, with the namespace written out.
func (r Ref) String() string {
	return "${{ " + r.Target.String() + ".outputs." + strings.Join(r.Output, ".") + " }}"
}

const (
	open   = "${{"
	closer = "}}"
	escape = "$${{"
)

// Contains reports cheaply whether s may hold a reference (or an escape).
func Contains(s string) bool { return strings.Contains(s, open) }

// Parse finds the references in s; a reference without a namespace takes ns. `$${{` is a
// literal `${{` and starts no reference. A `${{` that does not form a valid reference is an
// error saying what is wrong, never text passed on silently.
func Parse(s, ns string) ([]Ref, error) {
	var refs []Ref
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], open)
		if j < 0 {
			break
		}
		at := i + j
		if at > 0 && s[at-1] == '$' {
			i = at + len(open) // an escape: $${{
			continue
		}
		k := strings.Index(s[at+len(open):], closer)
		if k < 0 {
			return nil, fmt.Errorf("reference at offset %d is not closed with }}", at)
		}
		end := at + len(open) + k + len(closer)
		r, err := parseRef(strings.TrimSpace(s[at+len(open):end-len(closer)]), ns)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s[at:end], err)
		}
		r.Start, r.End = at, end
		refs = append(refs, r)
		i = end
	}
	return refs, nil
}

// parseRef reads `Kind/name.outputs.a.b` or `Kind/namespace/name.outputs.a.b`.
func parseRef(body, ns string) (Ref, error) {
	dot := strings.Index(body, ".outputs.")
	if dot < 0 {
		return Ref{}, fmt.Errorf("want Kind/name.outputs.key or Kind/namespace/name.outputs.key")
	}
	target, rest := body[:dot], body[dot+len(".outputs."):]
	parts := strings.Split(target, "/")
	var id ID
	switch len(parts) {
	case 2:
		id = ID{Kind: parts[0], Namespace: ns, Name: parts[1]}
	case 3:
		id = ID{Kind: parts[0], Namespace: parts[1], Name: parts[2]}
	default:
		return Ref{}, fmt.Errorf("%q: want Kind/name or Kind/namespace/name", target)
	}
	for _, p := range []string{id.Kind, id.Namespace, id.Name} {
		if p == "" || strings.ContainsAny(p, " \t{}$") {
			return Ref{}, fmt.Errorf("%q: want Kind/name or Kind/namespace/name", target)
		}
	}
	path := strings.Split(rest, ".")
	for _, p := range path {
		if p == "" || strings.ContainsAny(p, " \t{}$") {
			return Ref{}, fmt.Errorf("%q: want outputs.key or outputs.key.subkey", "outputs."+rest)
		}
	}
	return Ref{Target: id, Output: path}, nil
}

// Whole reports whether s is exactly one reference (spaces around it allowed): its value then
// takes the output's JSON value, whatever its type; otherwise references are interpolated as
// text.
func Whole(s string, refs []Ref) bool {
	return len(refs) == 1 && strings.TrimSpace(s[:refs[0].Start]) == "" && strings.TrimSpace(s[refs[0].End:]) == ""
}

// Unescape turns every `$${{` of a string without references into `${{`.
func Unescape(s string) string { return strings.ReplaceAll(s, escape, open) }

// Lookup returns a resource's outputs; ok is false when it has none yet (or does not exist).
type Lookup func(id ID) (outputs map[string]any, ok bool)

// Missing is a reference that could not be resolved.
type Missing struct {
	Ref Ref
	Why string // "no outputs yet", "no output key"
}

// Resolve returns s with its references replaced: a string that is exactly one reference
// becomes the output's value (any JSON type), others are interpolated as text (a string
// output as is, anything else as its JSON). Escapes become literal `${{`. References that
// cannot be resolved are listed and left as written.
func Resolve(s, ns string, look Lookup) (any, []Missing, error) {
	if !Contains(s) {
		return s, nil, nil
	}
	refs, err := Parse(s, ns)
	if err != nil {
		return nil, nil, err
	}
	values := make([]any, len(refs))
	var missing []Missing
	for i, r := range refs {
		v, why := value(r, look)
		if why != "" {
			missing = append(missing, Missing{Ref: r, Why: why})
		}
		values[i] = v
	}
	if len(missing) > 0 {
		return s, missing, nil
	}
	if Whole(s, refs) {
		return values[0], nil, nil
	}
	var b strings.Builder
	last := 0
	for i, r := range refs {
		b.WriteString(Unescape(s[last:r.Start]))
		if str, ok := values[i].(string); ok {
			b.WriteString(str)
		} else {
			j, err := json.Marshal(values[i])
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", r, err)
			}
			b.Write(j)
		}
		last = r.End
	}
	b.WriteString(Unescape(s[last:]))
	return b.String(), nil, nil
}

func value(r Ref, look Lookup) (any, string) {
	out, ok := look(r.Target)
	if !ok {
		return nil, "no outputs yet"
	}
	var v any = out
	for _, k := range r.Output {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, "no output " + strings.Join(r.Output, ".")
		}
		if v, ok = m[k]; !ok {
			return nil, "no output " + strings.Join(r.Output, ".")
		}
	}
	return v, ""
}
