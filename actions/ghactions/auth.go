package ghactions

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/trueup-dev/trueup/internal/ghapp"
)

// tokenSource yields the bearer token for the next API request.
type tokenSource interface {
	token(ctx context.Context) (string, error)
}

type staticToken string

func (t staticToken) token(context.Context) (string, error) { return string(t), nil }

// appTokens yields the installation tokens of a GitHub App (cached and renewed by ghapp)
// and registers each for scrubbing before it is used.
type appTokens struct {
	src     *ghapp.Source
	secrets *secrets
}

func (t *appTokens) token(ctx context.Context) (string, error) {
	tok, err := t.src.Token(ctx)
	if err != nil {
		return "", err
	}
	t.secrets.addRecent(tok)
	return tok, nil
}

// authTransport sets the bearer token on requests to the API origin only: artifact
// downloads redirect to blob storage, which must never see the token.
type authTransport struct {
	next   http.RoundTripper
	origin string // scheme://host of baseURL
	tokens tokenSource
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme+"://"+req.URL.Host != t.origin {
		return t.next.RoundTrip(req)
	}
	tok, err := t.tokens.token(req.Context())
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, &tokenError{err: err}
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return t.next.RoundTrip(r)
}

// meterTransport records the last X-RateLimit-Remaining seen (RateLimitRemaining).
type meterTransport struct {
	next      http.RoundTripper
	remaining *atomic.Int64
}

func (t *meterTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil {
		if v := resp.Header.Get("X-RateLimit-Remaining"); v != "" {
			if n, perr := strconv.ParseInt(v, 10, 64); perr == nil {
				t.remaining.Store(n)
			}
		}
	}
	return resp, err
}

// noRedirect leaves redirects to the caller: the API answers artifact downloads with a 302
// to blob storage, fetched without credentials by a separate client.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
