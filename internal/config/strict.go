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
		known := yamlKeys(reflect.TypeOf(v).Elem())
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; !known[k.Value] {
				return fmt.Errorf("line %d: field %s not found in type config.%s", k.Line, k.Value, what)
			}
		}
	}
	return n.Decode(v)
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
