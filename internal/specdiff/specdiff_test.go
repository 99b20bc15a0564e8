package specdiff

import (
	"reflect"
	"strings"
	"testing"
)

func TestJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, a, b string
		want       []string
	}{
		{"equal despite key order and spelling", `{"b":1,"a":2.0}`, `{"a":2,"b":1}`, nil},
		{"one field", `{"a":1,"b":2}`, `{"a":1,"b":3}`, []string{"--- old", "+++ new", "@@ -1,4 +1,4 @@", " {", `   "a": 1,`, `-  "b": 2`, `+  "b": 3`, " }"}},
		{"from nothing", ``, `{"a":1}`, []string{"--- old", "+++ new", "@@ -1 +1,3 @@", "-null", "+{", `+  "a": 1`, "+}"}},
	} {
		if got := JSON([]byte(tc.a), []byte(tc.b), "old", "new", 3); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}

func TestUnified(t *testing.T) {
	t.Parallel()
	l := func(s string) []string { return SplitLines(s) }
	for _, tc := range []struct {
		name string
		a, b []string
		ctx  int
		want []string
	}{
		{"equal", l("a\nb\n"), l("a\nb\n"), 3, nil},
		{"one line changed", l("a\nb\nc\n"), l("a\nB\nc\n"), 1, []string{"@@ -1,3 +1,3 @@", " a", "-b", "+B", " c"}},
		{"added at the end", l("a\n"), l("a\nb\n"), 0, []string{"@@ -1,0 +2 @@", "+b"}},
		{"removed at the start", l("a\nb\n"), l("b\n"), 0, []string{"@@ -1 +0,0 @@", "-a"}},
		{"from nothing", nil, l("x\ny\n"), 3, []string{"@@ -0,0 +1,2 @@", "+x", "+y"}},
		{"two hunks far apart", l("1\n2\n3\n4\n5\n6\n7\n8\n9\n"), l("X\n2\n3\n4\n5\n6\n7\n8\nY\n"), 1,
			[]string{"@@ -1,2 +1,2 @@", "-1", "+X", " 2", "@@ -8,2 +8,2 @@", " 8", "-9", "+Y"}},
		{"repeated lines", l("x\nx\nx\n"), l("x\nx\n"), 0, []string{"@@ -3 +2,0 @@", "-x"}},
	} {
		got := Unified(tc.a, tc.b, tc.ctx)
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s:\ngot  %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
