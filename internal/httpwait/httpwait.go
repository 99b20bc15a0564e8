// Package httpwait reads how long an HTTP server asks its client to wait before trying again:
// the one parser of Retry-After and of the rate-limit reset headers forges send.
package httpwait

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryAfter reads the Retry-After header: delay-seconds or an HTTP date (RFC 9110). ok is
// false when the header is absent or unreadable; a date in the past waits 0.
func RetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// ResetAt reads a rate-limit reset header holding a Unix time in seconds (GitHub's
// X-RateLimit-Reset, GitLab's RateLimit-Reset). ok is false when it is absent, unreadable or
// not positive.
func ResetAt(h http.Header, name string) (t time.Time, ok bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(h.Get(name)), 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}, false
	}
	return time.Unix(n, 0), true
}
