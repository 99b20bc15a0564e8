package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/trueup-dev/trueup/internal/auth/oidctest"
)

// TestLoginBrowser: in headless Chromium, a page without a session goes through the fake
// OpenID provider and comes back signed in, with the user's name, a sign-out button and the
// live updates connected on the session cookie; a tampered cookie goes back to sign-in;
// signing out ends the session.
func TestLoginBrowser(t *testing.T) {
	_, st := setup(t, 4)
	p := oidctest.New(t, "trueup", "client-secret-1")
	p.SetUser(oidctest.User{Subject: "u-1", Email: "ada@example.com", Groups: []string{"checkout"}})
	srv := authServer(t, st, fmt.Sprintf("auth:\n  oidc: {issuer: %q, clientID: trueup, clientSecret: client-secret-1, roles: [{group: checkout, role: viewer}]}\n", p.Issuer))
	b := newBrowser(t)

	b.do(t, "sign in", chromedp.Navigate(srv.URL+"/resources"), chromedp.WaitVisible(chromedp.CSS(".account .user")))
	if got := b.eval(t, `document.querySelector(".account .user").textContent`); got != "ada@example.com" {
		t.Errorf("header shows %q", got)
	}
	if got := b.eval(t, `location.pathname`); got != "/resources" {
		t.Errorf("back at %q, want /resources", got)
	}
	b.waitFor(t, "live updates", `document.getElementById("live").dataset.state === "live"`, 15*time.Second)

	// A tampered cookie: back to sign-in (the fake provider signs in again at once).
	before, _ := p.Counts()
	res, err := chromedp.Call(b.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{srv.URL + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	tampered, httpOnly := false, true
	for _, c := range res.Cookies {
		if c.Name == "trueup_session" {
			v := strings.Replace(c.Value, c.Value[3:4], map[bool]string{true: "B", false: "A"}[c.Value[3:4] == "A"], 1)
			if _, err := chromedp.Call(b.ctx, network.SetCookie, network.SetCookieParams{Name: c.Name, Value: v, URL: srv.URL + "/", HTTPOnly: &httpOnly,
				SameSite: network.CookieSameSiteLax}); err != nil {
				t.Fatal(err)
			}
			tampered = true
		}
	}
	if !tampered {
		t.Fatalf("no session cookie in %d cookies", len(res.Cookies))
	}
	b.do(t, "with a tampered cookie", chromedp.Navigate(srv.URL+"/sources"), chromedp.WaitVisible(chromedp.CSS(".account .user")))
	if after, _ := p.Counts(); after != before+1 {
		t.Errorf("tampered cookie: %d sign-ins, want %d", after, before+1)
	}

	b.do(t, "sign out", chromedp.Click(chromedp.CSS(".account button")), chromedp.WaitVisible(chromedp.CSS("main.auth h1")))
	if got := b.eval(t, `document.querySelector("main.auth h1").textContent`); got != "Signed out" {
		t.Errorf("after sign-out: %q", got)
	}
	if got := b.eval(t, `document.cookie`); got != "" {
		t.Errorf("cookies visible to scripts: %q", got)
	}
	b.checkClean(t)
}
