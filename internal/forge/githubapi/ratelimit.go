package githubapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/trueup-dev/trueup/internal/httpwait"
)

// DefaultLimitWait is the wait of a rate limit that names no reset time.
const DefaultLimitWait = time.Minute

// RateLimitUntil reports whether err is a GitHub rate limit, and when requests may resume.
// It covers a 403 with X-RateLimit-Remaining: 0 (*github.RateLimitError, also returned
// locally by go-github until the reset), a secondary limit (*github.AbuseRateLimitError, also
// returned locally until Retry-After has passed) and a 429, which go-github returns as a
// plain *github.ErrorResponse; and a call not sent while another met the limit
// (*PausedError).
func RateLimitUntil(err error, now time.Time) (time.Time, bool) {
	if err == nil {
		return time.Time{}, false
	}
	var pe *PausedError
	if errors.As(err, &pe) {
		return pe.Until, true
	}
	var rle *github.RateLimitError
	if errors.As(err, &rle) {
		t := rle.Rate.Reset.Time
		if t.IsZero() && rle.Response != nil {
			t = ResetFromHeaders(rle.Response.Header, now)
		}
		return notBefore(t, now), true
	}
	var are *github.AbuseRateLimitError
	if errors.As(err, &are) {
		d := DefaultLimitWait
		if are.RetryAfter != nil && *are.RetryAfter > 0 {
			d = *are.RetryAfter
		}
		return now.Add(d), true
	}
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return limitOf(er.Response.StatusCode, er.Response.Header, now)
	}
	return time.Time{}, false
}

// limitOf reports whether an answer is a rate limit (a 429, or a 403 with Retry-After or no
// request left), and when requests may resume.
func limitOf(code int, h http.Header, now time.Time) (time.Time, bool) {
	switch {
	case code == http.StatusTooManyRequests,
		code == http.StatusForbidden && (h.Get("Retry-After") != "" || h.Get("X-RateLimit-Remaining") == "0"):
		return notBefore(ResetFromHeaders(h, now), now), true
	}
	return time.Time{}, false
}

// ResetFromHeaders reads Retry-After (seconds or a date) or X-RateLimit-Reset (epoch
// seconds); DefaultLimitWait from now when neither is there.
func ResetFromHeaders(h http.Header, now time.Time) time.Time {
	if d, ok := httpwait.RetryAfter(h, now); ok {
		return now.Add(d)
	}
	if t, ok := httpwait.ResetAt(h, "X-RateLimit-Reset"); ok {
		return t
	}
	return now.Add(DefaultLimitWait)
}

// notBefore keeps a reset time that is unknown or already past from causing a tight loop.
func notBefore(t, now time.Time) time.Time {
	if t.IsZero() {
		return now.Add(DefaultLimitWait)
	}
	if !t.After(now) {
		return now.Add(time.Second)
	}
	return t
}
