package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/trueup-dev/trueup/internal/auth/oidctest"
)

// TestApproveBrowser: in headless Chromium, a user signed in through OpenID Connect in group
// dba sees the change that waits, approves it through the confirmation page and comes back to
// the resource with the vote shown, named by the session's identity.
func TestApproveBrowser(t *testing.T) {
	_, st := setup(t, 4)
	gate(t, st, "alpha", "q000")
	p := oidctest.New(t, "trueup", "client-secret-1")
	p.SetUser(oidctest.User{Subject: "u-1", Email: "ada@example.com", Groups: []string{"dba"}})
	srv := authServer(t, st, fmt.Sprintf("auth:\n  oidc: {issuer: %q, clientID: trueup, clientSecret: client-secret-1, roles: [{group: dba, role: viewer, namespaces: [alpha]}]}\n", p.Issuer))
	b := newBrowser(t)

	b.do(t, "open the waiting resource", chromedp.Navigate(srv.URL+"/resources/alpha/Queue/q000"), chromedp.WaitVisible(chromedp.CSS("#approval")))
	if got := b.eval(t, `document.querySelector("#approval pre.plan").textContent`); got != "-/+ queue (password "+knownSecret+")" {
		t.Errorf("plan shown: %q", got) // this server has no secrets to scrub
	}
	b.do(t, "approve", chromedp.Click(chromedp.CSS(`#approval a[href$="/confirm/approve"]`)), chromedp.WaitVisible(chromedp.CSS("textarea#reason")))
	b.do(t, "confirm", chromedp.SendKeys(chromedp.CSS("textarea#reason"), "checked the replacement"),
		chromedp.Click(chromedp.CSS(`section.confirm form button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("#approval .votes")))
	if got := b.eval(t, `document.querySelector("#approval .votes").textContent`); !strings.Contains(got, "approve by user:ada@example.com") ||
		!strings.Contains(got, "checked the replacement") {
		t.Errorf("votes shown after approving: %q", got)
	}
	if got := b.eval(t, `location.pathname`); got != "/resources/alpha/Queue/q000" {
		t.Errorf("back at %q", got)
	}
	b.checkClean(t)
}
