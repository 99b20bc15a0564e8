// Package githubapi owns what trueup knows of GitHub's REST API (and of the APIs that speak
// it: GitHub Enterprise Server, Gitea's statuses and comments): the base URL, the headers,
// the go-github client with its credential, GitHub App installation tokens, and the reading
// of rate limits from go-github's errors. Every package that calls GitHub builds its client
// here.
package githubapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/trueup-dev/trueup/internal/forge/ratelimit"
	"github.com/trueup-dev/trueup/internal/httpwait"
)

// DefaultBaseURL is GitHub's REST API; GitHub Enterprise Server uses https://HOST/api/v3/.
const DefaultBaseURL = "https://api.github.com/"

// UserAgent is the User-Agent of every request trueup sends to a forge.
const UserAgent = "trueup"

// ParseBaseURL checks a REST API root ("" is DefaultBaseURL) and ends its path with "/", as
// go-github requires.
func ParseBaseURL(raw string) (*url.URL, error) {
	if raw == "" {
		raw = DefaultBaseURL
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		// Not quoted: a malformed URL may hold credentials the parser could not locate.
		return nil, errors.New("baseURL is not an http(s) URL")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("baseURL %s://%s%s may not carry credentials, a query or a fragment", u.Scheme, u.Host, u.Path)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	return u, nil
}

// mediaType is the media type of GitHub's REST API; go-github asks for its older name,
// mediaTypeV3, which NewClient's requests ask for as mediaType instead.
const (
	mediaType   = "application/vnd.github+json"
	mediaTypeV3 = "application/vnd.github.v3+json"
)

// SetHeaders sets the headers of a request built by hand (outside go-github): the bearer
// token, the media type and the API version trueup speaks.
func SetHeaders(req *http.Request, token string) {
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", mediaType)
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	req.Header.Set("User-Agent", UserAgent)
}

// Tokens yields the bearer token of the next request: a fixed token (StaticToken) or an
// App's installation tokens (*App).
type Tokens interface {
	Token(ctx context.Context) (string, error)
}

// StaticToken is a personal access token or any other fixed one.
type StaticToken string

// Token returns t.
func (t StaticToken) Token(context.Context) (string, error) { return string(t), nil }

// TokenError is a failure to obtain a token: no request reached the API.
type TokenError struct{ Err error }

func (e *TokenError) Error() string { return e.Err.Error() }
func (e *TokenError) Unwrap() error { return e.Err }

// ClientConfig is what NewClient builds a client from.
type ClientConfig struct {
	// BaseURL is the REST API root, as ParseBaseURL returns it; nil: DefaultBaseURL.
	BaseURL *url.URL
	Tokens  Tokens
	// Transport carries the requests (nil: http.DefaultTransport); it adds no credential.
	Transport http.RoundTripper
	// Client, when set, is copied for its timeout; its transport is Transport's default.
	Client *http.Client
	// Remaining, when set, records the last X-RateLimit-Remaining seen.
	Remaining *atomic.Int64
	// Credential identifies the credential whose rate limit the client shares with every
	// other client of it at the same host (an App's is App.Credential); empty: a
	// StaticToken's value, else a limit of the client's own.
	Credential string
	// Pauses holds the pause the client shares; nil: ratelimit.Shared(), the process's.
	Pauses *ratelimit.Registry
	Now    func() time.Time // nil: time.Now
}

// pause is the rate-limit pause the client of cfg shares.
func (cfg ClientConfig) pause() *ratelimit.Pause {
	base := cfg.BaseURL
	if base == nil {
		base, _ = url.Parse(DefaultBaseURL)
	}
	cred := cfg.Credential
	if t, ok := cfg.Tokens.(StaticToken); ok && cred == "" {
		cred = string(t)
	}
	reg := cfg.Pauses
	if reg == nil {
		reg = ratelimit.Shared()
	}
	return reg.For(base.Scheme+"://"+base.Host, cred)
}

// PausedError is a call not sent because the credential's rate limit has not reset.
type PausedError struct{ Until time.Time }

func (e *PausedError) Error() string {
	return "github rate limit: calls paused until " + e.Until.UTC().Format(time.RFC3339)
}

// NewClient returns a go-github client of the API at cfg.BaseURL. It sends the token to the
// API's origin only (an artifact download redirects to blob storage, which must never see
// it), and follows no redirect: the caller decides, by plaintext's rule, whether to follow
// one. A rate limit met by any client of the credential fails its calls with a
// *PausedError, unsent, until the reset. NewClient returns the client and that pause, which
// the caller may consult and extend (a pause of the client's own when it has no credential).
func NewClient(cfg ClientConfig) (*github.Client, *ratelimit.Pause) {
	base := cfg.BaseURL
	if base == nil {
		base, _ = url.Parse(DefaultBaseURL)
	}
	var hc http.Client
	if cfg.Client != nil {
		hc = *cfg.Client
	}
	next := cfg.Transport
	if next == nil {
		next = hc.Transport
	}
	if next == nil {
		next = http.DefaultTransport
	}
	if cfg.Remaining != nil {
		next = &meterTransport{next: next, remaining: cfg.Remaining}
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	pause := cfg.pause()
	hc.Transport = &authTransport{next: next, origin: base.Scheme + "://" + base.Host, tokens: cfg.Tokens,
		pause: pause, now: now}
	hc.CheckRedirect = NoRedirect
	c := github.NewClient(&hc)
	c.BaseURL = base
	c.UploadURL = base
	c.UserAgent = UserAgent
	return c, pause
}

// NoRedirect leaves redirects to the caller: the API answers artifact downloads with a 302
// to blob storage, fetched without credentials by a separate client, and a redirect of any
// other call means a wrong base URL.
func NoRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// authTransport sets the bearer token on requests to the API origin only, and holds them
// while the credential's rate limit lasts.
type authTransport struct {
	next   http.RoundTripper
	origin string // scheme://host of the base URL
	tokens Tokens
	pause  *ratelimit.Pause
	now    func() time.Time
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme+"://"+req.URL.Host != t.origin {
		return t.next.RoundTrip(req)
	}
	if until, ok := t.pause.Until(t.now()); ok {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, &PausedError{Until: until}
	}
	tok, err := t.tokens.Token(req.Context())
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, &TokenError{Err: err}
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	if r.Header.Get("Accept") == mediaTypeV3 {
		r.Header.Set("Accept", mediaType)
	}
	resp, err := t.next.RoundTrip(r)
	if err == nil {
		now := t.now()
		if until, ok := limitOf(resp.StatusCode, resp.Header, now); ok {
			t.pause.Extend(until)
		} else if n, perr := strconv.ParseInt(resp.Header.Get("X-RateLimit-Remaining"), 10, 64); perr == nil {
			reset, _ := httpwait.ResetAt(resp.Header, "X-RateLimit-Reset")
			t.pause.Spent(n, reset, now)
		}
	}
	return resp, err
}

// meterTransport records the last X-RateLimit-Remaining seen.
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

// StatusCode is the HTTP status of a go-github error answer, 0 for any other error.
func StatusCode(err error) int {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}
