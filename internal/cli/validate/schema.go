package validate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/manifest"
)

// checkRequiredFields compares each type's schema with the spec fields its action's calls need
// (a Terraform module's variables that nothing but the spec sets) and returns file:line
// problems. A field the schema does not have (undeclared, or refused by additionalProperties:
// false) is an error: every call of such a resource would fail until the schema has it. A
// field the schema declares but neither requires nor defaults, or a schema too complex to
// read, is a warning: resources that leave the field out fail at run time. A version no
// resource in the folder uses, of a type with several versions, gets warnings only. dir is the
// validated folder; a module kept in a source's repository is read from the checkout dir
// belongs to.
func checkRequiredFields(dir string, cfg *config.Config, acts map[string]actions.Action, set *manifest.Set) (missing, warnings []string, err error) {
	repoDir := func(source string) string { return repositoryRoot(dir, cfg, source) }
	used := map[string]bool{} // apiVersion "\x00" kind
	for _, r := range set.Resources {
		used[r.APIVersion+"\x00"+r.Kind] = true
	}
	needs := map[string][]actions.RequiredField{}
	for _, t := range set.Types {
		r, ok := acts[t.Action.Name].(actions.SpecRequirer)
		if !ok {
			continue
		}
		fields, seen := needs[t.Action.Name]
		if !seen {
			var err error
			if fields, err = r.RequiredSpecFields(repoDir); err != nil {
				// A module the manifests' CI cannot read (the controller's folder) is the
				// controller's to check: say so, do not fail.
				warnings = append(warnings, fmt.Sprintf("action %s: %v: its types' schemas are not checked against it", t.Action.Name, err))
			}
			needs[t.Action.Name] = fields
		}
		for i, v := range t.Versions {
			at := fmt.Sprintf("spec.versions[%d].schema.properties", i)
			file := filepath.Join(dir, filepath.FromSlash(t.File))
			line := nodeLine(file, t.Line, "spec", "versions", i, "schema", "properties")
			if line == 0 {
				line = max(nodeLine(file, t.Line, "spec", "versions", i, "schema"), t.Line)
			}
			unused := len(t.Versions) > 1 && !used[t.Group+"/"+v.Name+"\x00"+t.Name]
			for _, f := range fields {
				support, err := manifest.TopLevelField(v.Schema, f.Name)
				if err != nil {
					return nil, nil, fmt.Errorf("%s: type %s: %w", t.File, t.Name, err)
				}
				need := fmt.Sprintf("%s:%d: %s: action %s needs spec.%s (variable %q at %s:%d has no default)",
					t.File, line, at, t.Action.Name, f.Name, f.Name, relPath(f.File), f.Line)
				leftOut := fmt.Sprintf("resources that leave `%s` out fail at run time", f.Name)
				switch support {
				case manifest.FieldGuaranteed:
				case manifest.FieldOptional:
					warnings = append(warnings, fmt.Sprintf("%s; %s: make it required or give it a default", need, leftOut))
				case manifest.FieldUnknown:
					warnings = append(warnings, fmt.Sprintf("%s; the schema's anyOf, oneOf, not, if or $ref decide whether a spec has it, and %s", need, leftOut))
				default:
					msg := fmt.Sprintf("%s, which the type's schema does not have: add `%s` to the type's schema (%s.%s)", need, f.Name, at, f.Name)
					if unused {
						warnings = append(warnings, fmt.Sprintf("%s (no resource here uses version %s)", msg, v.Name))
						continue
					}
					missing = append(missing, msg)
				}
			}
		}
	}
	return missing, warnings, nil
}

// repositoryRoot is the local checkout of source's repository that dir (the validated folder)
// is part of: dir with the source's path taken off its end, or the nearest folder above dir
// holding .git; "" when neither is found.
func repositoryRoot(dir string, cfg *config.Config, source string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for _, s := range cfg.Sources {
		sp := s.Spec()
		if s.Name != source || sp == nil || sp.Info().Path == "" {
			continue
		}
		p := filepath.Clean(filepath.FromSlash(sp.Info().Path))
		if strings.HasSuffix(abs, string(filepath.Separator)+p) {
			return strings.TrimSuffix(abs, string(filepath.Separator)+p)
		}
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// relPath is path relative to the working folder when it lies below it.
func relPath(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if r, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

// nodeLine is the line of the node at keys (strings for mapping keys, ints for sequence
// indexes) in the YAML document of file that starts at docLine, or 0 when it cannot be found
// (the file already passed validation; this only sharpens the line).
func nodeLine(file string, docLine int, keys ...any) int {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			return 0 // io.EOF: no document starts there
		}
		if len(doc.Content) == 0 || doc.Content[0].Line < docLine {
			continue
		}
		n, line := doc.Content[0], 0
		for _, k := range keys {
			if n, line = child(n, k); n == nil {
				return 0
			}
		}
		return line
	}
}

// child is the node at key under n and the line that names it (a mapping key's, a sequence
// item's).
func child(n *yaml.Node, key any) (*yaml.Node, int) {
	switch k := key.(type) {
	case string:
		if n.Kind != yaml.MappingNode {
			return nil, 0
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				return n.Content[i+1], n.Content[i].Line
			}
		}
	case int:
		if n.Kind == yaml.SequenceNode && k < len(n.Content) {
			return n.Content[k], n.Content[k].Line
		}
	}
	return nil, 0
}
