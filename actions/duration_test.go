package actions

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
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
		got, err := ParseDuration("timeout", tt.in, time.Minute)
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
