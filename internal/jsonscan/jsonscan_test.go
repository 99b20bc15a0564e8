package jsonscan

import (
	"slices"
	"testing"
)

func TestNumbers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		v    string
		want []string
	}{
		{`{"a": 1, "b": [2.5, -3e10, true, null], "c": "1e5"}`, []string{"1", "2.5", "-3e10"}},
		{`{"12": 1E+7}`, []string{"1E+7"}},
		{`["a \" 4 \\", 5, "\u0036", 7]`, []string{"5", "7"}},
		{`-0.5`, []string{"-0.5"}},
		{`"only a string 9"`, nil},
		{``, nil},
	}
	for _, tc := range cases {
		var got []string
		for n := range Numbers([]byte(tc.v)) {
			got = append(got, string(n))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Numbers(%s) = %q, want %q", tc.v, got, tc.want)
		}
	}
	// Stopping early stops the walk.
	var first []string
	for n := range Numbers([]byte(`[1, 2, 3]`)) {
		first = append(first, string(n))
		break
	}
	if !slices.Equal(first, []string{"1"}) {
		t.Errorf("stopped after %q", first)
	}
}
