package auth

import (
	"errors"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/auth/oidctest"
	"github.com/trueup-dev/trueup/internal/config"
)

// clock is a settable time for sessions' expiry.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestSessionExpiry: a session lasts sessionTTL, then the same cookie is no credentials; a
// login cookie older than its ten minutes fails the callback.
func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	p := oidctest.New(t, "trueup", "s3cret")
	p.SetUser(oidctest.User{Subject: "u", Email: "ada@example.com", Groups: []string{"ops"}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ext := "http://" + ln.Addr().String() + "/"
	a, err := New(&config.Auth{OIDC: &config.OIDC{Issuer: p.Issuer, ClientID: "trueup", ClientSecret: "s3cret", GroupsClaim: "groups",
		SessionTTL: time.Hour, Roles: []config.GroupRole{{Group: "ops", Role: "viewer", Namespaces: []string{"staging"}}}}}, ext, quiet())
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Now()}
	a.now = clk.now
	var last struct {
		sync.Mutex
		id  Identity
		err error
	}
	m := http.NewServeMux()
	m.Handle("/login", a.Routes())
	m.Handle("/auth/callback", a.Routes())
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		id, err := a.Authenticate(r)
		last.Lock()
		last.id, last.err = id, err
		last.Unlock()
	})
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: m}}
	srv.Start()
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	get := func(path string) int {
		t.Helper()
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	check := func(wantName string, wantErr error) {
		t.Helper()
		last.Lock()
		defer last.Unlock()
		if last.id.Name != wantName || !errors.Is(last.err, wantErr) {
			t.Errorf("identity %+v, %v; want %q, %v", last.id, last.err, wantName, wantErr)
		}
	}
	if code := get("/login?next=/x"); code != 200 {
		t.Fatalf("sign-in: %d", code)
	}
	check("ada@example.com", nil)
	last.Lock()
	if last.id.Email != "ada@example.com" || !slices.Equal(last.id.Groups, []string{"ops"}) {
		t.Errorf("a session's email and groups: %q, %q", last.id.Email, last.id.Groups) // what approvals read
	}
	last.Unlock()

	// Another replica with the same config accepts the session (the key comes from the
	// config); one whose config no longer maps the user's group does not.
	u, _ := url.Parse(srv.URL)
	replica := func(group string) (Identity, error) {
		r, err := New(&config.Auth{OIDC: &config.OIDC{Issuer: p.Issuer, ClientID: "trueup", ClientSecret: "s3cret", GroupsClaim: "groups",
			SessionTTL: time.Hour, Roles: []config.GroupRole{{Group: group, Role: "operator"}}}}, ext, quiet())
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("GET", "/", nil)
		for _, c := range jar.Cookies(u) {
			req.AddCookie(c)
		}
		return r.Authenticate(req)
	}
	if id, err := replica("ops"); err != nil || id.Name != "ada@example.com" || id.Role != Operator {
		t.Errorf("another replica: %+v %v (the role follows that replica's mappings)", id, err)
	}
	if id, err := replica("someone-else"); !errors.Is(err, ErrNoCredentials) {
		t.Errorf("mapping removed: %+v %v", id, err)
	}

	clk.add(59 * time.Minute)
	get("/x")
	check("ada@example.com", nil)
	clk.add(2 * time.Minute)
	get("/x")
	check("", ErrNoCredentials)

	// A login cookie past its ten minutes: the callback refuses.
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Get(srv.URL + "/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	toProvider := resp.Header.Get("Location")
	resp, err = c.Get(toProvider)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	clk.add(11 * time.Minute)
	if code := get(resp.Header.Get("Location")[len(srv.URL):]); code != http.StatusBadRequest {
		t.Errorf("callback with an expired login cookie: %d", code)
	}
}

// TestSignInNextStaysLocal: the reproduction of the open redirect through the real sign-in
// (login → provider → callback): next=/%09/evil.example passed the old check, and browsers
// drop the TAB and go to //evil.example. The callback sends the user to "/" instead; a local
// next is kept.
func TestSignInNextStaysLocal(t *testing.T) {
	t.Parallel()
	p := oidctest.New(t, "trueup", "s3cret")
	p.SetUser(oidctest.User{Subject: "u", Email: "ada@example.com", Groups: []string{"ops"}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(&config.Auth{OIDC: &config.OIDC{Issuer: p.Issuer, ClientID: "trueup", ClientSecret: "s3cret", GroupsClaim: "groups",
		SessionTTL: time.Hour, Roles: []config.GroupRole{{Group: "ops", Role: "viewer"}}}}, "http://"+ln.Addr().String()+"/", quiet())
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: a.Routes()}}
	srv.Start()
	t.Cleanup(srv.Close)
	for _, c := range []struct{ query, want string }{
		{"next=/%09/evil.example", "/"},
		{"next=/%0A/evil.example", "/"},
		{"next=%2F%5Cevil.example", "/"},
		{"next=//evil.example", "/"},
		{"next=https:evil.example", "/"},
		{"next=/resources%3Fphase%3DFailed", "/resources?phase=Failed"},
	} {
		jar, _ := cookiejar.New(nil)
		cl := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		loc := srv.URL + "/login?" + c.query
		for range 3 { // login → provider → callback → the page after sign-in
			resp, err := cl.Get(loc)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusFound {
				t.Fatalf("%s: %s answered %d", c.query, loc, resp.StatusCode)
			}
			loc = resp.Header.Get("Location")
			if loc != "" && loc[0] == '/' {
				loc = srv.URL + loc
			}
		}
		if got := loc[len(srv.URL):]; got != c.want {
			t.Errorf("%s: after sign-in the browser goes to %q, want %q", c.query, got, c.want)
		}
	}
}
