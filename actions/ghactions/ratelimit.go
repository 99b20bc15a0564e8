package ghactions

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/forge/githubapi"
)

// Rate limit handling.
const (
	// conditionRateLimited is the plugin condition reporting a GitHub rate limit.
	conditionRateLimited = "RateLimited"
	// maxLimitJitter spreads the resources that waited for one reset.
	maxLimitJitter = 2 * time.Second
)

// isRateLimit reports whether err is a GitHub rate limit.
func isRateLimit(err error) bool {
	_, ok := githubapi.RateLimitUntil(err, time.Now())
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
