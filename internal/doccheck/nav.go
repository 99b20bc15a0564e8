package doccheck

import (
	"fmt"

	yaml "go.yaml.in/yaml/v3"
)

// NavEntry is one page of the mkdocs.yml nav: its title ("" for a bare path), its path
// relative to docs_dir, and the line it is on.
type NavEntry struct {
	Line  int
	Title string
	Path  string
}

// Site is what the checker reads from mkdocs.yml.
type Site struct {
	DocsDir string // docs_dir, "docs" when unset
	Nav     []NavEntry
}

// ParseMkdocs reads mkdocs.yml's docs_dir and the pages of its nav, sections flattened in
// order. External URLs in the nav are left out; a nav item that is neither a path, a
// "Title: path" pair nor a "Section: [items]" pair is an error naming its line.
func ParseMkdocs(src []byte) (Site, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return Site{}, fmt.Errorf("mkdocs.yml: %w", err)
	}
	site := Site{DocsDir: "docs"}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return Site{}, fmt.Errorf("mkdocs.yml: not a mapping")
	}
	top := doc.Content[0]
	var nav *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		switch top.Content[i].Value {
		case "docs_dir":
			site.DocsDir = top.Content[i+1].Value
		case "nav":
			nav = top.Content[i+1]
		}
	}
	if nav == nil {
		return Site{}, fmt.Errorf("mkdocs.yml: no nav")
	}
	var err error
	site.Nav, err = navItems(nav, nil)
	return site, err
}

func navItems(n *yaml.Node, into []NavEntry) ([]NavEntry, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("mkdocs.yml:%d: nav: a list expected", n.Line)
	}
	for _, item := range n.Content {
		switch {
		case item.Kind == yaml.ScalarNode:
			if !IsExternal(item.Value) {
				into = append(into, NavEntry{Line: item.Line, Path: item.Value})
			}
		case item.Kind == yaml.MappingNode && len(item.Content) == 2:
			title, val := item.Content[0].Value, item.Content[1]
			switch val.Kind {
			case yaml.ScalarNode:
				if !IsExternal(val.Value) {
					into = append(into, NavEntry{Line: val.Line, Title: title, Path: val.Value})
				}
			case yaml.SequenceNode:
				var err error
				if into, err = navItems(val, into); err != nil {
					return nil, err
				}
			default:
				return nil, fmt.Errorf("mkdocs.yml:%d: nav item %q: a path or a list expected", val.Line, title)
			}
		default:
			return nil, fmt.Errorf("mkdocs.yml:%d: nav item: a path or one \"Title: path\" pair expected", item.Line)
		}
	}
	return into, nil
}
