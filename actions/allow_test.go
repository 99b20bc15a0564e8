package actions_test

import (
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/actions"
)

func TestAllowlist(t *testing.T) {
	t.Parallel()
	refs := actions.Allowlist{"main", "release/*", "v[0-9]*"}
	for _, tc := range []struct {
		list actions.Allowlist
		v    string
		want bool
	}{
		{nil, "anything/at/all", true}, // key absent: no restriction
		{actions.Allowlist{}, "main", false},
		{refs, "main", true},
		{refs, "release/1.2", true},
		{refs, "release/", true}, // * matches the empty string
		{refs, "release/1.2/hotfix", false},
		{refs, "release", false},
		{refs, "v2", true},
		{refs, "v2.1.0", true},
		{refs, "vx", false},
		{refs, "mainline", false},
		{refs, "evil", false},
		{refs, "", false},
		{actions.Allowlist{"DEPLOY_*", "TIER"}, "DEPLOY_REGION", true},
		{actions.Allowlist{"DEPLOY_*", "TIER"}, "TIER", true},
		{actions.Allowlist{"DEPLOY_*", "TIER"}, "CI_DEBUG_TRACE", false},
		{actions.Allowlist{"a[b"}, "a[b", true}, // a bad glob still matches itself (refused at config time)
	} {
		if got := tc.list.Allows(tc.v); got != tc.want {
			t.Errorf("%q.Allows(%q) = %v; want %v", tc.list, tc.v, got, tc.want)
		}
	}

	err := actions.Allowlist{"main", "release/*"}.Check("with.ref", "evil", "allowedRefs")
	if want := `with.ref: "evil" is not in the action's allowedRefs [main release/*]`; err == nil || err.Error() != want {
		t.Errorf("Check = %v; want %q", err, want)
	}
	if !actions.IsTerminal(err) {
		t.Error("Check's error is not terminal")
	}
	if err := refs.Check("with.ref", "main", "allowedRefs"); err != nil {
		t.Errorf("Check(main) = %v", err)
	}

	for _, tc := range []struct {
		list actions.Allowlist
		want string
	}{
		{refs, ""},
		{actions.Allowlist{"main", ""}, "allowedRefs: empty entry"},
		{actions.Allowlist{"release/[a"}, `allowedRefs: "release/[a" is not a valid pattern`},
	} {
		err := tc.list.CheckPatterns("allowedRefs")
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckPatterns(%q) = %v; want %q", tc.list, err, tc.want)
		}
	}
}
