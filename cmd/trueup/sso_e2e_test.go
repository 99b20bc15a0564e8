package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/trueup-dev/trueup/internal/auth/oidctest"
	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

// TestSingleSignOnEndToEnd runs trueup serve as a process with OpenID Connect against a fake
// provider on loopback and drives the dashboard in headless Chromium: signing in, a viewer of
// namespace staging sees only staging on every page and in the live updates (an EventSource
// on the session cookie while resources of both namespaces change); a tampered cookie goes
// back to the provider; signing out ends the session.
func TestSingleSignOnEndToEnd(t *testing.T) {
	p := oidctest.New(t, "trueup", "sso-client-secret-1")
	p.SetUser(oidctest.User{Subject: "u-7", Email: "ada@example.com", Groups: []string{"stg-viewers"}})

	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	writeTestFile(t, filepath.Join(repo, "types.yaml"), manifesttest.TypeDoc("App", "apps.example.com", "{type: object}", "noop"))
	app := func(ns, name string, size int) string {
		return fmt.Sprintf("apiVersion: apps.example.com/v1\nkind: App\nmetadata: {name: %s, namespace: %s}\nspec: {size: %d}\n", name, ns, size)
	}
	writeTestFile(t, filepath.Join(repo, "staging.yaml"), app("staging", "web-stg", 1)+"---\n"+app("staging", "api-stg", 1))
	writeTestFile(t, filepath.Join(repo, "production.yaml"), app("production", "hidden-prod-web", 1)+"---\n"+app("production", "hidden-prod-db", 1))

	addr := freeAddr(t)
	base := "http://" + addr
	cfgPath := filepath.Join(dir, "trueup.yaml")
	writeTestFile(t, cfgPath, fmt.Sprintf(`server: {listen: "%s", externalURL: "%s/"}
sources:
  - name: local
    dir: {path: %s}
actions:
  - {name: noop, type: noop}
auth:
  oidc:
    issuer: %s
    clientID: trueup
    clientSecret: "${SSO_CLIENT_SECRET}"
    roles:
      - {group: stg-viewers, role: viewer, namespaces: [staging]}
`, addr, base, repo, p.Issuer))

	dbURL := pgtest.NewDatabase(t, store.MigrateURL)
	cmd := exec.Command(os.Args[0], "serve", "--config", cfgPath)
	cmd.Env = append(os.Environ(), "TRUEUP_TEST_RUN_MAIN=1", "TRUEUP_DATABASE_URL="+dbURL, "SSO_CLIENT_SECRET=sso-client-secret-1")
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	conn := connect(t, dbURL)
	waitReady := func(n int) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			var ready int
			_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM resources WHERE phase = 'Ready' AND observed_generation = generation`).Scan(&ready)
			if ready == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d Ready\n%s", ready, n, logs.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitReady(4)

	chromium := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		t.Fatal("headless Chromium is needed and was not found: install it with `apt-get install -y chromium` (.ci/ensure-chromium.sh)")
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(chromium), chromedp.Headless,
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()))
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 2*time.Minute)
	defer func() { cancelTime(); cancelTab(); cancelAlloc() }()
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, logs.String())
		}
	}
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
		return v
	}
	text := func() string { t.Helper(); return eval(`document.body.innerText`) }

	// Signing in: a page without a session goes through the provider and comes back.
	do("sign in", chromedp.Navigate(base+"/resources"), chromedp.WaitVisible(chromedp.CSS(".account .user")))
	if logins, _ := p.Counts(); logins != 1 {
		t.Fatalf("provider sign-ins: %d", logins)
	}
	// Every page shows staging only.
	for _, page := range []string{"/", "/resources", "/resources?q=prod", "/sources", "/sources/local", "/resources/staging/App/web-stg"} {
		do("open "+page, chromedp.Navigate(base+page), chromedp.WaitVisible(chromedp.CSS(".account .user")))
		body := text()
		if strings.Contains(body, "hidden-prod") || strings.Contains(body, "production") {
			t.Errorf("%s shows production to a viewer of staging:\n%s", page, body)
		}
		if (page == "/resources" || page == "/resources/staging/App/web-stg") && !strings.Contains(body, "web-stg") {
			t.Errorf("%s does not show staging:\n%s", page, body)
		}
	}
	do("open a production resource", chromedp.Navigate(base+"/resources/production/App/hidden-prod-web"), chromedp.WaitVisible(chromedp.CSS("body")))
	if body := text(); strings.Contains(body, "hidden-prod-web") && !strings.Contains(strings.ToLower(body), "not found") {
		t.Errorf("a production resource page was shown:\n%s", body)
	}

	// Live updates on the session cookie: both namespaces change; the stream carries staging only.
	do("open the overview", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(".account .user")))
	eval(`window.seen = []; window.es = new EventSource("/api/v1/watch");
		["resource", "source"].forEach(k => es.addEventListener(k, e => seen.push(e.data))); "ok"`)
	time.Sleep(500 * time.Millisecond)
	writeTestFile(t, filepath.Join(repo, "production.yaml"), app("production", "hidden-prod-web", 2)+"---\n"+app("production", "hidden-prod-db", 2))
	writeTestFile(t, filepath.Join(repo, "staging.yaml"), app("staging", "web-stg", 2)+"---\n"+app("staging", "api-stg", 1))
	waitReady(4)
	deadline := time.Now().Add(20 * time.Second)
	var seen string
	for {
		seen = eval(`seen.join("\n")`)
		if strings.Contains(seen, "web-stg") || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(seen, "web-stg") {
		t.Errorf("the live stream carried no staging change:\n%s", seen)
	}
	if strings.Contains(seen, "hidden-prod") || strings.Contains(seen, "production") {
		t.Errorf("the live stream carried production to a viewer of staging:\n%s", seen)
	}
	eval(`es.close(); "ok"`)

	// A tampered cookie: back to the provider.
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	tampered, httpOnly := false, true
	for _, c := range res.Cookies {
		if c.Name == "trueup_session" {
			v := []byte(c.Value)
			if v[len(v)/2] == 'A' {
				v[len(v)/2] = 'B'
			} else {
				v[len(v)/2] = 'A'
			}
			if _, err := chromedp.Call(ctx, network.SetCookie, network.SetCookieParams{Name: c.Name, Value: string(v), URL: base + "/",
				HTTPOnly: &httpOnly, SameSite: network.CookieSameSiteLax}); err != nil {
				t.Fatal(err)
			}
			tampered = true
		}
	}
	if !tampered {
		t.Fatalf("no session cookie among %d", len(res.Cookies))
	}
	do("with a tampered cookie", chromedp.Navigate(base+"/sources"), chromedp.WaitVisible(chromedp.CSS(".account .user")))
	if logins, _ := p.Counts(); logins != 2 {
		t.Errorf("a tampered cookie was accepted (provider sign-ins: %d, want 2)", logins)
	}

	// Signing out.
	do("sign out", chromedp.Click(chromedp.CSS(".account button")), chromedp.WaitVisible(chromedp.CSS("main.auth h1")))
	if body := text(); !strings.Contains(body, "Signed out") {
		t.Errorf("after signing out:\n%s", body)
	}
	do("the API after signing out", chromedp.Navigate(base+"/api/v1/resources"), chromedp.WaitVisible(chromedp.CSS("body")))
	if body := text(); !strings.Contains(body, `"error"`) || strings.Contains(body, "web-stg") {
		t.Errorf("the API after signing out answered:\n%s", body)
	}

}
