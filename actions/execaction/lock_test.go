package execaction

import (
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/actions"
)

func TestLockName(t *testing.T) {
	t.Parallel()
	r := func(uid string) actions.Resource {
		return actions.Resource{Namespace: "team-a", Kind: "Database", Name: "orders", UID: uid}
	}
	for _, tc := range []struct {
		name string
		res  actions.Resource
		want string // exact, or a prefix ending in "-"
	}{
		{"uuid", r("6f1c2a4e-7b1d-4c55-9d0e-1b2c3d4e5f60"), "uid-6f1c2a4e-7b1d-4c55-9d0e-1b2c3d4e5f60.lock"},
		{"slash", r("a/../b"), "sha256-"},
		{"dot first", r(".hidden"), "sha256-"},
		{"no uid", r(""), "sha256-"},
		{"too long", r(strings.Repeat("a", 101)), "sha256-"},
	} {
		got := lockName(tc.res)
		if strings.HasSuffix(tc.want, "-") && strings.HasPrefix(got, tc.want) && len(got) == len("sha256-")+32+len(".lock") {
			continue
		}
		if got != tc.want {
			t.Errorf("%s: lockName = %q, want %q", tc.name, got, tc.want)
		}
	}
	if lockName(r("")) == lockName(actions.Resource{Namespace: "team-b", Kind: "Database", Name: "orders"}) {
		t.Error("resources without a UID share a lock")
	}
}
