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
	for _, bad := range []string{"", "a=b,,c", "==", "k in a,b", "bad key=1", "-x", "k in", "k notin a", "k in(a", "k=v in(a)", "in(a)"} {
		if _, err := ParseLabelSelector(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestParseLabelSelectorNoSpace: kubectl needs no space before the parenthesis.
func TestParseLabelSelectorNoSpace(t *testing.T) {
	t.Parallel()
	for sel, want := range map[string][]LabelRequirement{
		"team in(a,b)":      {{Key: "team", Op: "in", Values: []string{"a", "b"}}},
		"team notin(a)":     {{Key: "team", Op: "notin", Values: []string{"a"}}},
		"team  in\t(a, b )": {{Key: "team", Op: "in", Values: []string{"a", "b"}}},
		"env in(prod),x notin(a,b),has": {
			{Key: "env", Op: "in", Values: []string{"prod"}},
			{Key: "x", Op: "notin", Values: []string{"a", "b"}},
			{Key: "has", Op: "exists"},
		},
		"inside in(a)":                         {{Key: "inside", Op: "in", Values: []string{"a"}}},
		"app.kubernetes.io/part-of notin(web)": {{Key: "app.kubernetes.io/part-of", Op: "notin", Values: []string{"web"}}},
	} {
		got, err := ParseLabelSelector(sel)
		if err != nil {
			t.Errorf("%q: %v", sel, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %+v\nwant %+v", sel, got, want)
		}
	}
}
