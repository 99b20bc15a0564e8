package execaction

import (
	"testing"

	"github.com/trueup-dev/trueup/actions"
)

func TestLockName(t *testing.T) {
	t.Parallel()
	res := func(ns, kind, name, uid string) actions.Resource {
		return actions.Resource{Namespace: ns, Kind: kind, Name: name, UID: uid}
	}
	orders := res("team-a", "Database", "orders", "6f1c2a4e-7b1d-4c55-9d0e-1b2c3d4e5f60")
	want := lockName(orders)
	if len(want) != len("res-")+32+len(".lock") {
		t.Fatalf("lockName = %q", want)
	}
	for _, tc := range []struct {
		name string
		res  actions.Resource
		same bool
	}{
		{"no uid (a preview's plan)", res("team-a", "Database", "orders", ""), true},
		{"another uid", res("team-a", "Database", "orders", "a/../b"), true},
		{"kind in another case", res("team-a", "database", "orders", ""), true},
		{"another namespace", res("team-b", "Database", "orders", ""), false},
		{"another kind", res("team-a", "Queue", "orders", ""), false},
		{"another name", res("team-a", "Database", "users", ""), false},
		{"parts shifted", res("team-a", "Databaseo", "rders", ""), false},
	} {
		if got := lockName(tc.res) == want; got != tc.same {
			t.Errorf("%s: same lock as %v: %v, want %v", tc.name, orders, got, tc.same)
		}
	}
}
