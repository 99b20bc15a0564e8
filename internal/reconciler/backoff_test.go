package reconciler

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	s := time.Second
	cases := []struct {
		name         string
		attempt      int
		initial, max time.Duration
		r            float64
		want         time.Duration
	}{
		{"first retry, no jitter drawn low", 1, 5 * s, time.Hour, 0, 4 * s},
		{"first retry, middle", 1, 5 * s, time.Hour, 0.5, 5 * s},
		{"first retry, top", 1, 5 * s, time.Hour, 0.999999, 6 * s},
		{"doubles", 3, 5 * s, time.Hour, 0.5, 20 * s},
		{"capped: top of the jitter is the cap", 10, s, 4 * s, 0.999999, 4 * s},
		{"capped: bottom is 80% of the cap", 10, s, 4 * s, 0, 3200 * time.Millisecond},
		{"an hour cap never waits 72 minutes", 40, 5 * s, time.Hour, 0.999999, time.Hour},
		{"max below initial is raised to initial", 3, 5 * s, s, 0.999999, 5 * s},
		{"below the cap: the top is 120%", 3, s, 5 * s, 0.999999, 4800 * time.Millisecond},
		{"near the cap: the top is clipped to it", 3, s, 4500 * time.Millisecond, 0.999999, 4500 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Backoff(c.attempt, c.initial, c.max, c.r)
			if d := got - c.want; d > time.Millisecond || d < -time.Millisecond {
				t.Fatalf("Backoff(%d, %s, %s, %v) = %s, want %s", c.attempt, c.initial, c.max, c.r, got, c.want)
			}
		})
	}
	for a := 1; a < 70; a++ {
		for _, r := range []float64{0, 0.3, 0.9999} {
			if got := Backoff(a, s, 4*s, r); got > 4*s || got < 800*time.Millisecond {
				t.Fatalf("attempt %d r %v: %s outside [0.8s, 4s]", a, r, got)
			}
		}
	}
}
