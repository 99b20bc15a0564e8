package render

import (
	"context"
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

// Kustomizations is the render function of a kustomize block over a source's path root.
func Kustomizations(root string, k config.Kustomize, timeout time.Duration) Func {
	opt := Options{Root: root, Paths: k.Paths, MaxResources: k.MaxResources, Timeout: timeout}
	return func(ctx context.Context, files []sources.File) ([]sources.File, error) {
		return Kustomize(ctx, files, opt)
	}
}
