package render

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/sources"
)

// Func renders one revision's files into the files the loader reads: the hook of the
// syncer, the preview checker and the CLI.
type Func func(ctx context.Context, files []sources.File) ([]sources.File, error)

// ForSource is the render function of source s, nil when it renders nothing. Its paths are
// relative to the source's path; timeout bounds one render (0: DefaultTimeout).
func ForSource(s config.Source, timeout time.Duration) Func {
	if s.Render == nil || s.Render.Kustomize == nil {
		return nil
	}
	root := ""
	if sp := s.Spec(); sp != nil {
		root = sp.Info().Path
	}
	return Kustomizations(root, *s.Render.Kustomize, timeout)
}

// Kustomizations is the render function of a kustomize block over a source's path root. It
// keeps a cache: a revision renders again only the kustomizations whose files changed.
func Kustomizations(root string, k config.Kustomize, timeout time.Duration) Func {
	opt := Options{Root: root, Paths: k.Paths, MaxResources: k.MaxResources, Timeout: timeout, Cache: NewCache()}
	return func(ctx context.Context, files []sources.File) ([]sources.File, error) {
		return Kustomize(ctx, files, opt)
	}
}

// ForCLI is the render function of `trueup validate` and `trueup diff` over a folder whose
// files are named root/…: the kustomization paths given (--kustomize), else the render block
// of source in cfg. nil when neither asks for a render. source "" is the config's only source.
func ForCLI(root string, kustomize []string, cfg *config.Config, source string) (Func, error) {
	if len(kustomize) > 0 {
		return Kustomizations(root, config.Kustomize{Paths: kustomize}, 0), nil
	}
	if cfg == nil {
		return nil, nil
	}
	for _, s := range cfg.Sources {
		if s.Name == source || (source == "" && len(cfg.Sources) == 1) {
			if s.Render == nil || s.Render.Kustomize == nil {
				return nil, nil
			}
			return Kustomizations(root, *s.Render.Kustomize, 0), nil
		}
	}
	if source != "" {
		return nil, fmt.Errorf("source %q is not declared in the config", source)
	}
	for _, s := range cfg.Sources {
		if s.Render != nil {
			return nil, errors.New("the config declares several sources and some render: name the one DIR belongs to with --source")
		}
	}
	return nil, nil
}
