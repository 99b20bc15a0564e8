package config

import (
	"fmt"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Render renders a source's files into manifests before they are read: `render: kustomize`,
// or `render: {kustomize: {paths: [overlays/*], maxResources: 2000}}`. The rendered output is
// then the revision's only manifests.
type Render struct {
	// Kustomize builds kustomizations in process from the revision's files only: remote
	// bases, URLs, Helm, exec and KRM-function plugins are refused.
	Kustomize *Kustomize `yaml:"kustomize"`
}

// Kustomize says which kustomizations a source renders.
type Kustomize struct {
	// Paths are the kustomization folders, relative to the source's path; `*` matches one
	// folder name (overlays/*). Several are rendered in parallel and their outputs read
	// together. Default: the source's path itself.
	Paths []string `yaml:"paths"`
	// MaxResources caps the resources of one kustomization (default 2000): kustomize's time
	// grows with the square of it, so a larger fleet is split into several kustomizations.
	// A kustomization of custom kinds alone whose steps each work on one resource (names,
	// namespace, labels, annotations, patches with a target) is built resource by resource,
	// in time linear in its resources; it falls back to one build when that disagrees (a
	// resource dropped, two made one), so raise the cap only as far as one build fits in the
	// source's timeout.
	MaxResources int `yaml:"maxResources"`
}

// UnmarshalYAML accepts the scalar kustomize or a mapping.
func (r *Render) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if n.Value != "kustomize" {
			return fmt.Errorf("line %d: render must be kustomize or {kustomize: {paths: [...]}}, not %q", n.Line, n.Value)
		}
		r.Kustomize = &Kustomize{}
		return nil
	}
	type plain Render
	return decodeStrict(n, (*plain)(r), "Render")
}

func validateRender(at string, r *Render, bad func(string, ...any)) {
	k := r.Kustomize
	if k == nil {
		bad("%s: kustomize is required (render: kustomize, or render: {kustomize: {paths: [...]}})", at)
		return
	}
	for i, p := range k.Paths {
		pat := fmt.Sprintf("%s.kustomize.paths[%d]", at, i)
		_, err := path.Match(p, "")
		switch {
		case strings.TrimSpace(p) == "":
			bad("%s: empty", pat)
		case path.IsAbs(p) || strings.HasPrefix(p, `\`):
			bad("%s: %q must be relative to the source's path", pat, p)
		case p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, "/../") || strings.HasSuffix(p, "/.."):
			bad("%s: %q leads out of the source's path", pat, p)
		case err != nil:
			bad("%s: %q is not a valid pattern: %v", pat, p, err)
		}
	}
	if k.MaxResources < 0 {
		bad("%s.kustomize.maxResources: %d is negative (0 takes the default)", at, k.MaxResources)
	}
}

// UnmarshalYAML decodes strictly: Render's decoder does not pass KnownFields on.
func (k *Kustomize) UnmarshalYAML(n *yaml.Node) error {
	type plain Kustomize
	return decodeStrict(n, (*plain)(k), "Kustomize")
}
