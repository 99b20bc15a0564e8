package specdiff

import (
	"strings"
	"testing"
)

// TestUnifiedHunks pins the hunks of `trueup diff` and pull-request previews, and the
// shape of a diff beyond the table size limit.
func TestUnifiedHunks(t *testing.T) {
	t.Parallel()
	lines := func(s string) []string { return strings.Fields(s) }
	cases := []struct {
		name, a, b string
		want       []string
	}{
		{"equal", "a b c", "a b c", nil},
		{"one changed", "a b c d e f g h i", "a b c d X f g h i",
			[]string{"@@ -2,7 +2,7 @@", " b", " c", " d", "-e", "+X", " f", " g", " h"}},
		{"added at end", "a b", "a b c", []string{"@@ -1,2 +1,3 @@", " a", " b", "+c"}},
		{"from empty", "", "a", []string{"@@ -0,0 +1 @@", "+a"}},
		{"to empty", "a b", "", []string{"@@ -1,2 +0,0 @@", "-a", "-b"}},
		{"two hunks", "1 2 3 4 5 6 7 8 9 10 11 12", "X 2 3 4 5 6 7 8 9 10 11 Y",
			[]string{"@@ -1,4 +1,4 @@", "-1", "+X", " 2", " 3", " 4", "@@ -9,4 +9,4 @@", " 9", " 10", " 11", "-12", "+Y"}},
		{"close changes share a hunk", "1 2 3 4 5 6 7 8", "X 2 3 4 5 6 7 Y",
			[]string{"@@ -1,8 +1,8 @@", "-1", "+X", " 2", " 3", " 4", " 5", " 6", " 7", "-8", "+Y"}},
		{"moved line", "a b c d", "b c a d", []string{"@@ -1,4 +1,4 @@", "-a", " b", " c", "+a", " d"}},
	}
	for _, tc := range cases {
		got := Unified(lines(tc.a), lines(tc.b), 3)
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
	// Beyond the table size limit the middle is shown replaced, still a valid diff.
	var a, b []string
	for i := range 3000 {
		a = append(a, "a"+strings.Repeat("x", i%7))
		b = append(b, "b"+strings.Repeat("x", i%7))
	}
	got := Unified(a, b, 3)
	if len(got) != 6001 || got[0] != "@@ -1,3000 +1,3000 @@" {
		t.Errorf("large diff: %d lines, header %q", len(got), got[0])
	}
}
