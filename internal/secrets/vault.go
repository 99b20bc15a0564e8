package secrets

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/config"
)

// maxVaultResponse bounds a Vault response body; a KV secret is small.
const maxVaultResponse = 1 << 20

// vaultStore reads KV v2 secrets with plain net/http (the two calls it makes do not justify
// the Vault SDK and its dependencies). A token is used as given; an AppRole logs in, keeps
// the client token in memory, and logs in again when three quarters of its lease have passed
// or when Vault refuses it (403). Logins are lazy, made by the read that needs one and
// shared by concurrent reads, so no loop runs while nothing is read. Read secrets are kept
// in memory for cacheTTL, shared the same way, and never written anywhere.
type vaultStore struct {
	name     string
	cfg      config.VaultConfig
	client   *http.Client
	cacheTTL time.Duration
	now      func() time.Time
	logger   *slog.Logger

	flight singleflight.Group // "login", "read/NAME"

	mu      sync.Mutex // guards the fields below; never held across I/O
	token   string
	renewAt time.Time // zero: no expiry
	cache   map[string]cached
}

type cached struct {
	data    map[string]string
	expires time.Time
}

func newVaultStore(name string, cfg config.VaultConfig, now func() time.Time, logger *slog.Logger) (*vaultStore, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("store %q: caFile: %w", name, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("store %q: caFile %s holds no PEM certificate", name, cfg.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = config.DefaultVaultTimeout
	}
	ttl := config.DefaultVaultCacheTTL
	if cfg.CacheTTL != nil {
		ttl = *cfg.CacheTTL
	}
	if cfg.Mount == "" {
		cfg.Mount = config.DefaultVaultMount
	}
	if cfg.AppRole != nil && cfg.AppRole.Mount == "" {
		a := *cfg.AppRole
		a.Mount = config.DefaultAppRoleMount
		cfg.AppRole = &a
	}
	cfg.Address = strings.TrimSuffix(cfg.Address, "/")
	return &vaultStore{
		name: name,
		cfg:  cfg,
		client: &http.Client{
			Transport: tr,
			Timeout:   timeout,
			// A redirect would carry X-Vault-Token to wherever it points.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		cacheTTL: ttl,
		now:      now,
		logger:   logger.With("store", name),
		token:    cfg.Token,
		cache:    map[string]cached{},
	}, nil
}

func (s *vaultStore) read(ctx context.Context, name string, keys []string) ([]string, error) {
	data, err := s.secret(ctx, name)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(keys))
	for i, key := range keys {
		v, ok := data[key]
		if !ok {
			return nil, actions.Terminalf("secret %q has no key %q in store %q", name, key, s.name)
		}
		out[i] = v
	}
	return out, nil
}

// secret returns the data of one secret, from the cache or from one read shared by every
// concurrent caller; a caller whose ctx ends stops waiting, the read goes on for the others.
func (s *vaultStore) secret(ctx context.Context, name string) (map[string]string, error) {
	if data, ok := s.cached(name); ok {
		return data, nil
	}
	ch := s.flight.DoChan("read/"+name, func() (any, error) {
		// A read that finished between the check above and this flight filled the cache.
		if data, ok := s.cached(name); ok {
			return data, nil
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*s.client.Timeout)
		defer cancel()
		data, err := s.fetch(rctx, name)
		if err == nil && s.cacheTTL > 0 {
			s.mu.Lock()
			s.evictExpired()
			s.cache[name] = cached{data: data, expires: s.now().Add(s.cacheTTL)}
			s.mu.Unlock()
		}
		return data, err
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(map[string]string), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *vaultStore) cached(name string) (map[string]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cache[name]
	if !ok || !s.now().Before(c.expires) {
		return nil, false
	}
	return c.data, true
}

// evictExpired drops stale entries so that the cache holds at most what was read in the
// last cacheTTL. Called with mu held.
func (s *vaultStore) evictExpired() {
	now := s.now()
	for k, c := range s.cache {
		if !now.Before(c.expires) {
			delete(s.cache, k)
		}
	}
}

func (s *vaultStore) fetch(ctx context.Context, name string) (map[string]string, error) {
	tok, err := s.clientToken(ctx)
	if err != nil {
		return nil, err
	}
	path := VaultPath(s.cfg.Mount, s.cfg.PathPrefix, name)
	status, body, err := s.do(ctx, http.MethodGet, path, tok, nil)
	if err != nil {
		return nil, err
	}
	if status == http.StatusForbidden && s.cfg.AppRole != nil {
		// Revoked, expired early, or the lease was shorter than said: log in once more.
		s.logger.Warn("vault refused the token, logging in again")
		s.forget(tok)
		if tok, err = s.clientToken(ctx); err != nil {
			return nil, err
		}
		if status, body, err = s.do(ctx, http.MethodGet, path, tok, nil); err != nil {
			return nil, err
		}
	}
	switch {
	case status == http.StatusOK:
		return decodeKV(body)
	case status == http.StatusNotFound:
		return nil, actions.Terminalf("secret %q not found in store %q", name, s.name)
	default:
		return nil, fmt.Errorf("store %q: read %s: %s", s.name, path, s.describe(status, body))
	}
}

// clientToken returns the token to send, logging in with the AppRole when there is none or
// when it is due for renewal.
func (s *vaultStore) clientToken(ctx context.Context) (string, error) {
	s.mu.Lock()
	tok, renewAt := s.token, s.renewAt
	s.mu.Unlock()
	if s.cfg.AppRole == nil || (tok != "" && (renewAt.IsZero() || s.now().Before(renewAt))) {
		return tok, nil
	}
	v, err, _ := s.flight.Do("login", func() (any, error) { return s.login(ctx) })
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

// forget drops tok unless a concurrent login has replaced it already.
func (s *vaultStore) forget(tok string) {
	s.mu.Lock()
	if s.token == tok {
		s.token = ""
	}
	s.mu.Unlock()
}

func (s *vaultStore) login(ctx context.Context) (string, error) {
	a := s.cfg.AppRole
	body, _ := json.Marshal(map[string]string{"role_id": a.RoleID, "secret_id": a.SecretID})
	path := "auth/" + strings.Trim(a.Mount, "/") + "/login"
	status, resp, err := s.do(ctx, http.MethodPost, path, "", body)
	if err != nil {
		return "", err
	}
	if status != http.StatusOK {
		return "", fmt.Errorf("store %q: approle login: %s", s.name, s.describe(status, resp))
	}
	var out struct {
		Auth *struct {
			ClientToken   string `json:"client_token"`
			LeaseDuration int64  `json:"lease_duration"`
			Renewable     bool   `json:"renewable"`
		} `json:"auth"`
	}
	if err := json.Unmarshal(resp, &out); err != nil || out.Auth == nil || out.Auth.ClientToken == "" {
		return "", fmt.Errorf("store %q: approle login: response holds no client token", s.name)
	}
	lease := time.Duration(out.Auth.LeaseDuration) * time.Second
	var renewAt time.Time
	if lease > 0 {
		renewAt = s.now().Add(lease * 3 / 4)
	}
	s.mu.Lock()
	s.token, s.renewAt = out.Auth.ClientToken, renewAt
	s.mu.Unlock()
	s.logger.Info("vault approle login", "lease", lease.String())
	return out.Auth.ClientToken, nil
}

// do sends one request and returns the status and the body, bounded by maxVaultResponse.
// Transport errors name the URL, which holds no credential.
func (s *vaultStore) do(ctx context.Context, method, path, token string, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.client.Timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.cfg.Address+"/v1/"+path, rd)
	if err != nil {
		return 0, nil, fmt.Errorf("store %q: %w", s.name, err)
	}
	if token != "" {
		req.Header.Set("X-Vault-Token", token)
	}
	if s.cfg.Namespace != "" {
		req.Header.Set("X-Vault-Namespace", s.cfg.Namespace)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("store %q: %w", s.name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxVaultResponse+1))
	if err != nil {
		return 0, nil, fmt.Errorf("store %q: %s %s: read response: %w", s.name, method, path, err)
	}
	if len(b) > maxVaultResponse {
		return 0, nil, fmt.Errorf("store %q: %s %s: response larger than %d bytes", s.name, method, path, maxVaultResponse)
	}
	return resp.StatusCode, b, nil
}

// describe turns an error response into "403 Forbidden: permission denied", Vault's
// `errors` array truncated, with the store's credentials removed should Vault echo them.
func (s *vaultStore) describe(status int, body []byte) string {
	msg := strconv.Itoa(status) + " " + http.StatusText(status)
	var e struct {
		Errors []string `json:"errors"`
	}
	if json.Unmarshal(body, &e) == nil && len(e.Errors) > 0 {
		detail := strings.Join(e.Errors, "; ")
		if len(detail) > 300 {
			detail = detail[:300] + "…"
		}
		msg += ": " + detail
	}
	s.mu.Lock()
	creds := []string{s.token, s.cfg.Token}
	s.mu.Unlock()
	if a := s.cfg.AppRole; a != nil {
		creds = append(creds, a.SecretID, a.RoleID)
	}
	for _, c := range creds {
		if c != "" {
			msg = strings.ReplaceAll(msg, c, "***")
		}
	}
	return msg
}

// decodeKV reads a KV v2 response, {"data": {"data": {...}, "metadata": {...}}}. Values that
// are not strings become their JSON text (numbers as written).
func decodeKV(body []byte) (map[string]string, error) {
	var out struct {
		Data *struct {
			Data map[string]json.RawMessage `json:"data"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.Data == nil {
		return nil, errors.New("vault response is not a KV v2 secret (is the mount a kv-v2 engine?)")
	}
	data := make(map[string]string, len(out.Data.Data))
	for k, raw := range out.Data.Data {
		var str string
		if json.Unmarshal(raw, &str) == nil {
			data[k] = str
			continue
		}
		data[k] = string(bytes.TrimSpace(raw))
	}
	return data, nil
}
