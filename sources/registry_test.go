package sources

import (
	"context"
	"strings"
	"testing"
)

// fakeSpec is a kind's block in tests.
type fakeSpec struct{ kind string }

func (s *fakeSpec) Kind() string                 { return s.kind }
func (s *fakeSpec) Defaults(func(string) string) {}
func (s *fakeSpec) Validate(string) error        { return nil }
func (s *fakeSpec) Info() Info                   { return Info{URL: "fake://" + s.kind} }
func (s *fakeSpec) Files() []string              { return nil }

// fakeSource is a source that serves nothing.
type fakeSource struct{ name string }

func (fakeSource) Head(context.Context) (string, error) { return "r1", nil }
func (fakeSource) Fetch(context.Context, string) (*Snapshot, error) {
	return &Snapshot{Revision: "r1"}, nil
}
func (fakeSource) Close() error { return nil }

func TestRegistry(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	open := func(spec Spec, env Env) (Source, error) { return fakeSource{name: env.Name}, nil }
	if err := r.Register("fake", open); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("dir", open); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.Kinds(), ","); got != "dir,fake" {
		t.Errorf("kinds %s", got)
	}
	src, err := r.New(&fakeSpec{kind: "fake"}, Env{Name: "a"})
	if err != nil || src.(fakeSource).name != "a" {
		t.Errorf("new: %v, %v", src, err)
	}
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"unknown kind", &fakeSpec{kind: "svn"}, `unknown source kind "svn" (known: [dir fake])`},
		{"no kind", nil, "no source kind configured"},
	} {
		if _, err := r.New(tc.spec, Env{Name: "a"}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
