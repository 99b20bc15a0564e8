package ghactions

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-github/v60/github"
)

// Installation token lifetime handling.
const (
	// refreshBefore renews an installation token this long before GitHub's expiry, so a
	// token never runs out during a call.
	refreshBefore = 5 * time.Minute
	// jwtLifetime is the App JWT's validity; GitHub accepts at most 10 minutes.
	jwtLifetime = 9 * time.Minute
	// jwtBackdate covers clock drift between us and GitHub.
	jwtBackdate = time.Minute
)

// tokenSource yields the bearer token for the next API request.
type tokenSource interface {
	token(ctx context.Context) (string, error)
}

type staticToken string

func (t staticToken) token(context.Context) (string, error) { return string(t), nil }

// appTokens exchanges a GitHub App JWT for an installation token and caches it.
type appTokens struct {
	app      *appSettings
	endpoint string       // {baseURL}app/installations/{id}/access_tokens
	client   *http.Client // no credentials of its own; the JWT is set per request
	now      func() time.Time
	secrets  *secrets

	mu      sync.Mutex // held during an exchange: concurrent callers wait for one token
	current string
	expires time.Time
}

func (t *appTokens) token(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.current != "" && t.now().Before(t.expires.Add(-refreshBefore)) {
		return t.current, nil
	}
	tok, exp, err := t.exchange(ctx)
	if err != nil {
		return "", fmt.Errorf("github app %d installation %d: %w", t.app.appID, t.app.installationID, err)
	}
	t.current, t.expires = tok, exp
	return tok, nil
}

// installationToken is GitHub's answer to POST /app/installations/{id}/access_tokens.
type installationToken struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

func (t *appTokens) exchange(ctx context.Context) (string, time.Time, error) {
	jwt, err := signJWT(t.app, t.now())
	if err != nil {
		return "", time.Time{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.endpoint, nil)
	if err != nil {
		return "", time.Time{}, err
	}
	req.Header.Set("Authorization", "Bearer "+jwt)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	req.Header.Set("User-Agent", userAgent)
	resp, err := t.client.Do(req)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("exchange installation token: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		// CheckResponse yields the same typed errors (rate limits included) as API calls.
		err := github.CheckResponse(resp)
		if err == nil {
			err = fmt.Errorf("unexpected status %s", resp.Status)
		}
		return "", time.Time{}, fmt.Errorf("exchange installation token: %w", err)
	}
	var it installationToken
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&it); err != nil {
		return "", time.Time{}, fmt.Errorf("exchange installation token: decode answer: %w", err)
	}
	if it.Token == "" || it.ExpiresAt.IsZero() {
		return "", time.Time{}, errors.New("exchange installation token: answer lacks token or expires_at")
	}
	t.secrets.addRecent(it.Token)
	return it.Token, it.ExpiresAt, nil
}

// signJWT builds the RS256 JWT that authenticates as the App itself.
func signJWT(app *appSettings, now time.Time) (string, error) {
	header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT"}`))
	claims, err := json.Marshal(struct {
		IssuedAt  int64  `json:"iat"`
		ExpiresAt int64  `json:"exp"`
		Issuer    string `json:"iss"`
	}{
		IssuedAt:  now.Add(-jwtBackdate).Unix(),
		ExpiresAt: now.Add(jwtLifetime).Unix(),
		Issuer:    strconv.FormatInt(app.appID, 10),
	})
	if err != nil {
		return "", err
	}
	signingInput := header + "." + base64.RawURLEncoding.EncodeToString(claims)
	digest := sha256.Sum256([]byte(signingInput))
	sig, err := rsa.SignPKCS1v15(rand.Reader, app.key, crypto.SHA256, digest[:])
	if err != nil {
		return "", errors.New("sign app JWT: RSA signature failed")
	}
	return signingInput + "." + base64.RawURLEncoding.EncodeToString(sig), nil
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
