// Package oidctest owns a fake OpenID Connect provider on loopback for tests: discovery,
// JWKS with an RSA key, an authorization endpoint that signs the configured user in at once
// and redirects back with a code, and a token endpoint that checks the client secret, the
// redirect URI and the PKCE S256 verifier before returning a signed ID token with a groups
// claim. It behaves like the real thing where trueup depends on it; it has no consent page.
package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// User is who the provider signs in.
type User struct {
	Subject string
	Email   string
	Groups  []string
}

// Provider is the fake; set User before a login, and TokenTTL to change ID token lifetimes.
type Provider struct {
	Issuer       string
	ClientID     string
	ClientSecret string

	mu        sync.Mutex
	user      User
	ttl       time.Duration
	codes     map[string]grant
	key       *rsa.PrivateKey
	signer    jose.Signer
	srv       *httptest.Server
	logins    int // authorization requests served
	exchanges int // codes exchanged
}

// Counts returns how many sign-ins the provider served and how many codes were exchanged.
func (p *Provider) Counts() (logins, exchanges int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logins, p.exchanges
}

type grant struct {
	redirectURI, nonce, challenge string
	user                          User
}

// New starts a provider on loopback, closed when the test ends.
func New(t testing.TB, clientID, clientSecret string) *Provider {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{ClientID: clientID, ClientSecret: clientSecret, key: key, signer: signer, ttl: time.Hour, codes: map[string]grant{}}
	m := http.NewServeMux()
	m.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	m.HandleFunc("GET /keys", p.keys)
	m.HandleFunc("GET /authorize", p.authorize)
	m.HandleFunc("POST /token", p.token)
	p.srv = httptest.NewServer(m)
	t.Cleanup(p.srv.Close)
	p.Issuer = p.srv.URL
	return p
}

// SetUser says who the next logins sign in as.
func (p *Provider) SetUser(u User) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.user = u
}

// SetTokenTTL sets the lifetime of the ID tokens issued from now on.
func (p *Provider) SetTokenTTL(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ttl = d
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (p *Provider) discovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                p.Issuer,
		"authorization_endpoint":                p.Issuer + "/authorize",
		"token_endpoint":                        p.Issuer + "/token",
		"jwks_uri":                              p.Issuer + "/keys",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported":      []string{"S256"},
		"scopes_supported":                      []string{"openid", "profile", "email", "groups"},
	})
}

func (p *Provider) keys(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &p.key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
}

// authorize signs the current user in and redirects back with a code, as a provider does
// for a user with a session at it.
func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Host == "" || q.Get("client_id") != p.ClientID || q.Get("response_type") != "code" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "PKCE S256 is required", http.StatusBadRequest)
		return
	}
	code := random()
	p.mu.Lock()
	p.logins++
	p.codes[code] = grant{redirectURI: redirect.String(), nonce: q.Get("nonce"), challenge: q.Get("code_challenge"), user: p.user}
	p.mu.Unlock()
	back := redirect.Query()
	back.Set("code", code)
	back.Set("state", q.Get("state"))
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func oauthError(w http.ResponseWriter, code int, e string) {
	writeJSON(w, code, map[string]string{"error": e})
}

func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != p.ClientID || secret != p.ClientSecret {
		oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	p.mu.Lock()
	g, found := p.codes[r.PostForm.Get("code")]
	delete(p.codes, r.PostForm.Get("code")) // a code is used once
	ttl := p.ttl
	p.mu.Unlock()
	if !found || r.PostForm.Get("grant_type") != "authorization_code" || r.PostForm.Get("redirect_uri") != g.redirectURI {
		oauthError(w, http.StatusBadRequest, "invalid_grant")
		return
	}
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	if base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
		oauthError(w, http.StatusBadRequest, "invalid_grant")
		return
	}
	now := time.Now()
	claims := map[string]any{"iss": p.Issuer, "sub": g.user.Subject, "aud": p.ClientID, "iat": now.Unix(),
		"exp": now.Add(ttl).Unix(), "nonce": g.nonce, "groups": g.user.Groups}
	if g.user.Email != "" {
		claims["email"] = g.user.Email
	}
	payload, _ := json.Marshal(claims)
	jws, err := p.signer.Sign(payload)
	if err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error")
		return
	}
	raw, _ := jws.CompactSerialize()
	p.mu.Lock()
	p.exchanges++
	p.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"access_token": random(), "token_type": "Bearer", "expires_in": int(ttl.Seconds()), "id_token": raw})
}

func random() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
