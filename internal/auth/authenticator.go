package auth

import (
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/internal/config"
)

// ErrNoCredentials is Authenticate's answer to a request without credentials when anonymous
// access is not configured.
var ErrNoCredentials = errors.New("authentication required")

// errBadToken never reveals whether a token of that name exists: tokens have no names on the
// wire.
var errBadToken = errors.New("invalid bearer token")

// Authenticator turns requests into identities by the auth: section of the config: a bearer
// token, else a dashboard session cookie, else the anonymous role.
type Authenticator struct {
	tokens    []token
	anonymous Role
	oidc      *oidcLogin // nil without auth.oidc
	log       *slog.Logger
	now       func() time.Time
}

type token struct {
	name       string
	hash       [sha256.Size]byte
	role       Role
	namespaces []string
}

// New builds the authenticator of cfg; externalURL (server.externalURL) is where the OpenID
// provider sends people back and decides whether cookies are Secure.
func New(cfg *config.Auth, externalURL string, logger *slog.Logger) (*Authenticator, error) {
	a := &Authenticator{anonymous: Role(cfg.Anonymous), log: logger, now: time.Now}
	if a.anonymous != "" && !a.anonymous.Valid() {
		return nil, fmt.Errorf("auth.anonymous: %q is not a role", cfg.Anonymous)
	}
	for _, t := range cfg.Tokens {
		b, err := hex.DecodeString(t.SHA256)
		if err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("auth token %s: sha256 is not 64 hex digits", t.Name)
		}
		tk := token{name: t.Name, role: Role(t.Role), namespaces: namespacesOrAll(t.Namespaces)}
		copy(tk.hash[:], b)
		a.tokens = append(a.tokens, tk)
	}
	if cfg.OIDC != nil {
		o, err := newOIDCLogin(cfg.OIDC, externalURL, logger, func() time.Time { return a.now() })
		if err != nil {
			return nil, err
		}
		a.oidc = o
	}
	return a, nil
}

func namespacesOrAll(ns []string) []string {
	if len(ns) == 0 {
		return []string{AllNamespaces}
	}
	return ns
}

// Authenticate says who r comes from. A request that presents a bearer token is that token
// or a 401, never anonymous: a mistyped or revoked token must fail loudly. A session cookie
// that is expired, tampered with or signed by another key counts as no credentials.
func (a *Authenticator) Authenticate(r *http.Request) (Identity, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return Identity{}, errors.New("unsupported Authorization scheme (use Bearer)")
		}
		return a.token(strings.TrimSpace(tok))
	}
	if a.oidc != nil {
		if id, ok := a.oidc.session(r); ok {
			return id, nil
		}
	}
	if a.anonymous != "" {
		return Identity{Kind: "anonymous", Name: "anonymous", Role: a.anonymous, Namespaces: []string{AllNamespaces}}, nil
	}
	return Identity{}, ErrNoCredentials
}

// token finds the token whose hash is sha256(tok), comparing every configured hash in
// constant time, so the answer's timing says nothing about how close a guess was.
func (a *Authenticator) token(tok string) (Identity, error) {
	sum := sha256.Sum256([]byte(tok))
	found := -1
	for i := range a.tokens {
		if subtle.ConstantTimeCompare(sum[:], a.tokens[i].hash[:]) == 1 {
			found = i
		}
	}
	if found < 0 || tok == "" {
		return Identity{}, errBadToken
	}
	t := a.tokens[found]
	return Identity{Kind: "token", Name: t.name, Role: t.role, Namespaces: t.namespaces}, nil
}

// Routes serves GET /login, GET /auth/callback and POST /logout; nil without OIDC.
func (a *Authenticator) Routes() http.Handler {
	if a.oidc == nil {
		return nil
	}
	return a.oidc.routes()
}

// LoginURL is where the dashboard sends people without a session ("" without OIDC).
func (a *Authenticator) LoginURL() string {
	if a.oidc == nil {
		return ""
	}
	return loginPath
}

// CSRFToken is the token the logout form (and other dashboard forms) must post back as
// the "csrf" field; "" when r has no valid session.
func (a *Authenticator) CSRFToken(r *http.Request) string {
	if a.oidc == nil {
		return ""
	}
	return a.oidc.csrfToken(r)
}

// CheckCSRF reports whether a form posted with r carries the CSRF token of r's session.
func (a *Authenticator) CheckCSRF(r *http.Request) bool {
	if a.oidc == nil {
		return false
	}
	return a.oidc.checkCSRF(r)
}

// TokenPrefix starts every token `trueup token create` makes, so that secret scanners can
// recognise trueup tokens and people can tell them from other secrets.
const TokenPrefix = "tu_"

// NewToken makes a random bearer token (TokenPrefix + 32 random bytes, base64url) and the
// hex SHA-256 the config stores.
func NewToken() (tok, sha256Hex string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	tok = TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(tok))
	return tok, hex.EncodeToString(sum[:])
}

// TokenLine is the line of the auth.tokens list that accepts a token.
func TokenLine(name, sha256Hex string, role Role, namespaces []string) string {
	ns := make([]string, len(namespaces))
	for i, n := range namespaces {
		ns[i] = fmt.Sprintf("%q", n) // "*" is a YAML alias unquoted
	}
	return fmt.Sprintf(`- {name: %q, sha256: "%s", role: %s, namespaces: [%s]}`, name, sha256Hex, role, strings.Join(ns, ", "))
}

// sessionKey is the key that signs cookies: auth.oidc.sessionKey, else one derived from the
// client secret, so that every replica of one config accepts the others' sessions.
func sessionKey(o *config.OIDC) ([]byte, error) {
	secret := o.SessionKey
	if secret == "" {
		secret = o.ClientSecret
	}
	return hkdf.Key(sha256.New, []byte(secret), []byte("trueup session cookie"), "auth.oidc "+o.Issuer+" "+o.ClientID, 32)
}

// secureCookies reports whether cookies get the Secure attribute: when people reach trueup
// over https (server.tls, or a TLS-terminating proxy named in server.externalURL).
func secureCookies(externalURL string) bool {
	u, err := url.Parse(externalURL)
	return err == nil && strings.EqualFold(u.Scheme, "https")
}
