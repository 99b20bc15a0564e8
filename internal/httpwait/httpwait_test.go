package httpwait

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, v string
		want    time.Duration
		ok      bool
	}{
		{"absent", "", 0, false},
		{"seconds", "120", 2 * time.Minute, true},
		{"zero", "0", 0, true},
		{"spaces", " 7 ", 7 * time.Second, true},
		{"negative", "-3", 0, false},
		{"date ahead", "Thu, 26 Nov 2026 12:00:30 GMT", 30 * time.Second, true},
		{"date past", "Thu, 26 Nov 2026 11:00:00 GMT", 0, true},
		{"garbage", "soon", 0, false},
		{"fraction", "1.5", 0, false},
	} {
		h := http.Header{}
		if tc.v != "" {
			h.Set("Retry-After", tc.v)
		}
		d, ok := RetryAfter(h, now)
		if d != tc.want || ok != tc.ok {
			t.Errorf("%s: RetryAfter(%q) = %s, %v; want %s, %v", tc.name, tc.v, d, ok, tc.want, tc.ok)
		}
	}
}

func TestResetAt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, v string
		want    time.Time
		ok      bool
	}{
		{"absent", "", time.Time{}, false},
		{"unix time", "1790000000", time.Unix(1790000000, 0), true},
		{"spaces", " 1790000000 ", time.Unix(1790000000, 0), true},
		{"zero", "0", time.Time{}, false},
		{"garbage", "later", time.Time{}, false},
	} {
		h := http.Header{}
		if tc.v != "" {
			h.Set("X-RateLimit-Reset", tc.v)
		}
		got, ok := ResetAt(h, "X-RateLimit-Reset")
		if !got.Equal(tc.want) || ok != tc.ok {
			t.Errorf("%s: ResetAt(%q) = %s, %v; want %s, %v", tc.name, tc.v, got, ok, tc.want, tc.ok)
		}
	}
}
