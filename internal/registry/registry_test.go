package registry

import (
	"strings"
	"testing"
)

func TestKinds(t *testing.T) {
	t.Parallel()
	k := New[func() int]("thing")
	one := func() int { return 1 }
	for _, tc := range []struct {
		name, kind string
		f          func() int
		want       string
	}{
		{"first", "b", one, ""},
		{"second", "a", one, ""},
		{"twice", "b", one, `register thing: kind "b" registered twice`},
		{"empty kind", "", one, "register thing: empty kind or nil factory"},
		{"nil factory", "c", nil, "register thing: empty kind or nil factory"},
	} {
		err := k.Register(tc.kind, tc.f)
		if (tc.want == "" && err != nil) || (tc.want != "" && (err == nil || err.Error() != tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if got := strings.Join(k.Names(), ","); got != "a,b" {
		t.Errorf("names %s", got)
	}
	if f, ok := k.Get("a"); !ok || f() != 1 {
		t.Error("a not found")
	}
	if _, ok := k.Get("c"); ok {
		t.Error("c found")
	}
}
