// GitHub App authentication: JWTs and cached installation tokens.
//
// An App signs an RS256 JWT as the App, exchanges it for an installation token
// (POST /app/installations/{id}/access_tokens), caches the token and renews it 5 minutes
// before it expires. The private key and the JWT never appear in its errors; the tokens it
// hands out are the caller's to keep out of logs.
package githubapi

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/trueup-dev/trueup/internal/plaintext"
)

const (
	// refreshBefore renews an installation token this long before GitHub's expiry, so a
	// token never runs out during a call made with it.
	refreshBefore = 5 * time.Minute
	// exchangeTimeout bounds a token exchange whose context has no deadline.
	exchangeTimeout = 30 * time.Second
)

// AppConfig identifies the App installation and its key.
type AppConfig struct {
	AppID, InstallationID int64
	// PrivateKeyFile is the App's private key as GitHub hands it out (PKCS#1 PEM), or its
	// PKCS#8 form.
	PrivateKeyFile string
	// PrivateKeyPEM, when set, is the content of PrivateKeyFile, for a caller that read the
	// file itself (to scrub the key from what it returns); PrivateKeyFile then only names
	// the key in errors.
	PrivateKeyPEM []byte
	// BaseURL is the REST API root; default DefaultBaseURL.
	BaseURL string
	// Insecure allows an http:// BaseURL on another machine: the signed token and the
	// installation tokens would cross the network in clear (internal/plaintext).
	Insecure bool
	// Now is the clock tokens expire by; nil means time.Now. Tests move it.
	Now func() time.Time
}

// App hands out installation tokens of one App installation. It is safe for concurrent
// use; at most one exchange is in flight, and callers arriving meanwhile wait for its token.
type App struct {
	appID, installationID int64
	key                   *rsa.PrivateKey
	endpoint              string // {BaseURL}app/installations/{id}/access_tokens
	client                *http.Client
	now                   func() time.Time

	mu        sync.Mutex
	token     string
	refreshAt time.Time
	inflight  *exchange // non-nil while an exchange runs
}

// exchange is one token exchange; done is closed when the fields are set.
type exchange struct {
	done     chan struct{}
	token    string
	err      error
	canceled bool // err came from the context of the caller that ran the exchange
}

// New checks cfg and reads and parses the private key; it makes no network call.
// httpClient carries the exchanges (nil: a client with http.DefaultTransport); it must add
// no credentials of its own. Without a CheckRedirect of its own, a copy of it gets
// plaintext.CheckRedirect.
func NewApp(cfg AppConfig, httpClient *http.Client) (*App, error) {
	if cfg.AppID <= 0 {
		return nil, errors.New("github app: appID is required")
	}
	if cfg.InstallationID <= 0 {
		return nil, fmt.Errorf("github app %d: installationID is required", cfg.AppID)
	}
	base, err := ParseBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("github app %d: %w", cfg.AppID, err)
	}
	if err := plaintext.Check("baseURL", base.Scheme, base.Hostname(), "the App's signed token", true, cfg.Insecure); err != nil {
		return nil, fmt.Errorf("github app %d: %w", cfg.AppID, err)
	}
	data := cfg.PrivateKeyPEM
	if data == nil {
		if cfg.PrivateKeyFile == "" {
			return nil, fmt.Errorf("github app %d: privateKeyFile is required", cfg.AppID)
		}
		// The error names the file and the cause, never content.
		if data, err = os.ReadFile(cfg.PrivateKeyFile); err != nil {
			return nil, fmt.Errorf("github app %d: read private key: %w", cfg.AppID, err)
		}
	}
	key, err := parsePrivateKey(data)
	if err != nil {
		name := cfg.PrivateKeyFile
		if name == "" {
			name = "(inline)"
		}
		return nil, fmt.Errorf("github app %d: private key %s: %w", cfg.AppID, name, err)
	}
	// The exchange carries the signed token in Authorization. net/http would follow a
	// redirect to http:// on the same host with it, and to a subdomain: the client follows
	// only the redirects plaintext.CheckRedirect allows, unless the caller chose a policy.
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	if httpClient.CheckRedirect == nil {
		c := *httpClient
		c.CheckRedirect = plaintext.CheckRedirect(cfg.Insecure)
		httpClient = &c
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &App{
		appID:          cfg.AppID,
		installationID: cfg.InstallationID,
		key:            key,
		endpoint:       base.JoinPath("app", "installations", strconv.FormatInt(cfg.InstallationID, 10), "access_tokens").String(),
		client:         httpClient,
		now:            now,
	}, nil
}

// Credential names the installation for ClientConfig.Credential: its installation tokens
// share one rate limit.
func (s *App) Credential() string {
	return fmt.Sprintf("app %d installation %d", s.appID, s.installationID)
}

// Token returns an installation token valid for at least 5 more minutes (for a token
// GitHub issues with less life than 10 minutes, for at least half of it), exchanging a new
// one when the cached one is due. Errors name the App and the installation, and carry
// go-github's typed errors (rate limits included) of a refused exchange.
func (s *App) Token(ctx context.Context) (string, error) {
	for {
		s.mu.Lock()
		if s.token != "" && s.now().Before(s.refreshAt) {
			tok := s.token
			s.mu.Unlock()
			return tok, nil
		}
		x := s.inflight
		if x == nil {
			x = &exchange{done: make(chan struct{})}
			s.inflight = x
			s.mu.Unlock()
			return s.run(ctx, x)
		}
		s.mu.Unlock()
		select {
		case <-x.done:
		case <-ctx.Done():
			return "", s.errorf("wait for the token exchange: %w", ctx.Err())
		}
		switch {
		case x.err == nil:
			return x.token, nil
		case x.canceled && ctx.Err() == nil:
			continue // the caller that ran the exchange gave up; this one tries itself
		}
		return "", x.err
	}
}

// run performs the exchange x for every caller waiting on it.
func (s *App) run(ctx context.Context, x *exchange) (string, error) {
	issued := s.now()
	tok, expires, err := s.exchange(ctx)
	s.mu.Lock()
	if err == nil {
		s.token, s.refreshAt = tok, refreshTime(issued, expires)
		x.token = tok
	} else {
		x.err = s.errorf("%w", err)
		x.canceled = ctx.Err() != nil
	}
	s.inflight = nil
	s.mu.Unlock()
	close(x.done)
	return x.token, x.err
}

// refreshTime is when a token issued at issued and expiring at expires is renewed:
// refreshBefore ahead of its expiry, but no earlier than half its life, so that a
// short-lived token is still reused.
func refreshTime(issued, expires time.Time) time.Time {
	at := expires.Add(-refreshBefore)
	if half := issued.Add(expires.Sub(issued) / 2); at.Before(half) {
		at = half
	}
	return at
}

func (s *App) errorf(format string, args ...any) error {
	return fmt.Errorf("github app %d installation %d: "+format, append([]any{s.appID, s.installationID}, args...)...)
}

// installationToken is GitHub's answer to POST /app/installations/{id}/access_tokens.
type installationToken struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

func (s *App) exchange(ctx context.Context) (string, time.Time, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, exchangeTimeout)
		defer cancel()
	}
	jwt, err := signJWT(s.key, s.appID, s.now())
	if err != nil {
		return "", time.Time{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint, nil)
	if err != nil {
		return "", time.Time{}, err
	}
	SetHeaders(req, jwt)
	resp, err := s.client.Do(req)
	if err != nil {
		return "", time.Time{}, redactJWT(fmt.Errorf("exchange installation token: %w", err), jwt)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		// CheckResponse yields the typed errors (rate limits included) of go-github's calls.
		err := github.CheckResponse(resp)
		if err == nil {
			err = fmt.Errorf("unexpected status %s", resp.Status)
		}
		return "", time.Time{}, redactJWT(fmt.Errorf("exchange installation token: %w", err), jwt)
	}
	var it installationToken
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&it); err != nil {
		return "", time.Time{}, fmt.Errorf("exchange installation token: decode answer: %w", err)
	}
	if it.Token == "" || it.ExpiresAt.IsZero() {
		return "", time.Time{}, errors.New("exchange installation token: answer lacks token or expires_at")
	}
	return it.Token, it.ExpiresAt, nil
}

// redactJWT keeps the App JWT (valid for minutes, and enough to mint tokens) out of an
// error that quotes it, such as a proxy echoing the request.
func redactJWT(err error, jwt string) error {
	msg := err.Error()
	if !strings.Contains(msg, jwt) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(msg, jwt, "[REDACTED]"), err: err}
}

// redactedError carries a redacted message and keeps the chain for errors.Is and errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
