package execaction

import (
	"testing"
	"time"
)

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		5 * time.Minute:                  "5m",
		time.Hour:                        "1h",
		90 * time.Minute:                 "1h30m",
		90 * time.Second:                 "1m30s",
		300 * time.Millisecond:           "300ms",
		2*time.Hour + 5*time.Second:      "2h0m5s",
		10 * time.Second:                 "10s",
		time.Hour + 500*time.Millisecond: "1h0m0.5s",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q; want %q", d, got, want)
		}
	}
}
