package server

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/auth"
	"github.com/trueup-dev/trueup/internal/auth/oidctest"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/store"
)

// authServer serves st with the authenticator of authYAML (an auth: section) on loopback,
// as `trueup serve` wires it.
func authServer(t *testing.T, st *store.Store, authYAML string, mods ...func(*Options)) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ext := "http://" + ln.Addr().String() + "/"
	cfg, err := config.Parse([]byte("server: {listen: \""+ln.Addr().String()+"\"}\n"+authYAML), t.TempDir(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	a, err := auth.New(cfg.Auth, ext, logger)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Listen: ln.Addr().String(), ExternalURL: ext, Replica: "test", Authenticate: a.Authenticate,
		AuthRoutes: a.Routes(), LoginURL: a.LoginURL(), CSRFToken: a.CSRFToken}
	for _, m := range mods {
		m(&opts)
	}
	s := New(st, opts, logger)
	hs := &httptest.Server{Listener: ln, Config: &http.Server{Handler: s.Handler()}}
	hs.Start()
	t.Cleanup(hs.Close)
	return hs
}

func jarClient(t *testing.T, follow bool) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Jar: jar}
	if !follow {
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	return c
}

func fetch(t *testing.T, c *http.Client, method, u string, form url.Values, header ...string) (int, string, http.Header) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// TestOIDCLogin: the whole sign-in with a real OpenID provider flow (PKCE, state, nonce) on
// a real server: a page without a session goes to /login and comes back signed in, with the
// user's name and a sign-out button; the session works for the API and the watch stream; a
// tampered cookie is no session; sign-out needs the form's CSRF token and ends the session.
func TestOIDCLogin(t *testing.T) {
	t.Parallel()
	_, st := setup(t, 4)
	p := oidctest.New(t, "trueup", "client-secret-1")
	p.SetUser(oidctest.User{Subject: "u-1", Email: "ada@example.com", Groups: []string{"devs", "checkout"}})
	srv := authServer(t, st, fmt.Sprintf(`auth:
  oidc:
    issuer: %s
    clientID: trueup
    clientSecret: client-secret-1
    roles:
      - {group: checkout, role: operator, namespaces: [alpha]}
      - {group: nobody, role: admin}
`, p.Issuer))

	// No session: pages go to sign-in, the API answers 401.
	stranger := jarClient(t, false)
	code, _, h := fetch(t, stranger, "GET", srv.URL+"/resources?phase=Pending", nil)
	if code != http.StatusFound || h.Get("Location") != "/login?next=%2Fresources%3Fphase%3DPending" {
		t.Fatalf("page without a session: %d %q", code, h.Get("Location"))
	}
	if code, body, h := fetch(t, stranger, "GET", srv.URL+"/api/v1/resources", nil); code != http.StatusUnauthorized ||
		!strings.Contains(body, `"error"`) || h.Get("WWW-Authenticate") == "" {
		t.Fatalf("API without a session: %d %s", code, body)
	}
	if code, _, _ := fetch(t, stranger, "GET", srv.URL+"/static/dashboard.css", nil); code != http.StatusOK {
		t.Errorf("static files need no session: %d", code)
	}

	// Sign in: /login → provider → /auth/callback → back to the page.
	b := jarClient(t, true)
	code, body, _ := fetch(t, b, "GET", srv.URL+"/resources?phase=Pending", nil)
	if code != http.StatusOK || !strings.Contains(body, "ada@example.com") || !strings.Contains(body, "Sign out") {
		t.Fatalf("after sign-in: %d\n%s", code, body)
	}
	if logins, exchanges := p.Counts(); logins != 1 || exchanges != 1 {
		t.Errorf("provider saw %d logins, %d exchanges", logins, exchanges)
	}
	u, _ := url.Parse(srv.URL)
	cookies := b.Jar.Cookies(u)
	if len(cookies) != 1 || cookies[0].Name != "trueup_session" {
		t.Fatalf("cookies after sign-in: %v (the login cookie is used once)", cookies)
	}
	if code, _, _ := fetch(t, b, "GET", srv.URL+"/api/v1/resources", nil); code != http.StatusOK {
		t.Errorf("API with the session: %d", code)
	}

	// The session cookie's attributes.
	code, _, h = fetch(t, jarClient(t, false), "GET", srv.URL+"/login", nil)
	loc, _ := url.Parse(h.Get("Location"))
	if code != http.StatusFound || loc.Query().Get("code_challenge_method") != "S256" || loc.Query().Get("nonce") == "" || loc.Query().Get("state") == "" {
		t.Errorf("/login: %d %s", code, loc)
	}
	if sc := h.Get("Set-Cookie"); !strings.Contains(sc, "HttpOnly") || !strings.Contains(sc, "SameSite=Lax") || strings.Contains(sc, "Secure") {
		t.Errorf("login cookie over http: %s", sc)
	}

	// A tampered cookie is no session.
	forged := jarClient(t, false)
	v := cookies[0].Value
	forged.Jar.SetCookies(u, []*http.Cookie{{Name: "trueup_session", Value: strings.Replace(v, v[5:6], map[bool]string{true: "B", false: "A"}[v[5:6] == "A"], 1)}})
	if code, _, h := fetch(t, forged, "GET", srv.URL+"/", nil); code != http.StatusFound || !strings.HasPrefix(h.Get("Location"), "/login") {
		t.Errorf("tampered cookie, page: %d %s", code, h.Get("Location"))
	}
	if code, _, _ := fetch(t, forged, "GET", srv.URL+"/api/v1/resources", nil); code != http.StatusUnauthorized {
		t.Errorf("tampered cookie, API: %d", code)
	}

	// Sign out: without the CSRF token refused; with it the session ends.
	_, page, _ := fetch(t, b, "GET", srv.URL+"/", nil)
	m := csrfRe.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on the page:\n%s", page)
	}
	if code, _, _ := fetch(t, b, "POST", srv.URL+"/logout", url.Values{"csrf": {"forged"}}); code != http.StatusForbidden {
		t.Errorf("logout with a forged CSRF token: %d", code)
	}
	if code, body, _ := fetch(t, b, "POST", srv.URL+"/logout", url.Values{"csrf": {m[1]}}); code != http.StatusOK || !strings.Contains(body, "signed out") {
		t.Errorf("logout: %d %s", code, body)
	}
	if len(b.Jar.Cookies(u)) != 0 {
		t.Errorf("cookies after logout: %v", b.Jar.Cookies(u))
	}
	b.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if code, _, _ := fetch(t, b, "GET", srv.URL+"/", nil); code != http.StatusFound {
		t.Errorf("after logout: %d", code)
	}

	// A user in no mapped group is refused at sign-in.
	p.SetUser(oidctest.User{Subject: "u-2", Email: "eve@example.com", Groups: []string{"devs"}})
	if code, body, _ := fetch(t, jarClient(t, true), "GET", srv.URL+"/", nil); code != http.StatusForbidden || !strings.Contains(body, "eve@example.com") {
		t.Errorf("user in no group: %d %s", code, body)
	}
}

// TestTokenAuth: bearer tokens on the API, the watch stream and metrics; a bad token is a
// 401 even where anonymous access is allowed.
func TestTokenAuth(t *testing.T) {
	t.Parallel()
	_, st := setup(t, 2)
	tok, hash := auth.NewToken()
	srv := authServer(t, st, "auth:\n  anonymous: viewer\n  tokens:\n    "+auth.TokenLine("ci-bot", hash, auth.Operator, []string{"alpha"})+"\n")
	c := jarClient(t, false)
	for _, tc := range []struct {
		name, path, token string
		want              int
	}{
		{"token", "/api/v1/resources", tok, 200},
		{"anonymous viewer", "/api/v1/resources", "", 200},
		{"bad token", "/api/v1/resources", tok + "x", 401},
		{"bad token on a page", "/", "nope", 401},
		{"health needs nothing", "/healthz", "nope", 200},
	} {
		var h []string
		if tc.token != "" {
			h = []string{"Authorization", "Bearer " + tc.token}
		}
		if code, body, _ := fetch(t, c, "GET", srv.URL+tc.path, nil, h...); code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.want)
		}
	}
	// The watch stream with a token: the answer starts (an event stream), then we hang up.
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/watch", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Errorf("watch with a token: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	req.Header.Set("Authorization", "Bearer wrong")
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("watch with a bad token: %d", resp.StatusCode)
	}
}

// TestHostCheckEveryListen: the DNS-rebinding check runs on a non-loopback listen too, with
// the listen host, the machine's addresses when it listens on all of them (a pod's IP; an
// empty listen host means all of them too), and server.externalURL's host allowed. Addresses
// compare as addresses: without zones, and IPv4-mapped IPv6 as IPv4.
func TestHostCheckEveryListen(t *testing.T) {
	t.Parallel()
	local := []netip.Addr{netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("fe80::1%eth0"), netip.MustParseAddr("2001:db8::7")}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	common := map[string]int{"127.0.0.1:8080": 200, "localhost": 200, "[::1]:8080": 200, "trueup.example.com": 200,
		"TRUEUP.example.com.:443": 200, "attacker.example": http.StatusMisdirectedRequest,
		"192.0.2.1:8080": http.StatusMisdirectedRequest, "10.1.2.3:8080": 200, "10.1.2.3": 200,
		"[::ffff:10.1.2.3]:8080": 200, "[fe80::1%25eth0]:8080": 200, "[fe80::1]:8080": 200,
		"[2001:db8::7]:8080": 200, "[2001:DB8:0::7]": 200, "[2001:db8::8]:8080": http.StatusMisdirectedRequest}
	for _, listen := range []string{"0.0.0.0:8080", ":8080", "[::]:8080"} {
		h := New(nil, Options{Listen: listen, ExternalURL: "https://trueup.example.com/"}, slog.New(slog.DiscardHandler)).checkHostAddrs(ok, local)
		cases := maps.Clone(common)
		if host, _, _ := net.SplitHostPort(listen); host != "" {
			cases[listen] = 200
		}
		for host, want := range cases {
			req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
			req.Host = host
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != want {
				t.Errorf("listen %s, Host %s: %d, want %d", listen, host, rec.Code, want)
			}
		}
	}
	// A listen on one address serves that address, not the machine's others.
	h := New(nil, Options{Listen: "10.1.2.3:8080"}, slog.New(slog.DiscardHandler)).checkHostAddrs(ok, local)
	for host, want := range map[string]int{"10.1.2.3:8080": 200, "[::ffff:10.1.2.3]": 200, "[2001:db8::7]": http.StatusMisdirectedRequest} {
		req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("listen 10.1.2.3:8080, Host %s: %d, want %d", host, rec.Code, want)
		}
	}
}
