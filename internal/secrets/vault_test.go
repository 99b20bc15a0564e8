package secrets

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/secrets/vaulttest"
)

// clock is a settable time for token renewal and the cache.
type clock struct{ ns atomic.Int64 }

func newClock() *clock                   { c := &clock{}; c.ns.Store(time.Now().UnixNano()); return c }
func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) add(d time.Duration)     { c.ns.Add(int64(d)) }
func ttl(d time.Duration) *time.Duration { return &d }

// vaultSetup starts a fake Vault holding secret/trueup/db-main and returns a resolver on it
// with the given vault block (address filled in), and the log it writes.
func vaultSetup(t *testing.T, v config.VaultConfig) (*Resolver, *vaulttest.Server, *clock, *bytes.Buffer) {
	t.Helper()
	srv := vaulttest.New(t)
	srv.Put("secret", "trueup/db-main", map[string]any{"password": "vault-pw", "port": 5432, "tls": map[string]any{"on": true}})
	v.Address = srv.URL
	if v.PathPrefix == "" {
		v.PathPrefix = "trueup/"
	}
	clk := newClock()
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r, err := New(config.Secrets{
		Stores: []config.SecretStore{{Name: "vault", Type: "vault", Vault: &v}},
		Expose: []config.SecretExpose{{Store: "vault", Names: []string{"db-*"}, Sources: []string{"platform"}, Namespaces: []string{"prod"}}},
	}, logger, WithClock(clk.now))
	if err != nil {
		t.Fatal(err)
	}
	return r, srv, clk, &logs
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

var dbSpec = json.RawMessage(`{"pw":{"secretRef":{"name":"db-main","key":"password"}},"port":{"secretRef":{"name":"db-main","key":"port"}}}`)

func resolve(t *testing.T, r *Resolver, spec json.RawMessage) (string, error) {
	t.Helper()
	got, _, err := r.Resolve(context.Background(), "platform", "prod", spec)
	return string(got), err
}

func TestVaultToken(t *testing.T) {
	t.Parallel()
	r, srv, _, logs := vaultSetup(t, config.VaultConfig{Token: "hvs.static-token", Namespace: "team-a"})
	srv.Namespace = "team-a"
	srv.AddToken("hvs.static-token", time.Time{})
	got, values, err := r.Resolve(context.Background(), "platform", "prod", dbSpec)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"port":"5432","pw":"vault-pw"}`; string(got) != want {
		t.Errorf("resolved %s, want %s", got, want)
	}
	if strings.Join(values, ",") != "5432,vault-pw" {
		t.Errorf("values %q", values)
	}
	h := srv.Headers()
	if len(h) != 1 || h[0].Get("X-Vault-Token") != "hvs.static-token" || h[0].Get("X-Vault-Namespace") != "team-a" {
		t.Errorf("requests %v, want one read with the token and the namespace", h)
	}
	// A non-string value is its JSON text.
	if got, err := resolve(t, r, json.RawMessage(`{"t":{"secretRef":{"name":"db-main","key":"tls"}}}`)); err != nil || got != `{"t":"{\"on\":true}"}` {
		t.Errorf("object value: %s, %v", got, err)
	}
	for _, tc := range []struct{ spec, want string }{
		{`{"p":{"secretRef":{"name":"db-main","key":"nope"}}}`, `spec.p: secret "db-main" has no key "nope" in store "vault"`},
		{`{"p":{"secretRef":{"name":"db-gone","key":"password"}}}`, `spec.p: secret "db-gone" not found in store "vault"`},
	} {
		if _, err := resolve(t, r, json.RawMessage(tc.spec)); !actions.IsTerminal(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Resolve(%s) = %v, want terminal %q", tc.spec, err, tc.want)
		}
	}
	if s := logs.String(); strings.Contains(s, "hvs.static-token") || strings.Contains(s, "vault-pw") {
		t.Errorf("log holds a secret:\n%s", s)
	}
}

// TestVaultRefusedToken: a token Vault refuses is a retriable error that does not show it.
func TestVaultRefusedToken(t *testing.T) {
	t.Parallel()
	r, srv, _, _ := vaultSetup(t, config.VaultConfig{Token: "hvs.wrong-token"})
	_, err := resolve(t, r, dbSpec)
	if err == nil || actions.IsTerminal(err) || !strings.Contains(err.Error(), "403 Forbidden: permission denied") {
		t.Fatalf("error %v, want a retriable 403", err)
	}
	if strings.Contains(err.Error(), "hvs.wrong-token") {
		t.Errorf("error %q shows the token", err)
	}
	// The namespace is part of the token's validity.
	srv.AddToken("hvs.wrong-token", time.Time{})
	srv.Namespace = "other"
	if _, err := resolve(t, r, dbSpec); err == nil || actions.IsTerminal(err) {
		t.Errorf("wrong namespace: %v", err)
	}
}

func TestVaultAppRole(t *testing.T) {
	t.Parallel()
	r, srv, clk, logs := vaultSetup(t, config.VaultConfig{
		AppRole:  &config.AppRole{RoleID: "role-1", SecretID: "sid-very-secret"},
		CacheTTL: ttl(0),
	})
	srv.AddRole("role-1", "sid-very-secret", time.Hour)
	if _, err := resolve(t, r, dbSpec); err != nil {
		t.Fatal(err)
	}
	if _, err := resolve(t, r, dbSpec); err != nil {
		t.Fatal(err)
	}
	if n := srv.Logins(); n != 1 {
		t.Errorf("%d logins for two reads within the lease, want 1", n)
	}
	// Revoked: the read gets 403, logs in again and succeeds.
	srv.RevokeAll()
	if _, err := resolve(t, r, dbSpec); err != nil {
		t.Fatalf("after revocation: %v", err)
	}
	if n := srv.Logins(); n != 2 {
		t.Errorf("%d logins after a 403, want 2", n)
	}
	// Three quarters into the lease the next read logs in first.
	clk.add(46 * time.Minute)
	reads := srv.Reads()
	if _, err := resolve(t, r, dbSpec); err != nil {
		t.Fatal(err)
	}
	if n := srv.Logins(); n != 3 {
		t.Errorf("%d logins after 3/4 of the lease, want 3", n)
	}
	if n := srv.Reads() - reads; n != 1 {
		t.Errorf("%d reads after a renewal, want 1 (no 403 first)", n)
	}
	if s := logs.String(); !strings.Contains(s, "vault approle login") || strings.Contains(s, "sid-very-secret") || strings.Contains(s, "hvs.") {
		t.Errorf("log:\n%s", s)
	}
}

func TestVaultAppRoleBadSecretID(t *testing.T) {
	t.Parallel()
	r, srv, _, _ := vaultSetup(t, config.VaultConfig{AppRole: &config.AppRole{RoleID: "role-1", SecretID: "sid-wrong", Mount: "approle"}})
	srv.AddRole("role-1", "sid-right", time.Hour)
	_, err := resolve(t, r, dbSpec)
	if err == nil || actions.IsTerminal(err) || !strings.Contains(err.Error(), "approle login: 400 Bad Request: invalid role or secret ID") {
		t.Fatalf("error %v, want a retriable login failure", err)
	}
	if strings.Contains(err.Error(), "sid-wrong") || strings.Contains(err.Error(), "sid-right") {
		t.Errorf("error %q shows a secret ID", err)
	}
}

// TestVaultCache: 1,000 resolutions of one secret read Vault once per TTL, concurrent ones
// included; nothing is cached after an error.
func TestVaultCache(t *testing.T) {
	t.Parallel()
	r, srv, clk, _ := vaultSetup(t, config.VaultConfig{Token: "tok-1234", CacheTTL: ttl(30 * time.Second)})
	srv.AddToken("tok-1234", time.Time{})
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for range 1000 {
		wg.Go(func() {
			_, _, err := r.Resolve(context.Background(), "platform", "prod", dbSpec)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.Reads(); n != 1 {
		t.Errorf("%d Vault reads for 1,000 resolutions, want 1", n)
	}
	clk.add(29 * time.Second)
	if _, err := resolve(t, r, dbSpec); err != nil || srv.Reads() != 1 {
		t.Errorf("within the TTL: %v, %d reads", err, srv.Reads())
	}
	clk.add(2 * time.Second)
	srv.SetDown(true)
	if _, err := resolve(t, r, dbSpec); err == nil {
		t.Fatal("expired entry served while Vault is down")
	}
	srv.SetDown(false)
	// The sealed answer is not counted: the fake answers it before reading.
	if _, err := resolve(t, r, dbSpec); err != nil || srv.Reads() != 2 {
		t.Errorf("after the TTL: %v, %d reads, want 2", err, srv.Reads())
	}
}

// TestVaultDown: a sealed or unreachable Vault is a retriable error.
func TestVaultDown(t *testing.T) {
	t.Parallel()
	r, srv, _, _ := vaultSetup(t, config.VaultConfig{Token: "tok-1234"})
	srv.AddToken("tok-1234", time.Time{})
	srv.SetDown(true)
	_, err := resolve(t, r, dbSpec)
	if err == nil || actions.IsTerminal(err) || !strings.Contains(err.Error(), "503 Service Unavailable: Vault is sealed") {
		t.Fatalf("sealed: %v, want a retriable 503", err)
	}
	// Nothing listening at all.
	v := config.VaultConfig{Address: "http://127.0.0.1:1", Token: "tok-1234", Timeout: time.Second}
	r2, err := New(config.Secrets{
		Stores: []config.SecretStore{{Name: "vault", Type: "vault", Vault: &v}},
		Expose: []config.SecretExpose{all("vault")},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = resolve(t, r2, dbSpec)
	if err == nil || actions.IsTerminal(err) || strings.Contains(err.Error(), "tok-1234") {
		t.Fatalf("unreachable: %v, want a retriable error without the token", err)
	}
}

// TestVaultCancel: a caller whose context ends stops waiting for a shared read.
func TestVaultCancel(t *testing.T) {
	t.Parallel()
	r, srv, _, _ := vaultSetup(t, config.VaultConfig{Token: "tok-1234"})
	srv.AddToken("tok-1234", time.Time{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := r.Resolve(ctx, "platform", "prod", dbSpec); err == nil {
		t.Fatal("a cancelled context resolved")
	}
}
