package ratelimit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/forge/githubapi"
	"github.com/trueup-dev/trueup/internal/forge/gitlabapi"
	"github.com/trueup-dev/trueup/internal/forge/ratelimit"
)

// TestSharedAcrossClients: a limit one client meets at a fake forge on loopback pauses the
// other client of the same token and host, unsent, and no client of another token. Each
// subtest has a registry of pauses of its own, so that no pause outlives it.
func TestSharedAcrossClients(t *testing.T) {
	t.Parallel()
	reset := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	for _, tc := range []struct {
		name   string
		gitlab bool
		code   int
		header map[string]string
		paused bool
	}{
		{"github 429 retry-after", false, http.StatusTooManyRequests, map[string]string{"Retry-After": "60"}, true},
		{"github 403 retry-after", false, http.StatusForbidden, map[string]string{"Retry-After": "60"}, true},
		{"github 403 none left", false, http.StatusForbidden, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}, true},
		{"github 200 none left", false, http.StatusOK, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}, true},
		{"github 200 some left", false, http.StatusOK, map[string]string{"X-RateLimit-Remaining": "5", "X-RateLimit-Reset": reset}, false},
		{"github 403 forbidden", false, http.StatusForbidden, nil, false},
		{"gitlab 429 retry-after", true, http.StatusTooManyRequests, map[string]string{"Retry-After": "60"}, true},
		{"gitlab 429 reset", true, http.StatusTooManyRequests, map[string]string{"RateLimit-Reset": reset}, true},
		{"gitlab 200 none left", true, http.StatusOK, map[string]string{"RateLimit-Remaining": "0", "RateLimit-Reset": reset}, true},
		{"gitlab 200 some left", true, http.StatusOK, map[string]string{"RateLimit-Remaining": "5", "RateLimit-Reset": reset}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				code := http.StatusOK
				if calls.Add(1) == 1 {
					code = tc.code
					for k, v := range tc.header {
						w.Header().Set(k, v)
					}
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(code)
				_, _ = w.Write([]byte(`{"id":1,"message":"m"}`))
			}))
			t.Cleanup(srv.Close)
			call := githubCall
			if tc.gitlab {
				call = gitlabCall
			}
			ctx := t.Context()
			pauses := new(ratelimit.Registry) // the subtest's own: no other test's pause
			first := call(t, pauses, srv.URL, "token-a")
			_ = first(ctx) // the answer under test
			second := call(t, pauses, srv.URL, "token-a")
			err := second(ctx)
			if got := calls.Load(); (got == 1) != tc.paused {
				t.Errorf("requests after the first = %d; paused = %v, want %v (err %v)", got-1, got == 1, tc.paused, err)
			}
			if tc.paused {
				var gh *githubapi.PausedError
				var gl *gitlabapi.RateLimitError
				if !errors.As(err, &gh) && !errors.As(err, &gl) {
					t.Errorf("paused call: err = %v, want a rate limit error", err)
				}
				before := calls.Load()
				if err := call(t, pauses, srv.URL, "token-b")(ctx); err != nil || calls.Load() != before+1 {
					t.Errorf("another token: err = %v, %d requests; want it sent", err, calls.Load()-before)
				}
			}
		})
	}
}

// githubCall returns one call of a new GitHub client of token at base.
func githubCall(t *testing.T, pauses *ratelimit.Registry, base, token string) func(context.Context) error {
	u, err := githubapi.ParseBaseURL(base)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := githubapi.NewClient(githubapi.ClientConfig{BaseURL: u, Tokens: githubapi.StaticToken(token), Pauses: pauses})
	return func(ctx context.Context) error {
		_, _, err := c.Repositories.Get(ctx, "o", "r")
		return err
	}
}

// gitlabCall returns one call of a new GitLab client of token at base.
func gitlabCall(t *testing.T, pauses *ratelimit.Registry, base, token string) func(context.Context) error {
	c, err := gitlabapi.New(gitlabapi.Config{BaseURL: base, Token: token, Pauses: pauses})
	if err != nil {
		t.Fatal(err)
	}
	return func(ctx context.Context) error {
		var out any
		_, err := c.GetJSON(ctx, gitlabapi.Request{Method: http.MethodGet, Path: "projects/1", Auth: true}, &out)
		return err
	}
}
