package dirsource

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/trueup-dev/trueup/sources"
)

func TestSpecDecode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		want       sources.Info
		err        string
	}{
		{"defaults", "path: manifests", sources.Info{Interval: time.Minute, URL: "dir:///cfg/manifests"}, ""},
		{"absolute", "{path: /srv/m, interval: 5s}", sources.Info{Interval: 5 * time.Second, URL: "dir:///srv/m"}, ""},
		{"unknown key", "{path: m, pth: x}", sources.Info{}, "field pth not found"},
		{"path required", "interval: 5s", sources.Info{}, "sources[0].dir.path: required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dec := yaml.NewDecoder(bytes.NewReader([]byte(tc.text)))
			dec.KnownFields(true)
			var s Spec
			err := dec.Decode(&s)
			if err == nil {
				s.Defaults(func(p string) string {
					if p == "" || strings.HasPrefix(p, "/") {
						return p
					}
					return "/cfg/" + p
				})
				err = s.Validate("sources[0].dir")
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Info(); got != tc.want {
				t.Errorf("info %+v, want %+v", got, tc.want)
			}
			if s.Files() != nil || s.Kind() != "dir" {
				t.Errorf("files %q, kind %q", s.Files(), s.Kind())
			}
		})
	}
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
