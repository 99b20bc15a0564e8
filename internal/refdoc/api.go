package refdoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// schemaRef is the prefix of a reference to a named schema.
const schemaRef = "#/components/schemas/"

// APIPage renders the HTTP API reference from an OpenAPI 3.1 document: operations grouped by
// the document's tags, in its order, then the named schemas.
func APIPage(regenerate string, doc []byte) (string, error) {
	var d openAPI
	if err := json.Unmarshal(doc, &d); err != nil {
		return "", fmt.Errorf("openapi: %w", err)
	}
	var raw struct {
		Paths   json.RawMessage `json:"paths"`
		Schemas struct {
			Schemas json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &raw); err != nil {
		return "", fmt.Errorf("openapi: %w", err)
	}
	pathOrder, err := orderedKeys(raw.Paths)
	if err != nil {
		return "", fmt.Errorf("openapi paths: %w", err)
	}
	schemaOrder, err := orderedKeys(raw.Schemas.Schemas)
	if err != nil {
		return "", fmt.Errorf("openapi schemas: %w", err)
	}

	var b strings.Builder
	b.WriteString(Header(regenerate))
	fmt.Fprintf(&b, "# HTTP API\n\n%s\n\n", NoHTML(paragraphs(d.Info.Description)))
	fmt.Fprintf(&b, "The OpenAPI document (%s) is served at `GET /api/v1/openapi.json`.\n\n", d.Info.Version)

	b.WriteString("## Authentication\n\n")
	b.WriteString("Each operation lists the schemes it accepts; \"anonymous\" means a caller without credentials, " +
		"who has the role `auth.anonymous` names (every caller is an admin when `auth:` is not configured).\n\n")
	b.WriteString("| Scheme | Type | Description |\n|---|---|---|\n")
	for _, name := range SortedKeys(d.Components.SecuritySchemes) {
		s := d.Components.SecuritySchemes[name]
		typ := s.Type
		switch {
		case s.Scheme != "":
			typ += " " + s.Scheme
		case s.In != "":
			typ += " in " + s.In + " " + code(s.Name)
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", code(name), cell(typ), cell(NoHTML(s.Description)))
	}
	b.WriteString("\n")

	type op struct {
		method, path string
		o            operation
	}
	byTag := map[string][]op{}
	for _, p := range pathOrder {
		for _, m := range []string{"get", "put", "post", "patch", "delete"} {
			o, ok := d.Paths[p][m]
			if !ok {
				continue
			}
			tag := "other"
			if len(o.Tags) > 0 {
				tag = o.Tags[0]
			}
			byTag[tag] = append(byTag[tag], op{strings.ToUpper(m), p, o})
		}
	}
	tags := d.Tags
	if _, ok := byTag["other"]; ok {
		tags = append(tags, tag{Name: "other"})
	}
	for _, t := range tags {
		ops := byTag[t.Name]
		if len(ops) == 0 {
			continue
		}
		// "endpoints" keeps a tag's heading apart from a schema of the same name (health, Health).
		fmt.Fprintf(&b, "## %s endpoints\n\n", upperFirst(t.Name))
		if t.Description != "" {
			b.WriteString(NoHTML(paragraphs(t.Description)) + "\n\n")
		}
		for _, o := range ops {
			d.renderOperation(&b, o.method, o.path, o.o)
		}
	}

	b.WriteString("## Schemas\n\n")
	for _, name := range schemaOrder {
		d.renderSchema(&b, name, d.Components.Schemas[name])
	}
	return b.String(), nil
}

type openAPI struct {
	Info struct {
		Description string `json:"description"`
		Version     string `json:"version"`
	} `json:"info"`
	Tags     []tag                           `json:"tags"`
	Security []map[string][]string           `json:"security"`
	Paths    map[string]map[string]operation `json:"paths"`
	// Components are what $refs point at.
	Components struct {
		Schemas         map[string]Schema         `json:"schemas"`
		Responses       map[string]response       `json:"responses"`
		Parameters      map[string]parameter      `json:"parameters"`
		SecuritySchemes map[string]securityScheme `json:"securitySchemes"`
	} `json:"components"`
}

type tag struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

type operation struct {
	Summary     string                `json:"summary"`
	Description string                `json:"description"`
	Tags        []string              `json:"tags"`
	Parameters  []parameter           `json:"parameters"`
	RequestBody *requestBody          `json:"requestBody"`
	Responses   map[string]response   `json:"responses"`
	Security    []map[string][]string `json:"security"`
}

// UnmarshalJSON keeps only what is an operation: a path item also holds "parameters".
func (o *operation) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '[' {
		return nil
	}
	type plain operation
	return json.Unmarshal(b, (*plain)(o))
}

type parameter struct {
	Ref         string `json:"$ref"`
	Name        string `json:"name"`
	In          string `json:"in"`
	Required    bool   `json:"required"`
	Description string `json:"description"`
	Schema      Schema `json:"schema"`
}

type requestBody struct {
	Required    bool                 `json:"required"`
	Description string               `json:"description"`
	Content     map[string]mediaType `json:"content"`
}

type response struct {
	Ref         string               `json:"$ref"`
	Description string               `json:"description"`
	Content     map[string]mediaType `json:"content"`
}

type mediaType struct {
	Schema *Schema `json:"schema"`
}

type securityScheme struct {
	Type        string `json:"type"`
	Scheme      string `json:"scheme"`
	In          string `json:"in"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// Schema is the part of a JSON Schema the reference shows.
type Schema struct {
	Ref                  string            `json:"$ref"`
	Type                 any               `json:"type"` // a name or a list of names
	Format               string            `json:"format"`
	Description          string            `json:"description"`
	Enum                 []any             `json:"enum"`
	Const                any               `json:"const"`
	Items                *Schema           `json:"items"`
	Properties           map[string]Schema `json:"properties"`
	Required             []string          `json:"required"`
	AdditionalProperties any               `json:"additionalProperties"` // bool or a schema
	OneOf                []Schema          `json:"oneOf"`
	AnyOf                []Schema          `json:"anyOf"`
	AllOf                []Schema          `json:"allOf"`
	Minimum              *float64          `json:"minimum"`
	Maximum              *float64          `json:"maximum"`
	Pattern              string            `json:"pattern"`
	MaxLength            *int              `json:"maxLength"`

	order []string // property names as the document lists them
}

// UnmarshalJSON keeps the document's order of properties.
func (s *Schema) UnmarshalJSON(b []byte) error {
	type plain Schema
	if err := json.Unmarshal(b, (*plain)(s)); err != nil {
		return err
	}
	var raw struct {
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(b, &raw); err != nil || raw.Properties == nil {
		return err
	}
	order, err := orderedKeys(raw.Properties)
	s.order = order
	return err
}

// orderedKeys lists an object's keys in the order they are written.
func orderedKeys(obj json.RawMessage) ([]string, error) {
	if len(obj) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// SchemaText writes a schema in one line: a named schema links to its section, a list says
// what it holds, a choice lists its alternatives, constraints follow in brackets.
func SchemaText(s Schema) string {
	if name, ok := strings.CutPrefix(s.Ref, schemaRef); ok {
		return "[" + name + "](#" + anchor(name) + ")"
	}
	var alts []Schema
	sep := " or "
	switch {
	case len(s.OneOf) > 0:
		alts = s.OneOf
	case len(s.AnyOf) > 0:
		alts = s.AnyOf
	case len(s.AllOf) > 0:
		alts, sep = s.AllOf, " and "
	}
	if alts != nil {
		parts := make([]string, len(alts))
		for i, a := range alts {
			parts[i] = SchemaText(a)
		}
		return strings.Join(parts, sep)
	}
	if s.Const != nil {
		return "const " + code(literal(s.Const))
	}
	var names []string
	switch t := s.Type.(type) {
	case string:
		names = []string{t}
	case []any:
		for _, n := range t {
			names = append(names, fmt.Sprint(n))
		}
	}
	for i, n := range names {
		switch n {
		case "array":
			if s.Items != nil {
				n = "array of " + SchemaText(*s.Items)
			}
		case "object":
			if len(s.order) > 0 {
				fields := make([]string, len(s.order))
				for i, f := range s.order {
					fields[i] = code(f)
				}
				n = "object with " + strings.Join(fields, ", ")
			} else if sub, ok := s.AdditionalProperties.(map[string]any); ok {
				b, _ := json.Marshal(sub)
				var v Schema
				if json.Unmarshal(b, &v) == nil {
					n = "map of string to " + SchemaText(v)
				}
			}
		case "string":
			if s.Format != "" {
				n += " (" + s.Format + ")"
			}
		}
		names[i] = n
	}
	text := strings.Join(names, " or ")
	if text == "" && len(s.Enum) > 0 {
		text = jsonType(s.Enum[0])
	}
	if text == "" {
		text = "any"
	}
	var limits []string
	if len(s.Enum) > 0 {
		vals := make([]string, len(s.Enum))
		for i, v := range s.Enum {
			vals[i] = code(literal(v))
		}
		limits = append(limits, "one of "+strings.Join(vals, ", "))
	}
	if s.Minimum != nil {
		limits = append(limits, fmt.Sprintf("≥ %v", *s.Minimum))
	}
	if s.Maximum != nil {
		limits = append(limits, fmt.Sprintf("≤ %v", *s.Maximum))
	}
	if s.MaxLength != nil {
		limits = append(limits, fmt.Sprintf("at most %d characters", *s.MaxLength))
	}
	if s.Pattern != "" {
		limits = append(limits, "matching "+code(s.Pattern))
	}
	if len(limits) > 0 {
		text += ", " + strings.Join(limits, ", ")
	}
	return text
}

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	case []any:
		return "array"
	}
	return "object"
}

func literal(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// authText names the schemes an operation accepts ("anonymous" for the empty requirement).
func authText(reqs []map[string][]string) string {
	var names []string
	for _, r := range reqs {
		if len(r) == 0 {
			names = append(names, "anonymous")
			continue
		}
		var all []string
		for _, k := range SortedKeys(r) {
			all = append(all, "["+code(k)+"](#authentication)")
		}
		names = append(names, strings.Join(all, " and "))
	}
	return strings.Join(names, ", ")
}

func (d *openAPI) renderOperation(b *strings.Builder, method, path string, o operation) {
	fmt.Fprintf(b, "### `%s %s`\n\n", method, path)
	if o.Summary != "" {
		b.WriteString(strings.TrimSuffix(NoHTML(paragraphs(o.Summary)), ".") + ".\n\n")
	}
	if o.Description != "" {
		b.WriteString(NoHTML(paragraphs(o.Description)) + "\n\n")
	}
	sec := o.Security
	if sec == nil {
		sec = d.Security
	}
	if len(sec) > 0 {
		fmt.Fprintf(b, "Authentication: %s.\n\n", authText(sec))
	}
	if len(o.Parameters) > 0 {
		b.WriteString("| Parameter | In | Type | Required | Description |\n|---|---|---|---|---|\n")
		for _, p := range o.Parameters {
			if name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
				p = d.Components.Parameters[name]
			}
			req := "no"
			if p.Required {
				req = "yes"
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", code(p.Name), p.In, cell(SchemaText(p.Schema)), req, cell(NoHTML(p.Description)))
		}
		b.WriteString("\n")
	}
	if rb := o.RequestBody; rb != nil {
		req := "optional"
		if rb.Required {
			req = "required"
		}
		fmt.Fprintf(b, "Request body (%s): %s.", req, contentText(rb.Content))
		if rb.Description != "" {
			b.WriteString(" " + NoHTML(paragraphs(rb.Description)))
		}
		b.WriteString("\n\n")
	}
	b.WriteString("Responses:\n\n")
	codes := SortedKeys(o.Responses)
	for _, c := range codes {
		r := o.Responses[c]
		if name, ok := strings.CutPrefix(r.Ref, "#/components/responses/"); ok {
			r = d.Components.Responses[name]
		}
		fmt.Fprintf(b, "- **%s**", c)
		if len(r.Content) > 0 {
			b.WriteString(" " + contentText(r.Content))
		}
		if r.Description != "" {
			b.WriteString(": " + NoHTML(strings.Join(strings.Fields(r.Description), " ")))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// contentText lists a body's media types with their schemas.
func contentText(content map[string]mediaType) string {
	var parts []string
	for _, mt := range SortedKeys(content) {
		t := code(mt)
		if s := content[mt].Schema; s != nil && (s.Ref != "" || s.Type != nil || len(s.OneOf)+len(s.AnyOf)+len(s.AllOf) > 0) {
			t += " " + SchemaText(*s)
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, ", ")
}

func (d *openAPI) renderSchema(b *strings.Builder, name string, s Schema) {
	fmt.Fprintf(b, "### %s\n\n", name)
	if s.Description != "" {
		b.WriteString(NoHTML(paragraphs(s.Description)) + "\n\n")
	}
	if len(s.order) == 0 {
		fmt.Fprintf(b, "%s.\n\n", upperFirst(SchemaText(Schema{Type: s.Type, Items: s.Items, Enum: s.Enum, OneOf: s.OneOf, AnyOf: s.AnyOf, AllOf: s.AllOf, AdditionalProperties: s.AdditionalProperties, Format: s.Format})))
		return
	}
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	b.WriteString("| Field | Type | Required | Description |\n|---|---|---|---|\n")
	for _, p := range s.order {
		ps := s.Properties[p]
		req := "no"
		if required[p] {
			req = "yes"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", code(p), cell(SchemaText(ps)), req, cell(NoHTML(ps.Description)))
	}
	b.WriteString("\n")
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
