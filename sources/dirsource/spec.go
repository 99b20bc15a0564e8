package dirsource

import (
	"fmt"
	"time"

	"github.com/trueup-dev/trueup/sources"
)

// Kind is the registry's name of folder sources: the `dir:` block of a source.
const Kind = "dir"

// Spec is a local folder watched with fsnotify (development).
type Spec struct {
	// Path is the folder; relative to the config file's folder.
	Path string `yaml:"path"`
	// Interval is how often the folder is read again besides the change notifications.
	Interval time.Duration `yaml:"interval"`
}

// Kind is "dir".
func (s *Spec) Kind() string { return Kind }

// Defaults resolves the folder and reads it every sources.DefaultInterval.
func (s *Spec) Defaults(path func(string) string) {
	s.Path = path(s.Path)
	if s.Interval == 0 {
		s.Interval = sources.DefaultInterval
	}
}

// Validate checks the block; at is "sources[i].dir".
func (s *Spec) Validate(at string) error {
	if s.Path == "" {
		return fmt.Errorf("%s.path: required", at)
	}
	return nil
}

// Info registers the folder as dir://<path>; a folder has no revisions to follow.
func (s *Spec) Info() sources.Info {
	return sources.Info{Interval: s.Interval, URL: "dir://" + s.Path}
}

// Files is empty: the folder is the source's content, not a file it is built from.
func (s *Spec) Files() []string { return nil }

// Open is the registry's factory of folder sources: spec is a *Spec.
func Open(spec sources.Spec, env sources.Env) (sources.Source, error) {
	s, ok := spec.(*Spec)
	if !ok {
		return nil, fmt.Errorf("dir source %q: spec is a %T, not a *dirsource.Spec", env.Name, spec)
	}
	src, err := New(Config{Name: env.Name, Path: s.Path, AllFiles: env.AllFiles}, env.Logger)
	if err != nil {
		return nil, err
	}
	return src, nil
}

var _ sources.Spec = (*Spec)(nil)
