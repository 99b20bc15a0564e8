package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/trueup-dev/trueup/internal/config"
)

// The dashboard's single sign-on: the authorization code flow with PKCE. /login sets a
// short-lived signed login cookie (state, nonce, PKCE verifier, where to go back) and
// redirects to the provider; /auth/callback checks the state, exchanges the code with the
// verifier, verifies the ID token (signature, issuer, audience, expiry) and its nonce, maps
// the groups claim to a role (MapGroups) and sets the session cookie; POST /logout clears it.

const (
	loginPath     = "/login"
	callbackPath  = "/auth/callback"
	logoutPath    = "/logout"
	loginTTL      = 10 * time.Minute
	exchangeLimit = 15 * time.Second
)

type oidcLogin struct {
	cfg         *config.OIDC
	redirectURL string
	secure      bool
	cookie      string // the session cookie's name
	loginCookie string
	seal        sealer
	log         *slog.Logger
	now         func() time.Time

	mu       sync.Mutex
	provider *oidc.Provider // discovered on first use, so a provider that is down does not stop trueup
}

func newOIDCLogin(cfg *config.OIDC, externalURL string, logger *slog.Logger, now func() time.Time) (*oidcLogin, error) {
	key, err := sessionKey(cfg)
	if err != nil {
		return nil, fmt.Errorf("auth.oidc: derive the session key: %w", err)
	}
	o := &oidcLogin{cfg: cfg, redirectURL: strings.TrimSuffix(externalURL, "/") + callbackPath, secure: secureCookies(externalURL),
		cookie: "trueup_session", loginCookie: "trueup_login", seal: sealer{key: key, now: now}, log: logger, now: now}
	if o.secure {
		// __Host-: the browser only accepts it Secure, for Path=/ and without Domain, so no
		// sibling subdomain can plant a session.
		o.cookie, o.loginCookie = "__Host-"+o.cookie, "__Host-"+o.loginCookie
	}
	return o, nil
}

func (o *oidcLogin) routes() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET "+loginPath, o.login)
	m.HandleFunc("GET "+callbackPath, o.callback)
	m.HandleFunc("POST "+logoutPath, o.logout)
	return m
}

// oauth returns the provider's OAuth2 config, discovering the provider on first use.
func (o *oidcLogin) oauth(ctx context.Context) (*oauth2.Config, *oidc.Provider, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.provider == nil {
		ctx, cancel := context.WithTimeout(ctx, exchangeLimit)
		defer cancel()
		p, err := oidc.NewProvider(ctx, o.cfg.Issuer)
		if err != nil {
			return nil, nil, fmt.Errorf("discover the OpenID provider %s: %w", o.cfg.Issuer, err)
		}
		o.provider = p
	}
	scopes := []string{oidc.ScopeOpenID, "profile", "email"}
	if len(o.cfg.Scopes) > 0 {
		scopes = append([]string{oidc.ScopeOpenID}, o.cfg.Scopes...)
	}
	return &oauth2.Config{ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret, Endpoint: o.provider.Endpoint(),
		RedirectURL: o.redirectURL, Scopes: scopes}, o.provider, nil
}

func randomString() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// localPath returns next when it is a path on this server, else "/": the redirect after
// login must not become an open redirect. Browsers drop tabs and newlines anywhere in a
// URL and read a backslash as a slash, so "/\t/evil.example" and "/\\evil.example" both
// lead off-site: any control character or backslash is refused, and what is left must
// parse as a path alone (no scheme, no host, not "//" even once decoded).
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") ||
		strings.ContainsRune(next, '\\') || strings.ContainsFunc(next, unicode.IsControl) {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" ||
		!strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//") {
		return "/"
	}
	return next
}

func (o *oidcLogin) setCookie(w http.ResponseWriter, name, value string, expires time.Time) {
	c := &http.Cookie{Name: name, Value: value, Path: "/", HttpOnly: true, Secure: o.secure, SameSite: http.SameSiteLaxMode}
	if value == "" {
		c.MaxAge = -1
	} else {
		c.Expires = expires
	}
	http.SetCookie(w, c)
}

func (o *oidcLogin) login(w http.ResponseWriter, r *http.Request) {
	oc, _, err := o.oauth(r.Context())
	if err != nil {
		o.log.Error("sign-in unavailable", "err", err)
		o.page(w, http.StatusServiceUnavailable, "Sign-in unavailable", "trueup cannot reach its OpenID provider. Try again in a moment.")
		return
	}
	st := loginState{State: randomString(), Nonce: randomString(), Verifier: oauth2.GenerateVerifier(),
		Next: localPath(r.URL.Query().Get("next")), Exp: o.now().Add(loginTTL).Unix()}
	v, err := o.seal.seal("login", &st)
	if err != nil {
		o.page(w, http.StatusInternalServerError, "Sign-in failed", "internal error")
		return
	}
	o.setCookie(w, o.loginCookie, v, st.expires())
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, oc.AuthCodeURL(st.State, oidc.Nonce(st.Nonce), oauth2.S256ChallengeOption(st.Verifier)), http.StatusFound)
}

func (o *oidcLogin) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var st loginState
	c, err := r.Cookie(o.loginCookie)
	if err != nil || o.seal.open("login", c.Value, &st) != nil {
		o.page(w, http.StatusBadRequest, "Sign-in expired", "The sign-in took too long or was started in another browser. Sign in again.")
		return
	}
	o.setCookie(w, o.loginCookie, "", time.Time{}) // one use
	if !hmac.Equal([]byte(q.Get("state")), []byte(st.State)) {
		o.page(w, http.StatusBadRequest, "Sign-in failed", "The answer of the sign-in provider does not belong to this sign-in. Sign in again.")
		return
	}
	if e := q.Get("error"); e != "" {
		o.log.Warn("sign-in refused by the provider", "error", e)
		o.page(w, http.StatusForbidden, "Sign-in refused", "The sign-in provider refused: "+e+".")
		return
	}
	id, groups, err := o.exchange(r.Context(), q.Get("code"), st)
	if err != nil {
		var ng noGroupError
		if errors.As(err, &ng) {
			o.log.Warn("sign-in refused: no mapped group", "user", ng.user)
			o.page(w, http.StatusForbidden, "No access", "You are signed in as "+ng.user+", but none of your groups is given a role in trueup.")
			return
		}
		o.log.Warn("sign-in failed", "err", err)
		o.page(w, http.StatusBadGateway, "Sign-in failed", "trueup could not complete the sign-in with the provider. Sign in again.")
		return
	}
	s := session{Name: id.Name, Email: id.Email, Groups: groups, ID: randomString(), Exp: o.now().Add(o.cfg.SessionTTL).Unix()}
	v, err := o.seal.seal("session", &s)
	if err != nil {
		o.page(w, http.StatusInternalServerError, "Sign-in failed", "internal error")
		return
	}
	o.setCookie(w, o.cookie, v, s.expires())
	o.log.Info("signed in", "user", id.Name, "role", string(id.Role), "namespaces", id.Namespaces)
	http.Redirect(w, r, st.Next, http.StatusFound)
}

type noGroupError struct{ user string }

func (e noGroupError) Error() string { return "user " + e.user + " is in no group mapped to a role" }

// exchange trades the code for tokens, verifies the ID token and maps its claims; it
// returns the user's identity and those of their groups that the config maps.
func (o *oidcLogin) exchange(ctx context.Context, code string, st loginState) (Identity, []string, error) {
	ctx, cancel := context.WithTimeout(ctx, exchangeLimit)
	defer cancel()
	oc, p, err := o.oauth(ctx)
	if err != nil {
		return Identity{}, nil, err
	}
	tok, err := oc.Exchange(ctx, code, oauth2.VerifierOption(st.Verifier))
	if err != nil {
		return Identity{}, nil, fmt.Errorf("exchange the code: %w", err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return Identity{}, nil, errors.New("the token answer has no id_token")
	}
	idt, err := p.VerifierContext(ctx, &oidc.Config{ClientID: o.cfg.ClientID, Now: o.now}).Verify(ctx, raw)
	if err != nil {
		return Identity{}, nil, fmt.Errorf("verify the ID token: %w", err)
	}
	if !hmac.Equal([]byte(idt.Nonce), []byte(st.Nonce)) {
		return Identity{}, nil, errors.New("the ID token's nonce does not match this sign-in")
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return Identity{}, nil, fmt.Errorf("read the ID token's claims: %w", err)
	}
	// The name events and history record: the email unless the provider says it is not
	// verified (anyone could then claim anyone's), else the username, else the subject.
	name, email := idt.Subject, ""
	if v, ok := claims["preferred_username"].(string); ok && v != "" {
		name = v
	}
	if v, ok := claims["email"].(string); ok && v != "" && claims["email_verified"] != false {
		name, email = v, v
	}
	var mapped []string
	for _, g := range groups(claims[o.cfg.GroupsClaim]) {
		if slices.ContainsFunc(o.cfg.Roles, func(m config.GroupRole) bool { return m.Group == g }) && !slices.Contains(mapped, g) {
			mapped = append(mapped, g) // only these go in the cookie: a user may be in hundreds
		}
	}
	role, ns := MapGroups(o.cfg.Roles, mapped)
	if role == "" {
		return Identity{}, nil, noGroupError{user: name}
	}
	return Identity{Kind: "user", Name: name, Role: role, Namespaces: ns, Email: email, Groups: mapped}, mapped, nil
}

// groups reads a groups claim: a list of strings, or one string.
func groups(v any) []string {
	switch g := v.(type) {
	case string:
		return []string{g}
	case []any:
		var out []string
		for _, x := range g {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// MapGroups decides a user's role and namespaces from their groups. An identity has one
// role, so: the role is the highest that any of the user's groups is given, and the
// namespaces are the union of those of the mappings that give that role. Mappings of lower
// roles add nothing: adding their namespaces would grant the higher role where only the
// lower was meant. (A user who is admin of "staging" through one group and viewer of "*"
// through another is admin of staging only; give such people a group mapped to what they
// need.) No mapped group: role "".
func MapGroups(mappings []config.GroupRole, userGroups []string) (Role, []string) {
	var role Role
	var ns []string
	for _, m := range mappings {
		if !slices.Contains(userGroups, m.Group) {
			continue
		}
		r := Role(m.Role)
		switch {
		case r.rank() > role.rank():
			role, ns = r, nil
		case r != role:
			continue
		}
		for _, n := range namespacesOrAll(m.Namespaces) {
			if !slices.Contains(ns, n) {
				ns = append(ns, n)
			}
		}
	}
	if slices.Contains(ns, AllNamespaces) {
		ns = []string{AllNamespaces}
	}
	return role, ns
}

// session reads the session cookie; false when there is none or it is not valid.
func (o *oidcLogin) session(r *http.Request) (Identity, bool) {
	s, ok := o.readSession(r)
	if !ok {
		return Identity{}, false
	}
	role, ns := MapGroups(o.cfg.Roles, s.Groups)
	if role == "" {
		return Identity{}, false // the config no longer maps any of the user's groups
	}
	return Identity{Kind: "user", Name: s.Name, Role: role, Namespaces: ns, Email: s.Email, Groups: s.Groups}, true
}

func (o *oidcLogin) readSession(r *http.Request) (session, bool) {
	var s session
	c, err := r.Cookie(o.cookie)
	if err != nil || o.seal.open("session", c.Value, &s) != nil {
		return session{}, false
	}
	return s, true
}

// csrfToken is derived from the session's random ID: a page of another site can neither
// read it nor compute it.
func (o *oidcLogin) csrfToken(r *http.Request) string {
	s, ok := o.readSession(r)
	if !ok {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(o.seal.mac("csrf", s.ID))
}

func (o *oidcLogin) checkCSRF(r *http.Request) bool {
	want := o.csrfToken(r)
	return want != "" && hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(want))
}

func (o *oidcLogin) logout(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if _, ok := o.readSession(r); ok && !o.checkCSRF(r) {
		o.page(w, http.StatusForbidden, "Sign-out refused", "The sign-out form is stale or came from another site. Reload the page and sign out again.")
		return
	}
	o.setCookie(w, o.cookie, "", time.Time{})
	o.page(w, http.StatusOK, "Signed out", "You are signed out of trueup.")
}

var pageTmpl = template.Must(template.New("").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · trueup</title><link rel="stylesheet" href="/static/dashboard.css"></head>
<body><main id="main" class="auth"><h1>{{.Title}}</h1><p>{{.Detail}}</p><p><a href="` + loginPath + `">Sign in</a> · <a href="/">Dashboard</a></p></main></body></html>
`))

// page answers with a small HTML page of its own: the dashboard's templates belong to the
// server, and these pages need none of its data.
func (o *oidcLogin) page(w http.ResponseWriter, code int, title, detail string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = pageTmpl.Execute(w, struct{ Title, Detail string }{title, detail})
}
