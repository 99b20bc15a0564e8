package dirsource

import (
	"testing"

	"github.com/trueup-dev/trueup/sources"
	"github.com/trueup-dev/trueup/sources/sourcetest"
)

func TestSpec(t *testing.T) {
	t.Parallel()
	sourcetest.Run(t, func() sources.Spec { return &Spec{} }, []sourcetest.Case{
		{Name: "defaults", Text: "path: manifests", Info: sources.Info{Interval: sources.DefaultInterval, URL: "dir:///cfg/manifests"}},
		{Name: "absolute", Text: "{path: /srv/m, interval: 1h}", Info: sources.Info{Interval: 60 * sources.DefaultInterval, URL: "dir:///srv/m"}},
		{Name: "unknown key", Text: "{path: m, pth: x}", Err: "field pth not found"},
		{Name: "path required", Text: "interval: 5s", Err: "sources[0].dir.path: required"},
	})
}

func TestOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, err := Open(&Spec{Path: dir}, sources.Env{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if s := src.(*Source); s.cfg.Path != dir || s.cfg.Name != "a" {
		t.Errorf("config %+v", s.cfg)
	}
	_ = src.Close()
	if src, err := Open(&Spec{}, sources.Env{Name: "a"}); err == nil || src != nil {
		t.Errorf("no path: %v, %v", src, err)
	}
}
