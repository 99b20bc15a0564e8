package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/trueup-dev/trueup/internal/jsonptr"
)

// schemaURL is the base every schema is compiled under. The compiler gets no loader, so a
// $ref can only point inside the schema itself: a manifest must not make the controller
// read local files or fetch URLs.
const (
	schemaBase = "trueup:///"
	schemaURL  = schemaBase + "schema.json"
)

// compiledSchema is one version's schema, ready to default and validate specs. It depends
// only on the schema's content, so it is cached by hash.
type compiledSchema struct {
	hash     string
	id       sym                // hash, interned: what a checked resource remembers
	schema   *jsonschema.Schema // nil when compilation failed
	quick    *quickSchema       // what surely passes schema, when it keeps to quickSchema's part
	defaults *defaulter         // nil when the schema declares no defaults
	rules    *celNode           // nil when the schema carries no x-trueup-validations
	doc      any                // the schema decoded, for where a secret reference may stand
	raw      json.RawMessage    // the schema, kept only when it has transition rules (see transitionCheck)
	parts    *rootParts         // the root's properties compiled apart (schemaparts.go); nil when not split
	errPtr   string             // when compilation failed: where in the schema
	errMsg   string
}

func compileSchema(raw json.RawMessage, hash string) *compiledSchema {
	cs := &compiledSchema{hash: hash, id: intern(hash)}
	c := jsonschema.NewCompiler()
	// Manifests are written by people who expect `format: email` to be checked, as
	// OpenAPI validators in Kubernetes do.
	c.AssertFormat = true
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("$ref to %s: a schema cannot reference other documents", u)
	}
	if err := c.AddResource(schemaURL, bytes.NewReader(raw)); err != nil {
		cs.errMsg = cleanSchemaMsg(err.Error())
		return cs
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		cs.errPtr, cs.errMsg = compileProblem(err)
		return cs
	}
	cs.schema, cs.quick = s, quickFrom(s, 0)

	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err == nil {
		// jsonschema/v5 ignores keywords it does not know, x-trueup-validations among them:
		// the rules are read here. A broken rule breaks the type, as a broken schema does:
		// nothing compiled of it is kept.
		if rules, rerr := buildRules(doc); rerr != nil {
			cs.schema, cs.quick = nil, nil
			cs.errPtr, cs.errMsg = rerr.ptr, rerr.msg
		} else {
			cs.defaults = buildDefaulter(doc, 0)
			cs.doc = doc
			cs.parts = splitRoot(raw, doc)
			cs.rules = rules
			if rules != nil && rules.transition {
				cs.raw = raw
			}
		}
	}
	return cs
}

// compileProblem extracts the most useful line from a compile failure: for a schema that
// breaks the meta-schema, the first leaf of the error tree (as the library's own message
// does), with its location in the schema.
func compileProblem(err error) (ptr, msg string) {
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		for len(ve.Causes) > 0 {
			ve = ve.Causes[0]
		}
		return ve.InstanceLocation, ve.Message
	}
	var se *jsonschema.SchemaError
	if errors.As(err, &se) && se.Err != nil {
		return "", cleanSchemaMsg(se.Err.Error())
	}
	return "", cleanSchemaMsg(err.Error())
}

// cleanSchemaMsg removes the library's prefix and the internal base URL, which mean nothing
// to the author of the manifest.
func cleanSchemaMsg(s string) string {
	s = strings.TrimPrefix(s, "jsonschema: ")
	s = strings.ReplaceAll(s, schemaURL, "")
	return strings.ReplaceAll(s, schemaBase, "")
}

// defaulter is the part of a schema that declares defaults: jsonschema/v5 validates but
// never fills defaults, so the loader walks properties (recursively, and into items) itself.
type defaulter struct {
	props []propDefault // sorted by name, so filling is deterministic
	items *defaulter
}

type propDefault struct {
	name   string
	value  any
	hasDef bool
	sub    *defaulter
}

func buildDefaulter(s any, depth int) *defaulter {
	m, ok := s.(map[string]any)
	if !ok || depth > maxDepth {
		return nil
	}
	d := &defaulter{items: buildDefaulter(m["items"], depth+1)}
	if props, ok := m["properties"].(map[string]any); ok {
		for _, name := range slices.Sorted(maps.Keys(props)) {
			pm, _ := props[name].(map[string]any)
			def, hasDef := pm["default"]
			sub := buildDefaulter(pm, depth+1)
			if hasDef || sub != nil {
				d.props = append(d.props, propDefault{name: name, value: def, hasDef: hasDef, sub: sub})
			}
		}
	}
	if len(d.props) == 0 && d.items == nil {
		return nil
	}
	return d
}

// apply returns v with absent properties filled from their defaults. It never modifies v,
// which may be a cached document shared between loads: changed containers are copied, and
// changed reports whether anything was. Default values are shared between results, which is
// safe because results are only validated and encoded, never modified.
func (d *defaulter) apply(v any) (any, bool) { return d.fill(v, false) }

// fill is apply, filling v's own containers in place when owned is set (a value nothing else
// holds: a spec just decoded for its check) rather than copying them; a default value, shared,
// is still copied before defaults are filled into it.
func (d *defaulter) fill(v any, owned bool) (any, bool) {
	if d == nil || isSecretRef(v) {
		// A secret reference stands for the whole value: defaults are the secret's business,
		// and filling them in would make the reference malformed.
		return v, false
	}
	switch x := v.(type) {
	case map[string]any:
		var out map[string]any
		for _, p := range d.props {
			cur, present := x[p.name]
			var nv any
			switch {
			case !present && p.hasDef:
				nv, _ = p.sub.apply(p.value)
			case present && p.sub != nil:
				var changed bool
				if nv, changed = p.sub.fill(cur, owned); !changed {
					continue
				}
			default:
				continue
			}
			if out == nil {
				out = x
				if !owned {
					out = maps.Clone(x)
				}
			}
			out[p.name] = nv
		}
		if out == nil {
			return x, false
		}
		return out, true
	case []any:
		if d.items == nil {
			return x, false
		}
		var out []any
		for i, e := range x {
			nv, changed := d.items.fill(e, owned)
			if !changed {
				continue
			}
			if out == nil {
				out = x
				if !owned {
					out = slices.Clone(x)
				}
			}
			out[i] = nv
		}
		if out == nil {
			return x, false
		}
		return out, true
	}
	return v, false
}

// schemaProblem is one leaf of a validation error tree, located in the validated value.
type schemaProblem struct {
	path path
	// at, when set, is a better place to take the line from than path: for a property
	// that is not allowed, the line of that property rather than of its parent.
	at  path
	msg string
}

var extraProperty = regexp.MustCompile(`^additionalProperties '([^']*)'`)

// validate checks v against the schema and returns every leaf problem: the root of the
// library's error tree only says "doesn't validate", the causes say why.
func (cs *compiledSchema) validate(v any, base path) []schemaProblem {
	return cs.validateMarkers(v, base, false)
}

// validateMarkers is validate; with markers, a problem at or inside an encrypted field's
// marker is dropped: the marker stands for a value not known (Options.EncryptedUnknown).
func (cs *compiledSchema) validateMarkers(v any, base path, markers bool) []schemaProblem {
	if cs.quick != nil && cs.quick.accepts(v, 0) {
		return nil
	}
	err := cs.schema.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []schemaProblem{{path: base, msg: err.Error()}}
	}
	var out []schemaProblem
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			if underSecretRef(v, e.InstanceLocation) {
				return // a secret reference stands for whatever value the schema wants
			}
			if markers && underMarker(v, e.InstanceLocation) {
				return // so does an encrypted field nobody decrypted
			}
			if node := walkPointer(v, strings.TrimPrefix(e.InstanceLocation, "/"), nil); holdsOutputRef(node) &&
				(wholeOutputRef(node) || !strings.HasSuffix(e.KeywordLocation, "/type")) {
				// So does an output reference, of any type: the resolved spec is
				// validated again before the action is called. A reference inside a longer
				// string is interpolated as text, so that string can never be of another
				// type: the type check stays.
				return
			}
			sp := schemaProblem{path: pointerPath(base, v, e.InstanceLocation), msg: e.Message}
			if holdsOutputRef(walkPointer(v, strings.TrimPrefix(e.InstanceLocation, "/"), nil)) {
				sp.msg += " (a reference inside a longer string is interpolated as text: only a string that is exactly one reference takes the output's type)"
			}
			if m := extraProperty.FindStringSubmatch(e.Message); m != nil {
				sp.at = sp.path.key(m[1])
			}
			out = append(out, sp)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return out
}

// pointerPath turns a JSON pointer into v into a path below base. Whether a token is an
// index or a key ("0" may be either) is decided by the value it walks through.
func pointerPath(base path, v any, ptr string) path {
	p := slices.Clip(base)
	if ptr == "" {
		return p
	}
	for _, tok := range jsonptr.Tokens(ptr) {
		if s, ok := v.([]any); ok {
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(s) {
				p, v = p.index(i), s[i]
				continue
			}
		}
		m, _ := v.(map[string]any)
		p, v = p.key(tok), m[tok]
	}
	return p
}
