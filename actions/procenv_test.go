package actions

import (
	"slices"
	"testing"
	"time"
)

func TestParseTimeout(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"", time.Minute, ""},
		{"0", time.Minute, ""},
		{"0s", time.Minute, ""},
		{"90s", 90 * time.Second, ""},
		{"-1s", 0, "config: timeout -1s is negative"},
		{"soon", 0, `config: timeout: time: invalid duration "soon"`},
	}
	for _, tt := range tests {
		got, err := ParseTimeout(tt.in, time.Minute)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%q: err %v, want %s", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q: %v %v, want %v", tt.in, got, err, tt.want)
		}
	}
}

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
