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
