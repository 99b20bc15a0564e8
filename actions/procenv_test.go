package actions

import (
	"slices"
	"testing"
)

func TestParseEnv(t *testing.T) {
	reserved := func(k string) string {
		if k == "TRUEUP_X" {
			return "set by trueup"
		}
		return ""
	}
	tests := []struct {
		name    string
		env     map[string]string
		vars    []string
		secrets []string
		err     string
	}{
		{"empty", nil, nil, nil, ""},
		{"sorted, secrets longest first", map[string]string{"B": "1", "API_TOKEN": "abcdef", "DB_PASSWORD": "abcdefgh", "SHORT_TOKEN": "abc"},
			[]string{"API_TOKEN=abcdef", "B=1", "DB_PASSWORD=abcdefgh", "SHORT_TOKEN=abc"}, []string{"abcdefgh", "abcdef"}, ""},
		{"bad name", map[string]string{"A=B": "x"}, nil, nil, `config: env: invalid variable name "A=B"`},
		{"reserved", map[string]string{"TRUEUP_X": "x"}, nil, nil, "config: env TRUEUP_X: set by trueup"},
		{"NUL in a value, never quoted", map[string]string{"K": "se\x00cret"}, nil, nil, "config: env K: value contains a NUL byte"},
	}
	for _, tt := range tests {
		vars, secrets, err := ParseEnv(tt.env, reserved, 6)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%s: err %v, want %s", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(vars, tt.vars) || !slices.Equal(secrets, tt.secrets) {
			t.Errorf("%s: %v %v %v", tt.name, vars, secrets, err)
		}
	}
}
