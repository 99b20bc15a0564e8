package ghactions

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/httpwait"
)

// Rate limit handling.
const (
	// conditionRateLimited is the plugin condition reporting a GitHub rate limit.
	conditionRateLimited = "RateLimited"
	// defaultLimitWait is used when GitHub names no reset time.
	defaultLimitWait = time.Minute
	// maxLimitJitter spreads the resources that waited for one reset.
	maxLimitJitter = 2 * time.Second
)

// rateLimitUntil reports whether err is a GitHub rate limit, and when requests may resume.
// It covers a 403 with X-RateLimit-Remaining: 0 (*github.RateLimitError, also returned
// locally by go-github until the reset), a secondary limit (*github.AbuseRateLimitError, also
// returned locally until Retry-After has passed) and a 429, which go-github returns as a
// plain *github.ErrorResponse.
func rateLimitUntil(err error, now time.Time) (time.Time, bool) {
	if err == nil {
		return time.Time{}, false
	}
	var rle *github.RateLimitError
	if errors.As(err, &rle) {
		t := rle.Rate.Reset.Time
		if t.IsZero() && rle.Response != nil {
			t = resetFromHeaders(rle.Response.Header, now)
		}
		return notBefore(t, now), true
	}
	var are *github.AbuseRateLimitError
	if errors.As(err, &are) {
		d := defaultLimitWait
		if are.RetryAfter != nil && *are.RetryAfter > 0 {
			d = *are.RetryAfter
		}
		return now.Add(d), true
	}
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		h := er.Response.Header
		switch {
		case er.Response.StatusCode == http.StatusTooManyRequests,
			er.Response.StatusCode == http.StatusForbidden && (h.Get("Retry-After") != "" || h.Get("X-RateLimit-Remaining") == "0"):
			return notBefore(resetFromHeaders(h, now), now), true
		}
	}
	return time.Time{}, false
}

// resetFromHeaders reads Retry-After (seconds or a date) or X-RateLimit-Reset (epoch seconds).
func resetFromHeaders(h http.Header, now time.Time) time.Time {
	if d, ok := httpwait.RetryAfter(h, now); ok {
		return now.Add(d)
	}
	if t, ok := httpwait.ResetAt(h, "X-RateLimit-Reset"); ok {
		return t
	}
	return now.Add(defaultLimitWait)
}

// notBefore keeps a reset time that is unknown or already past from causing a tight loop.
func notBefore(t, now time.Time) time.Time {
	if t.IsZero() {
		return now.Add(defaultLimitWait)
	}
	if !t.After(now) {
		return now.Add(time.Second)
	}
	return t
}

// isRateLimit reports whether err is a GitHub rate limit.
func isRateLimit(err error) bool {
	_, ok := rateLimitUntil(err, time.Now())
	return ok
}

// limitJitter is added to a reset wait so the resources that waited do not return together.
func limitJitter(wait time.Duration) time.Duration {
	limit := min(wait/10, maxLimitJitter)
	if limit <= 0 {
		return 0
	}
	return rand.N(limit)
}

func rateLimitedCondition(until time.Time) actions.Condition {
	return actions.Condition{
		Type:    conditionRateLimited,
		Status:  "True",
		Reason:  "GitHubRateLimit",
		Message: rateLimitMessage(until),
	}
}

// withinLimitCondition clears RateLimited on every call that reached GitHub.
func withinLimitCondition() actions.Condition {
	return actions.Condition{Type: conditionRateLimited, Status: "False", Reason: "WithinRateLimit"}
}

func rateLimitMessage(until time.Time) string {
	return fmt.Sprintf("GitHub API rate limit exceeded; waiting, limit resets at %s", until.UTC().Format(time.RFC3339))
}
