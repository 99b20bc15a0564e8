package secrets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
)

// refMarker is what a spec holding a reference must contain; specs without it skip decoding.
var refMarker = []byte(`"secretRef"`)

// Ref is one `{secretRef: {name, key}}` node of a spec.
type Ref struct {
	Path string // where it sits, as spec.db.password or spec.hosts[0].token
	Name string
	Key  string
}

// errMalformed marks a reference that is not {secretRef: {name: string, key: string}}.
var errMalformed = errors.New("malformed secretRef")

// HasRefs reports cheaply whether spec may hold a reference.
func HasRefs(spec []byte) bool { return bytes.Contains(spec, refMarker) }

// decodeSpec decodes spec keeping numbers as written (json.Number).
func decodeSpec(spec []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(spec))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the spec")
	}
	return v, nil
}

// FindRefs lists the references of a decoded spec in a stable order (object keys sorted).
// A node is a reference when it is an object whose only member is "secretRef"; it must then
// hold exactly a string name and a string key, valid by CheckName and CheckKey, or the
// error names its path. An object with secretRef beside other members is refused as well:
// it is either a typo or a plugin field that would silently change meaning.
func FindRefs(v any, at string) ([]Ref, error) {
	var refs []Ref
	err := walk(v, at, func(p string, m map[string]any) (any, error) {
		r, err := parseRef(p, m)
		if err != nil {
			return nil, err
		}
		refs = append(refs, r)
		return nil, nil
	})
	return refs, err
}

// Replace returns v with every reference replaced by what value returns for it.
func Replace(v any, at string, value func(Ref) (string, error)) (any, error) {
	return rewrite(v, at, func(p string, m map[string]any) (any, error) {
		r, err := parseRef(p, m)
		if err != nil {
			return nil, err
		}
		return value(r)
	})
}

func parseRef(p string, m map[string]any) (Ref, error) {
	bad := func(why string) (Ref, error) { return Ref{}, fmt.Errorf("%s: %w: %s", p, errMalformed, why) }
	if len(m) != 1 {
		return bad("secretRef must be the only member of its object")
	}
	inner, ok := m["secretRef"].(map[string]any)
	if !ok {
		return bad("want {secretRef: {name: NAME, key: KEY}}")
	}
	name, nok := inner["name"].(string)
	key, kok := inner["key"].(string)
	if !nok || !kok || len(inner) != 2 {
		return bad("want exactly a string name and a string key")
	}
	if err := CheckName(name); err != nil {
		return bad(err.Error())
	}
	if err := CheckKey(key); err != nil {
		return bad(err.Error())
	}
	return Ref{Path: p, Name: name, Key: key}, nil
}

// walk visits every reference node without changing v.
func walk(v any, at string, visit func(p string, m map[string]any) (any, error)) error {
	_, err := rewrite(v, at, func(p string, m map[string]any) (any, error) {
		_, err := visit(p, m)
		return m, err
	})
	return err
}

// rewrite rebuilds v (maps and slices in place) with fn's result at each reference node.
func rewrite(v any, at string, fn func(p string, m map[string]any) (any, error)) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		if _, ok := t["secretRef"]; ok {
			return fn(at, t)
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			nv, err := rewrite(t[k], at+"."+k, fn)
			if err != nil {
				return nil, err
			}
			t[k] = nv
		}
		return t, nil
	case []any:
		for i := range t {
			nv, err := rewrite(t[i], at+"["+strconv.Itoa(i)+"]", fn)
			if err != nil {
				return nil, err
			}
			t[i] = nv
		}
		return t, nil
	}
	return v, nil
}

// encodeSpec writes v back as JSON; json.Number keeps every number as written, and HTML
// characters are not escaped (the plugin sees the strings it was meant to).
func encodeSpec(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
