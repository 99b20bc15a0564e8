package config

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// decodeStrict decodes the node n into v (a pointer to a struct) as Parse's decoder does,
// and refuses a mapping key that none of the struct's yaml tags names, with the key's line.
// A custom UnmarshalYAML needs it: yaml.v3's Node.Decode starts a decoder of its own, which
// does not inherit KnownFields, so `n.Decode((*plain)(p))` accepts any key silently. what
// names the block in the error, in the words yaml.v3 uses for the other blocks ("type
// config.Prune"; cleanYAMLError shortens it).
func decodeStrict(n *yaml.Node, v any, what string) error {
	if n.Kind == yaml.MappingNode {
		if err := checkKeys(n, yamlKeys(reflect.TypeOf(v).Elem()), what, 0); err != nil {
			return err
		}
	}
	return n.Decode(v)
}

// checkKeys refuses a key of the mapping n that known does not name. A merge key (`<<: *p`,
// or `<<: [*p, *q]`) brings in the keys of the mapping(s) it names, which are checked the
// same way (depth bounds alias chains).
func checkKeys(n *yaml.Node, known map[string]bool, what string, depth int) error {
	if depth > 16 {
		return fmt.Errorf("line %d: merge keys nested too deep in type config.%s", n.Line, what)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "!!merge" || k.Tag == "") {
			merged := []*yaml.Node{val}
			if deref(val).Kind == yaml.SequenceNode {
				merged = deref(val).Content
			}
			for _, m := range merged {
				if m = deref(m); m.Kind == yaml.MappingNode {
					if err := checkKeys(m, known, what, depth+1); err != nil {
						return err
					}
				}
			}
			continue
		}
		if !known[k.Value] {
			return fmt.Errorf("line %d: field %s not found in type config.%s", k.Line, k.Value, what)
		}
	}
	return nil
}

// deref follows an alias to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 16; i++ {
		n = n.Alias
	}
	return n
}

// yamlKeys lists the keys a struct type accepts: its fields' yaml names (the lowercased
// field name without a tag, as yaml.v3 does), those of ",inline" fields, none for "-".
func yamlKeys(t reflect.Type) map[string]bool {
	keys := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		switch {
		case tag == "-":
		case strings.Contains(","+opts+",", ",inline,"):
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k := range yamlKeys(ft) {
					keys[k] = true
				}
			}
		case name != "":
			keys[name] = true
		default:
			keys[strings.ToLower(f.Name)] = true
		}
	}
	return keys
}
