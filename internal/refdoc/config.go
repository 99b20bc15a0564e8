package refdoc

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"reflect"
	"sort"
	"strings"
	"time"
)

// ConfigPage is what the controller config reference is made of.
type ConfigPage struct {
	// Regenerate is the command named in the page's first line.
	Regenerate string
	// Example is an example config file, shown first; ExampleName is where it lives.
	Example     []byte
	ExampleName string
	// Root is the type of the whole file (config.Config).
	Root reflect.Type
	// Docs holds the package's doc comments: "Type" and "Type.Field" (see StructDocs); the
	// types of other packages that the file holds (a source kind's block) are under their
	// package's name: "gitsource.Spec", "gitsource.Spec.URL".
	Docs map[string]string
	// Defaults maps a key path (sources[].git.interval) to its default, as Defaults finds them.
	Defaults map[string]string
	// Scalars renders named types whose UnmarshalYAML reads a scalar (or either form) by
	// their YAML type; a struct among them that also takes a mapping keeps its section.
	Scalars map[reflect.Type]string
	// Keys names fields that a custom UnmarshalYAML reads under a key of their own while
	// their tag is "-" ("Action.Config": "config").
	Keys map[string]string
}

// StructDocs reads the doc comments of the struct types in the Go files of fsys (tests
// excluded): "Type" is a type's comment, "Type.Field" a field's doc or line comment.
func StructDocs(fsys fs.FS) (map[string]string, error) {
	names, err := fs.Glob(fsys, "*.go")
	if err != nil {
		return nil, err
	}
	docs := map[string]string{}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				docs[ts.Name.Name] = doc.Text()
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fld := range st.Fields.List {
					text := fld.Doc.Text()
					if text == "" {
						text = fld.Comment.Text()
					}
					for _, n := range fld.Names {
						docs[ts.Name.Name+"."+n.Name] = text
					}
				}
			}
		}
	}
	return docs, nil
}

// Defaults compares a config as the loader returns it (defaults applied) with the same text
// decoded without defaults: a key that is empty in raw but set in loaded has a default.
// Both are values of the root type; slices are compared element by element and the first
// element that sets a key gives its default. trimPrefix is removed from string defaults
// (the folder the loader resolved relative paths against).
func Defaults(loaded, raw any, trimPrefix string) map[string]string {
	out := map[string]string{}
	collectDefaults(reflect.ValueOf(loaded), reflect.ValueOf(raw), "", trimPrefix, out)
	return out
}

func collectDefaults(l, r reflect.Value, path, trim string, out map[string]string) {
	for l.Kind() == reflect.Pointer {
		if l.IsNil() {
			return
		}
		if l.Elem().Kind() != reflect.Struct {
			if (r.Kind() != reflect.Pointer || r.IsNil()) && path != "" {
				if _, ok := out[path]; !ok {
					out[path] = renderValue(l.Elem(), trim)
				}
			}
			return
		}
		l = l.Elem()
		if r.Kind() == reflect.Pointer {
			if r.IsNil() {
				r = reflect.New(l.Type()).Elem()
			} else {
				r = r.Elem()
			}
		}
	}
	switch l.Kind() {
	case reflect.Struct:
		if l.Type() == reflect.TypeFor[time.Time]() {
			break
		}
		for i := range l.NumField() {
			f := l.Type().Field(i)
			key := yamlKey(f)
			if !f.IsExported() || key == "" {
				continue
			}
			collectDefaults(l.Field(i), r.Field(i), join(path, key), trim, out)
		}
		return
	case reflect.Slice:
		if l.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := 0; i < l.Len() && i < r.Len(); i++ {
			collectDefaults(l.Index(i), r.Index(i), path+"[]", trim, out)
		}
		return
	case reflect.Map:
		return
	}
	if path == "" || l.IsZero() || !r.IsZero() {
		return
	}
	if _, ok := out[path]; !ok {
		out[path] = renderValue(l, trim)
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// renderValue writes a default as it would be written in the file.
func renderValue(v reflect.Value, trim string) string {
	if v.Type() == reflect.TypeFor[time.Duration]() {
		return Duration(time.Duration(v.Int()))
	}
	if v.Kind() == reflect.String {
		s := v.String()
		if trim != "" {
			s = strings.TrimPrefix(s, trim)
		}
		return s
	}
	return fmt.Sprint(v.Interface())
}

// Duration writes d the way a config file would: 1m, 720h, 1h30m, 500ms.
func Duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// yamlKey is the key a field is read under ("" when it is not read from YAML).
func yamlKey(f reflect.StructField) string {
	tag, ok := f.Tag.Lookup("yaml")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "-" {
		return ""
	}
	return name
}

// YAMLType names the YAML type a Go type is read from; scalars overrides named types whose
// UnmarshalYAML reads something else than their Go kind.
func YAMLType(t reflect.Type, scalars map[reflect.Type]string) string {
	if s, ok := scalars[t]; ok {
		return s
	}
	switch {
	case t == reflect.TypeFor[time.Duration]():
		return "duration"
	case t == reflect.TypeFor[json.RawMessage]():
		return "mapping"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return YAMLType(t.Elem(), scalars)
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "list of " + plural(YAMLType(t.Elem(), scalars))
	case reflect.Map:
		return "mapping of " + YAMLType(t.Key(), scalars) + " to " + YAMLType(t.Elem(), scalars)
	case reflect.Struct:
		return "mapping"
	}
	return t.Kind().String()
}

func plural(s string) string {
	switch {
	case strings.HasPrefix(s, "list of "), strings.HasPrefix(s, "mapping of "), strings.Contains(s, " or "):
		return "(" + s + ")"
	case strings.HasSuffix(s, "s"):
		return s + "es"
	}
	return s + "s"
}

// section is one mapping of the file: its key path and its Go struct type.
type section struct {
	path string
	t    reflect.Type
}

// Render writes the page.
func (p ConfigPage) Render() string {
	var b strings.Builder
	b.WriteString(Header(p.Regenerate))
	b.WriteString("# Controller configuration\n\n")
	b.WriteString(Intro(Prose(paragraphs(p.Docs[p.Root.Name()])), p.Root.Name(), "") + "\n\n")
	b.WriteString("Keys are listed per section; `sources[].git` is the `git` mapping of an item of the `sources` list. " +
		"A default is shown where the loader fills one in; other defaults are told in the description. " +
		"`${VAR}` in a value is replaced by the environment variable VAR. " +
		"Durations are written as `30s`, `5m`, `1h30m`.\n\n")
	if len(p.Example) > 0 {
		fmt.Fprintf(&b, "## Example\n\n%s:\n\n```yaml\n%s", code(p.ExampleName), p.Example)
		if !strings.HasSuffix(string(p.Example), "\n") {
			b.WriteString("\n")
		}
		b.WriteString("```\n\n")
	}
	p.renderTree(&b, section{"", p.Root})
	return b.String()
}

// renderTree writes a section, then the sections its keys open, depth first, so that a
// mapping's parts follow it.
func (p ConfigPage) renderTree(b *strings.Builder, s section) {
	for _, sub := range p.renderSection(b, s) {
		p.renderTree(b, sub)
	}
}

// renderSection writes one section's table and returns the sections its keys open.
func (p ConfigPage) renderSection(b *strings.Builder, s section) []section {
	title := "Top level"
	if s.path != "" {
		title = code(s.path)
		fmt.Fprintf(b, "## %s\n\n", title)
		if doc := Intro(Prose(paragraphs(p.Docs[p.docKey(s.t)])), s.t.Name(), lastKey(s.path)); doc != "" {
			b.WriteString(doc + "\n\n")
		}
	} else {
		fmt.Fprintf(b, "## %s\n\n", title)
	}
	var next []section
	b.WriteString("| Key | Type | Default | Description |\n|---|---|---|---|\n")
	for i := range s.t.NumField() {
		f := s.t.Field(i)
		if !f.IsExported() {
			continue
		}
		key := yamlKey(f)
		if k, ok := p.Keys[s.t.Name()+"."+f.Name]; ok {
			key = k
		}
		if key == "" {
			continue
		}
		path := join(s.path, key)
		typ := YAMLType(f.Type, p.Scalars)
		if st, list := structOf(f.Type); st != nil && (p.Scalars[st] == "" || strings.Contains(p.Scalars[st], "mapping")) {
			sub := path
			if list {
				sub += "[]"
			}
			next = append(next, section{sub, st})
			typ += ", see [" + code(sub) + "](#" + anchor(sub) + ")"
		}
		def := ""
		if d, ok := p.Defaults[path]; ok {
			def = code(d)
		}
		desc := p.describe(p.docKey(s.t)+"."+f.Name, f.Name, key)
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", code(key), cell(typ), def, cell(desc))
	}
	b.WriteString("\n")
	return next
}

// docKey is t's key in Docs: its name, qualified by its package's name when it is not the
// root's package.
func (p ConfigPage) docKey(t reflect.Type) string {
	if t.PkgPath() == p.Root.PkgPath() {
		return t.Name()
	}
	return path.Base(t.PkgPath()) + "." + t.Name()
}

// structOf returns the struct type a field's value is (itself, through a pointer, or as the
// items of a list), and whether it is a list.
func structOf(t reflect.Type) (reflect.Type, bool) {
	list := false
	for {
		switch t.Kind() {
		case reflect.Pointer:
			t = t.Elem()
			continue
		case reflect.Slice:
			if list {
				return nil, false
			}
			list = true
			t = t.Elem()
			continue
		case reflect.Struct:
			if t == reflect.TypeFor[time.Time]() {
				return nil, false
			}
			return t, list
		}
		return nil, false
	}
}

func lastKey(path string) string {
	path = strings.TrimSuffix(path, "[]")
	if i := strings.LastIndex(path, "."); i >= 0 {
		return path[i+1:]
	}
	return path
}

// describe returns the doc comment under docKey as one paragraph block, with a leading Go
// name (the comment's subject) replaced by the YAML key it is read from.
func (p ConfigPage) describe(docKey, goName, key string) string {
	return Sentence(Subject(Prose(paragraphs(p.Docs[docKey])), goName, key))
}

// Sentence starts a line comment ("default true") with a capital and ends it with a period.
func Sentence(s string) string {
	if s == "" {
		return s
	}
	s = upperFirst(s)
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// Subject replaces a comment's leading Go identifier goName with key in code format.
func Subject(text, goName, key string) string {
	rest, ok := strings.CutPrefix(text, goName)
	if !ok || (rest != "" && !strings.ContainsAny(rest[:1], " :,.")) {
		return text
	}
	return code(key) + rest
}

// Intro turns a type's comment into a section's introduction: "Git is a Git repository
// source." becomes "A Git repository source."; other subjects become the key.
func Intro(text, goName, key string) string {
	if rest, ok := strings.CutPrefix(text, goName+" is "); ok && rest != "" {
		return strings.ToUpper(rest[:1]) + rest[1:]
	}
	if rest, ok := strings.CutPrefix(text, goName+" are "); ok && rest != "" {
		return strings.ToUpper(rest[:1]) + rest[1:]
	}
	return Subject(text, goName, key)
}

// SortedKeys is a helper for tests and callers that print maps in a stable order.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
