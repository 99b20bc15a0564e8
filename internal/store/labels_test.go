package store

import (
	"reflect"
	"testing"
)

func TestParseLabelSelector(t *testing.T) {
	t.Parallel()
	got, err := ParseLabelSelector("team=red, tier!=low,env in (prod, staging),x notin (a),has,!gone,app.kubernetes.io/name==web")
	if err != nil {
		t.Fatal(err)
	}
	want := []LabelRequirement{
		{Key: "team", Op: "=", Values: []string{"red"}},
		{Key: "tier", Op: "!=", Values: []string{"low"}},
		{Key: "env", Op: "in", Values: []string{"prod", "staging"}},
		{Key: "x", Op: "notin", Values: []string{"a"}},
		{Key: "has", Op: "exists"},
		{Key: "gone", Op: "!exists"},
		{Key: "app.kubernetes.io/name", Op: "=", Values: []string{"web"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	for _, bad := range []string{"", "a=b,,c", "==", "k in a,b", "bad key=1", "-x"} {
		if _, err := ParseLabelSelector(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
