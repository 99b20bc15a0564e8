package ocisource

import "testing"

func TestPickSemver(t *testing.T) {
	t.Parallel()
	tags := []string{"latest", "v1.0.0", "1.2.0", "v1.10.0-rc.1", "v2.0.0", "main-abc123", "v1.2", "1.2", "20240101", "1234"}
	for _, tc := range []struct{ rng, want string }{
		{">=1.0.0 <2.0.0", "1.2.0"},
		{"~1.0", "v1.0.0"},
		{">=1.10.0-rc.0 <2.0.0", "v1.10.0-rc.1"}, // a range naming a prerelease admits it
		{"*", "v2.0.0"},
		{">=1.2.0 <1.3.0", "1.2.0"}, // not 1.2 nor v1.2: they are not versions
		{">=3", ""},                 // not 20240101 nor 1234
	} {
		got, err := pickSemver(tc.rng, tags)
		if got != tc.want || (err != nil) != (tc.want == "") {
			t.Errorf("%q: %q, %v; want %q", tc.rng, got, err, tc.want)
		}
	}
}

// A date or a number is not a version, whatever the range.
func TestPickSemverStrict(t *testing.T) {
	t.Parallel()
	if got, err := pickSemver(">=1.0.0", []string{"v1.2.0", "20240101", "latest"}); got != "v1.2.0" || err != nil {
		t.Errorf("%q, %v; want v1.2.0", got, err)
	}
	if got, err := pickSemver("*", []string{"20240101", "1.2", "1234"}); got != "" || err == nil {
		t.Errorf("%q, %v; want no tag", got, err)
	}
}
