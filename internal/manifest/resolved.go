package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// resolvedSchemas caches compiled schemas for ValidateResolved by the schema's hash: a
// controller validates the resolved specs of a handful of types over and over.
var resolvedSchemas = struct {
	sync.Mutex
	m map[string]*compiledSchema
}{m: map[string]*compiledSchema{}}

// maxResolvedSchemas bounds the cache; past it, it starts over.
const maxResolvedSchemas = 256

// SpecProblem is a schema violation in a spec: where (a dotted path below spec) and what.
type SpecProblem struct {
	Path string // e.g. spec.port, spec.servers[0].host
	Msg  string
}

// ValidateResolved checks a spec whose output references were resolved (DESIGN §4,
// Dependencies) against the schema its apiVersion's version declares in typeSpec (a stored
// ResourceType spec, as canonical JSON). Secret references are still unresolved and stand,
// as at ingest, for whatever string the schema wants.
func ValidateResolved(typeSpec json.RawMessage, apiVersion string, spec json.RawMessage) ([]SpecProblem, error) {
	var ts struct {
		Versions []struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		} `json:"versions"`
	}
	if err := json.Unmarshal(typeSpec, &ts); err != nil {
		return nil, fmt.Errorf("read the type's schema: %w", err)
	}
	version := apiVersion[strings.LastIndexByte(apiVersion, '/')+1:]
	var raw json.RawMessage
	for _, v := range ts.Versions {
		if v.Name == version {
			raw = v.Schema
		}
	}
	if raw == nil {
		return nil, fmt.Errorf("the type serves no version %q", version)
	}
	hash := hashJSON(raw)
	resolvedSchemas.Lock()
	cs := resolvedSchemas.m[hash]
	resolvedSchemas.Unlock()
	if cs == nil {
		cs = compileSchema(raw, hash)
		resolvedSchemas.Lock()
		if len(resolvedSchemas.m) >= maxResolvedSchemas {
			clear(resolvedSchemas.m)
		}
		resolvedSchemas.m[hash] = cs
		resolvedSchemas.Unlock()
	}
	if cs.schema == nil {
		return nil, fmt.Errorf("the type's schema does not compile: %s", cs.errMsg)
	}
	dec := json.NewDecoder(bytes.NewReader(spec))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("read the resolved spec: %w", err)
	}
	var out []SpecProblem
	for _, p := range cs.validate(v, path{"spec"}) {
		out = append(out, SpecProblem{Path: p.path.String(), Msg: p.msg})
	}
	return out, nil
}
