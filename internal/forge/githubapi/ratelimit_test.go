package githubapi

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-github/v60/github"
)

func TestRateLimitUntil(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	resp := func(code int, h map[string]string) *http.Response {
		r := &http.Response{StatusCode: code, Header: http.Header{}, Request: &http.Request{Method: "GET"}}
		for k, v := range h {
			r.Header.Set(k, v)
		}
		return r
	}
	retry := 42 * time.Second
	for _, tc := range []struct {
		name string
		err  error
		ok   bool
		want time.Time
	}{
		{"primary", &github.RateLimitError{Rate: github.Rate{Reset: github.Timestamp{Time: now.Add(time.Hour)}}}, true, now.Add(time.Hour)},
		{"primary reset past", &github.RateLimitError{Rate: github.Rate{Reset: github.Timestamp{Time: now.Add(-time.Hour)}}}, true, now.Add(time.Second)},
		{"secondary", &github.AbuseRateLimitError{RetryAfter: &retry}, true, now.Add(retry)},
		{"secondary without retry-after", &github.AbuseRateLimitError{}, true, now.Add(DefaultLimitWait)},
		{"429 retry-after", &github.ErrorResponse{Response: resp(429, map[string]string{"Retry-After": "7"})}, true, now.Add(7 * time.Second)},
		{"429 reset", &github.ErrorResponse{Response: resp(429, map[string]string{"X-RateLimit-Reset": "1800000100"})}, true, now.Add(100 * time.Second)},
		{"403 retry-after", &github.ErrorResponse{Response: resp(403, map[string]string{"Retry-After": "5"})}, true, now.Add(5 * time.Second)},
		{"403 forbidden", &github.ErrorResponse{Response: resp(403, nil)}, false, time.Time{}},
		{"500", &github.ErrorResponse{Response: resp(500, nil)}, false, time.Time{}},
		{"wrapped", fmt.Errorf("dispatch: %w", &github.AbuseRateLimitError{RetryAfter: &retry}), true, now.Add(retry)},
		{"plain", errors.New("boom"), false, time.Time{}},
		{"nil", nil, false, time.Time{}},
	} {
		got, ok := RateLimitUntil(tc.err, now)
		if ok != tc.ok || !got.Equal(tc.want) {
			t.Errorf("%s: RateLimitUntil = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
