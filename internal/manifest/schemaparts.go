package manifest

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// A ResourceSet checks thousands of specs that share most of their values: 100,000
// Databases may hold 1,000 tenants, 500 sizes and 100 regions. When a schema's root is a
// plain object schema (properties, required, additionalProperties and annotations only),
// a spec is valid exactly when its keys pass required and additionalProperties and each
// value is valid against its property's schema; each (property, value) is then validated
// once per load. This only proves validity: a spec any part of which fails is validated
// whole, so its problems are the library's, as without this.

// rootParts is a schema's root split into the schemas of its properties.
type rootParts struct {
	props      map[string]*jsonschema.Schema
	required   []string
	additional *jsonschema.Schema // nil: any other key is allowed, unless closed
	closed     bool               // additionalProperties: false
}

// partKeywords are the root keywords a split schema may use.
var partKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"title": true, "description": true, "default": true, "examples": true, "$comment": true,
	"definitions": true, "$defs": true,
}

// splitRoot returns the parts of the schema doc (compiled from raw), or nil when its root
// is not a plain object schema.
func splitRoot(raw []byte, doc any) *rootParts {
	root, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	for k := range root {
		if !partKeywords[k] && !strings.HasPrefix(k, "x-") {
			return nil
		}
	}
	if t, ok := root["type"]; ok && t != "object" {
		return nil
	}
	props, _ := root["properties"].(map[string]any)
	if _, ok := root["properties"]; ok && props == nil {
		return nil
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat = true
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, errors.New("a schema cannot reference other documents")
	}
	if err := c.AddResource(schemaURL, bytes.NewReader(raw)); err != nil {
		return nil
	}
	rp := &rootParts{props: make(map[string]*jsonschema.Schema, len(props))}
	for name := range props {
		if !plainName.MatchString(name) {
			return nil // a name a pointer in a URL would need escaping for
		}
		s, err := c.Compile(schemaURL + "#/properties/" + name)
		if err != nil {
			return nil
		}
		rp.props[name] = s
	}
	if req, ok := root["required"]; ok {
		list, ok := req.([]any)
		if !ok {
			return nil
		}
		for _, r := range list {
			s, ok := r.(string)
			if !ok {
				return nil
			}
			rp.required = append(rp.required, s)
		}
	}
	switch a := root["additionalProperties"].(type) {
	case nil:
	case bool:
		rp.closed = !a
	case map[string]any:
		s, err := c.Compile(schemaURL + "#/additionalProperties")
		if err != nil {
			return nil
		}
		rp.additional = s
	default:
		return nil
	}
	return rp
}

var plainName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// partsMemo holds whether each (schema, property, canonical value) validated, for one load.
type partsMemo struct {
	mu sync.RWMutex
	m  map[*compiledSchema]map[string]map[string]bool
}

func (pm *partsMemo) lookup(cs *compiledSchema, prop string, val []byte) (valid, seen bool) {
	pm.mu.RLock()
	defer pm.mu.RUnlock()
	valid, seen = pm.m[cs][prop][string(val)]
	return valid, seen
}

func (pm *partsMemo) store(cs *compiledSchema, prop string, val []byte, valid bool) {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	if pm.m == nil {
		pm.m = map[*compiledSchema]map[string]map[string]bool{}
	}
	byProp := pm.m[cs]
	if byProp == nil {
		byProp = map[string]map[string]bool{}
		pm.m[cs] = byProp
	}
	vals := byProp[prop]
	if vals == nil {
		vals = map[string]bool{}
		byProp[prop] = vals
	}
	vals[string(val)] = valid
}

// valid reports whether v, a spec, is valid against cs by its parts; false when that is
// not known (and the spec must be validated whole).
func (pm *partsMemo) valid(cs *compiledSchema, v any) bool {
	rp := cs.parts
	m, ok := v.(map[string]any)
	if rp == nil || !ok {
		return false
	}
	for _, r := range rp.required {
		if _, ok := m[r]; !ok {
			return false
		}
	}
	var small [128]byte
	buf := small[:0]
	for k, e := range m {
		s := rp.props[k]
		switch {
		case s != nil:
		case rp.closed:
			return false
		case rp.additional != nil:
			s = rp.additional
		default:
			continue
		}
		var ok bool
		if buf, ok = appendCanonical(buf[:0], e, 0); !ok {
			return false
		}
		valid, seen := pm.lookup(cs, k, buf)
		if !seen {
			valid = s.Validate(e) == nil
			pm.store(cs, k, buf, valid)
		}
		if !valid {
			return false
		}
	}
	return true
}
