package labelsel

import "testing"

func TestMatches(t *testing.T) {
	t.Parallel()
	labels := map[string]string{"tier": "critical", "team": "db"}
	tests := []struct {
		sel  string
		want bool
	}{
		{"tier=critical", true},
		{"tier=low", false},
		{"tier!=low", true},
		{"tier!=critical", false},
		{"team", true},
		{"!team", false},
		{"!owner", true},
		{"owner", false},
		{"tier in (critical,high)", true},
		{"tier in (high)", false},
		{"tier notin (high)", true},
		{"tier notin (critical)", false},
		{"owner notin (x)", true},
		{"tier=critical,team=db", true},
		{"tier=critical,team=web", false},
	}
	for _, tc := range tests {
		reqs, err := Parse(tc.sel)
		if err != nil {
			t.Fatalf("%q: %v", tc.sel, err)
		}
		if got := Matches(reqs, labels); got != tc.want {
			t.Errorf("Matches(%q) = %v, want %v", tc.sel, got, tc.want)
		}
	}
	if !Matches(nil, nil) {
		t.Error("an empty selector matches nothing")
	}
}
