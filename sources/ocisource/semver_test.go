package ocisource

import "testing"

func TestPickSemver(t *testing.T) {
	t.Parallel()
	tags := []string{"latest", "v1.0.0", "1.2.0", "v1.10.0-rc.1", "v2.0.0", "main-abc123", "v1.2"}
	for _, tc := range []struct{ rng, want string }{
		{">=1.0.0 <2.0.0", "1.2.0"},
		{"~1.0", "v1.0.0"},
		{">=1.10.0-rc.0 <2.0.0", "v1.10.0-rc.1"}, // a range naming a prerelease admits it
		{"*", "v2.0.0"},
		{">=3", ""},
	} {
		got, err := pickSemver(tc.rng, tags)
		if got != tc.want || (err != nil) != (tc.want == "") {
			t.Errorf("%q: %q, %v; want %q", tc.rng, got, err, tc.want)
		}
	}
}
