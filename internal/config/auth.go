package config

import (
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"time"

	"github.com/trueup-dev/trueup/internal/plaintext"
)

// Auth is the auth: section: who may call the API and the dashboard. Without it trueup
// serves every caller as an admin, and only on a loopback listen. Roles:
// viewer reads, operator also runs commands (reconcile, sync, suspend, resume, abandon),
// admin does everything.
type Auth struct {
	// Anonymous is the role of callers without credentials (viewer, operator, admin); empty:
	// such callers get a 401 (the dashboard sends them to /login when OIDC is configured).
	Anonymous string `yaml:"anonymous"`
	// Tokens are bearer tokens, stored as the SHA-256 of the token (`trueup token create`).
	Tokens []Token `yaml:"tokens"`
	// OIDC signs people in to the dashboard with an OpenID Connect provider.
	OIDC *OIDC `yaml:"oidc"`
}

// Token is one named bearer token.
type Token struct {
	// Name identifies the token in events and logs (1 to 63 letters, digits, '.', '_' or '-').
	Name string `yaml:"name"`
	// SHA256 is the hex SHA-256 of the token; the token itself is never stored.
	SHA256 string `yaml:"sha256"`
	Role   string `yaml:"role"` // one of viewer, operator, admin
	// Namespaces the token may see and act in; omitted: every namespace ("*").
	Namespaces []string `yaml:"namespaces"`
}

// OIDC configures the dashboard's single sign-on (authorization code flow with PKCE). The
// redirect URL to register at the provider is server.externalURL + "auth/callback".
type OIDC struct {
	// Issuer is the provider's issuer URL (its discovery document is issuer +
	// /.well-known/openid-configuration); https unless the provider is on loopback.
	Issuer       string `yaml:"issuer"`
	ClientID     string `yaml:"clientID"`     // the client id registered at the provider
	ClientSecret string `yaml:"clientSecret"` // the client's secret (normally a ${VAR})
	// GroupsClaim is the ID token claim holding the user's groups (default "groups"); a
	// string or a list of strings.
	GroupsClaim string `yaml:"groupsClaim"`
	// Scopes are requested besides "openid" (default profile, email; add "groups" for
	// providers that only send the claim when asked).
	Scopes []string `yaml:"scopes"`
	// Roles map groups to roles; a user in none of them is refused.
	Roles []GroupRole `yaml:"roles"`
	// SessionKey signs session cookies (at least 32 characters, normally a ${VAR}). Empty:
	// derived from clientSecret with HKDF, so every replica with the same config accepts
	// the same cookies and sessions survive restarts; rotating either ends every session.
	SessionKey string `yaml:"sessionKey"`
	// SessionTTL is how long a session lasts at most (default 8h); never beyond the ID
	// token's own expiry.
	SessionTTL time.Duration `yaml:"sessionTTL"`
}

// GroupRole grants a role over namespaces to the members of a group.
type GroupRole struct {
	Group string `yaml:"group"` // a value of the groups claim
	Role  string `yaml:"role"`  // one of viewer, operator, admin
	// Namespaces omitted: every namespace ("*").
	Namespaces []string `yaml:"namespaces"`
}

// DefaultSessionTTL bounds a dashboard session.
const DefaultSessionTTL = 8 * time.Hour

var (
	tokenNameRe = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,62})$`)
	sha256Re    = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// validRole reports whether r is one of internal/auth's roles (that package imports this
// one, so the three names are repeated here).
func validRole(r string) bool { return r == "viewer" || r == "operator" || r == "admin" }

// namespacesOrAll returns ns, or ["*"] when it is empty.
func namespacesOrAll(ns []string) []string {
	if len(ns) == 0 {
		return []string{"*"}
	}
	return ns
}

// validateAuth fills the auth section's defaults, records its secrets for scrubbing and
// checks it, and server.tls with it (both say who can reach what); idempotent (Validate may
// run twice).
func (c *Config) validateAuth(bad func(string, ...any)) {
	c.validateTLS(bad)
	a := c.Auth
	if a == nil {
		return
	}
	if a.Anonymous != "" && !validRole(a.Anonymous) {
		bad("auth.anonymous: %q is not one of viewer, operator, admin", a.Anonymous)
	}
	names, hashes := map[string]bool{}, map[string]bool{}
	for i := range a.Tokens {
		t := &a.Tokens[i]
		at := fmt.Sprintf("auth.tokens[%d]", i)
		if !tokenNameRe.MatchString(t.Name) {
			bad("%s.name: %q must be 1 to 63 letters, digits, '.', '_' or '-'", at, t.Name)
		}
		if names[t.Name] {
			bad("%s.name: token %q declared twice", at, t.Name)
		}
		names[t.Name] = true
		if _, err := hex.DecodeString(t.SHA256); err != nil || !sha256Re.MatchString(t.SHA256) {
			// Not quoted: someone may have pasted the token itself here.
			bad("%s.sha256: must be 64 lowercase hex digits (the line `trueup token create` prints), not the token", at)
		} else if hashes[t.SHA256] {
			bad("%s.sha256: the same token hash is declared twice", at)
		}
		hashes[t.SHA256] = true
		if !validRole(t.Role) {
			bad("%s.role: %q is not one of viewer, operator, admin", at, t.Role)
		}
		t.Namespaces = namespacesOrAll(t.Namespaces)
		validateNamespaces(at, t.Namespaces, bad)
	}
	if o := a.OIDC; o != nil {
		c.recordSecret(o.ClientSecret)
		c.recordSecret(o.SessionKey)
		if o.GroupsClaim == "" {
			o.GroupsClaim = "groups"
		}
		if o.SessionTTL == 0 {
			o.SessionTTL = DefaultSessionTTL
		}
		if o.SessionTTL < time.Minute {
			bad("auth.oidc.sessionTTL: %s is below 1m", o.SessionTTL)
		}
		if o.ClientID == "" {
			bad("auth.oidc.clientID: required")
		}
		if o.ClientSecret == "" {
			bad("auth.oidc.clientSecret: required")
		}
		if o.SessionKey != "" && len(o.SessionKey) < 32 {
			bad("auth.oidc.sessionKey: must be at least 32 characters")
		}
		if u, err := url.Parse(o.Issuer); o.Issuer == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			bad("auth.oidc.issuer: required, an https URL without credentials")
		} else if err := plaintext.Check("auth.oidc.issuer", u.Scheme, u.Hostname(), "the client secret and ID tokens", true, false); err != nil {
			bad("%w", err)
		}
		if len(o.Roles) == 0 {
			bad("auth.oidc.roles: at least one {group, role} is required (users in no mapped group are refused)")
		}
		for i := range o.Roles {
			g := &o.Roles[i]
			at := fmt.Sprintf("auth.oidc.roles[%d]", i)
			if g.Group == "" {
				bad("%s.group: required", at)
			}
			if !validRole(g.Role) {
				bad("%s.role: %q is not one of viewer, operator, admin", at, g.Role)
			}
			g.Namespaces = namespacesOrAll(g.Namespaces)
			validateNamespaces(at, g.Namespaces, bad)
		}
		u, err := url.Parse(c.Server.ExternalURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			bad("server.externalURL: %q must be an http(s) URL: it is where the provider sends people back (auth/callback)", c.Server.ExternalURL)
		}
	}
	if a.Anonymous == "" && len(a.Tokens) == 0 && a.OIDC == nil {
		bad("auth: set anonymous, tokens or oidc (an empty auth: section lets nobody in)")
	}
}

func validateNamespaces(at string, ns []string, bad func(string, ...any)) {
	for j, n := range ns {
		if n != "*" && !nameRe.MatchString(n) {
			bad("%s.namespaces[%d]: %q must be a namespace name or \"*\"", at, j, n)
		}
	}
}

// TLS serves the API and dashboard over HTTPS; both files are read again when they change
// (a renewed certificate needs no restart).
type TLS struct {
	CertFile string `yaml:"certFile"` // PEM certificate chain; relative to the config's folder
	KeyFile  string `yaml:"keyFile"`  // PEM private key; relative to the config's folder
}

func (c *Config) validateTLS(bad func(string, ...any)) {
	t := c.Server.TLS
	if t == nil {
		return
	}
	if t.CertFile == "" || t.KeyFile == "" {
		bad("server.tls: certFile and keyFile are both required")
	}
	t.CertFile, t.KeyFile = c.Path(t.CertFile), c.Path(t.KeyFile)
}

// CheckExposure is the secure default: without an auth: section trueup serves
// every caller as an anonymous admin, which is only acceptable when nobody else can reach
// the port. It returns an error naming the fix when listen is not a loopback address and
// auth is nil. serve calls it after the --listen flag is applied.
func CheckExposure(listen string, auth *Auth) error {
	if auth != nil {
		return nil
	}
	host, _, err := net.SplitHostPort(listen)
	if err == nil && plaintext.Loopback(host) {
		return nil
	}
	return fmt.Errorf("server.listen %s is reachable from other machines and the config has no auth: section, "+
		"so anyone could read and control trueup; add auth: with tokens or oidc (see `trueup token create`), "+
		"or `auth: {anonymous: viewer}` to allow anonymous read access explicitly, or listen on 127.0.0.1", listen)
}
