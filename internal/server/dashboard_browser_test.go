package server

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/trueup-dev/trueup/internal/store"
)

// chromiumInstall is what a machine without a browser needs (DESIGN §13: Debian's package;
// browser downloads by test tools fail here).
const chromiumInstall = "apt-get install -y chromium"

// chromiumPath finds Debian's Chromium; a machine without it fails the test, never skips it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "/usr/bin/chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("headless Chromium is needed for the dashboard's browser test and was not found: install it with `%s`", chromiumInstall)
	return ""
}

// browser is one headless Chromium tab that records dialogs and console errors.
type browser struct {
	ctx context.Context

	mu      sync.Mutex
	dialogs []string
	errors  []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless, // --headless
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 3*time.Minute)
	b := &browser{ctx: ctx}
	// The browser goes before the HTTP server (cleanups run last-in first-out), so that its
	// open watch streams end and the server can close.
	var wg sync.WaitGroup
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc(); wg.Wait() })

	dialogs := chromedp.Events(ctx, cdppage.JavascriptDialogOpening)
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start %s: %v (is it installed? `%s`)", chromiumPath(t), err, chromiumInstall)
	}
	console := chromedp.Console(ctx)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.dialogs = append(b.dialogs, string(ev.Type)+": "+ev.Message)
			b.mu.Unlock()
			_, _ = chromedp.Call(ctx, cdppage.HandleJavaScriptDialog, cdppage.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	go func() {
		defer wg.Done()
		for m, err := range console {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == "error" {
				b.mu.Lock()
				b.errors = append(b.errors, m.String())
				b.mu.Unlock()
			}
		}
	}()
	return b
}

func (b *browser) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	start := time.Now()
	defer func() { t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond)) }()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func (b *browser) eval(t *testing.T, expr string) string {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript predicate in the page until it holds.
func (b *browser) waitFor(t *testing.T, what, predicate string, timeout time.Duration) {
	t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](predicate,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(timeout))); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// checkClean fails when a page opened a dialog or logged an error (a CSP violation is one).
func (b *browser) checkClean(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.dialogs) > 0 {
		t.Errorf("dialogs opened: %q", b.dialogs)
	}
	if len(b.errors) > 0 {
		t.Errorf("console errors: %q", b.errors)
	}
}

// screenshot saves the whole page as docs/screenshots/NAME.png when TRUEUP_SCREENSHOTS=1,
// else into a temporary folder.
func (b *browser) screenshot(t *testing.T, dir, name string) {
	t.Helper()
	b.capture(t, dir, name, chromedp.FullScreenshot(100))
}

func (b *browser) capture(t *testing.T, dir, name string, shot chromedp.Action[[]byte]) {
	t.Helper()
	png, err := chromedp.Run(b.ctx, shot)
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (b *browser) colorScheme(t *testing.T, scheme string) {
	t.Helper()
	if _, err := chromedp.Call(b.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
		t.Fatal(err)
	}
}

// TestDashboardBrowser drives the dashboard in headless Chromium: every page loads with no
// script error or CSP violation, the XSS fixture runs nothing, an engineer can go from the
// overview to a failing resource's history, and changes arrive live without a reload.
func TestDashboardBrowser(t *testing.T) {
	f := newDashboardFixture(t, 120)
	b := newBrowser(t)
	shots := t.TempDir()
	if os.Getenv("TRUEUP_SCREENSHOTS") == "1" {
		shots = filepath.Join("..", "..", "docs", "screenshots")
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	pages := []struct{ path, ready, shot string }{
		{"/", "#health", "overview"},
		{"/resources?label=team!%3Dbulk", "#results table", "resources"},
		{"/resources/prod/DatabaseCluster/billing-db", "#history-h", "resource"},
		{"/resources/prod/DatabaseCluster/orders-db", "#history-h", "resource-ready"},
		{"/sources", "#source-list table", "sources"},
		{"/sources/apps", "#errors-h", "source"},
		{"/resources/dev/Queue/scratch", "#history-h", ""},
	}
	for _, scheme := range []string{"light", "dark"} {
		b.colorScheme(t, scheme)
		for _, p := range pages {
			b.do(t, "load "+p.path, chromedp.Navigate(f.url+p.path), chromedp.WaitVisible(chromedp.CSS(p.ready)))
			if p.shot != "" && (scheme == "light" || p.shot == "overview" || p.shot == "resource") {
				b.screenshot(t, shots, p.shot+"-"+scheme)
			}
		}
	}
	b.colorScheme(t, "light")
	// A phone, which is what an engineer paged at night often has at hand.
	b.do(t, "load the overview on a phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)),
		chromedp.Navigate(f.url+"/"), chromedp.WaitVisible(chromedp.CSS("#health")))
	b.capture(t, shots, "overview-phone", chromedp.CaptureScreenshot())
	b.do(t, "load a resource on a phone", chromedp.Navigate(f.url+"/resources/prod/DatabaseCluster/billing-db"), chromedp.WaitVisible(chromedp.CSS("#history-h")))
	b.capture(t, shots, "resource-phone", chromedp.CaptureScreenshot())
	b.do(t, "back to a desktop", chromedp.EmulateViewport(1440, 900))
	b.checkClean(t)

	// A missing resource is a page too (its 404 is the one console error a browser logs).
	b.do(t, "load a missing resource", chromedp.Navigate(f.url+"/resources/nowhere/Queue/nothing"), chromedp.WaitVisible(chromedp.CSS(".error-code")))
	b.mu.Lock()
	b.errors = nil
	b.mu.Unlock()

	// The XSS fixture: shown, and inert.
	for _, p := range []string{"/resources/xss/Queue/evil", "/resources?namespace=xss", "/"} {
		b.do(t, "load "+p, chromedp.Navigate(f.url+p), chromedp.WaitVisible(chromedp.CSS("main")))
		got := b.eval(t, `JSON.stringify({
			imgs: document.querySelectorAll('img').length,
			onerror: document.querySelectorAll('[onerror]').length,
			scripts: [...document.scripts].filter(s => s.src === '' || s.textContent.includes('alert')).length,
			jsLinks: [...document.querySelectorAll('a[href]')].filter(a => a.protocol === 'javascript:').length,
			shown: document.body.textContent.includes('<script>alert(1)</script>')
		})`)
		if got != `{"imgs":0,"onerror":0,"scripts":0,"jsLinks":0,"shown":true}` {
			t.Errorf("%s: %s", p, got)
		}
	}

	// Overview → the newest failure → its history.
	b.do(t, "open the overview", chromedp.Navigate(f.url+"/"), chromedp.WaitVisible(chromedp.CSS("#failures table")))
	b.do(t, "follow the first failure", chromedp.Click(chromedp.CSS("#failures tbody tr:first-child a")),
		chromedp.WaitVisible(chromedp.CSS("#history-h")))
	if loc, _ := chromedp.Run(b.ctx, chromedp.Location()); !strings.HasSuffix(loc, "/resources/prod/DatabaseCluster/billing-db") {
		t.Errorf("the first failure led to %s", loc)
	}
	if got := b.eval(t, `[...document.querySelectorAll('table.history tbody tr')].map(r => r.cells[2].textContent.trim()).join(',')`); got != "Failed,Failed,Failed" {
		t.Errorf("history results: %q", got)
	}
	b.checkClean(t)

	// Live: a new revision changes prod/orders-db; its phase cell changes without a reload.
	b.do(t, "open the prod list", chromedp.Navigate(f.url+"/resources?namespace=prod"), chromedp.WaitVisible(chromedp.CSS("#results table")))
	b.waitFor(t, "the watch stream", `document.getElementById('live').dataset.state === 'live'`, 20*time.Second)
	cell := `document.querySelector('[data-phase-for="prod/databasecluster/orders-db"]').textContent`
	if got := b.eval(t, cell); !strings.Contains(got, "Ready") {
		t.Fatalf("orders-db before the change: %q", got)
	}
	b.eval(t, `window.__sameDocument = 'yes'`)
	f.apply(t, 3, 120, "5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7081")
	b.waitFor(t, "orders-db Reconciling", cell+`.includes('Reconciling')`, 20*time.Second)
	if got := b.eval(t, `window.__sameDocument || 'reloaded'`); got != "yes" {
		t.Errorf("the page reloaded: %s", got)
	}

	// Live: the reconciler's write (Claim, Complete) moves the overview's counts in place.
	b.do(t, "open the overview", chromedp.Navigate(f.url+"/"), chromedp.WaitVisible(chromedp.CSS("#counts")))
	b.waitFor(t, "the watch stream", `document.getElementById('live').dataset.state === 'live'`, 20*time.Second)
	readyCount := `document.querySelector('[data-count="Ready"] .card-n').textContent.trim()`
	before := b.eval(t, readyCount)
	b.eval(t, `window.__sameDocument = 'yes'`)
	completeOne(t, f.st, "prod", "orders-db")
	var want int
	if _, err := fmt.Sscan(before, &want); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the Ready count to grow", fmt.Sprintf(`%s === '%d'`, readyCount, want+1), 20*time.Second)
	if got := b.eval(t, `window.__sameDocument || 'reloaded'`); got != "yes" {
		t.Errorf("the page reloaded: %s", got)
	}
	b.checkClean(t)
}

// completeOne claims what is due and completes namespace/name as Ready, releasing the rest.
func completeOne(t *testing.T, st *store.Store, namespace, name string) {
	t.Helper()
	ctx := context.Background()
	claimed, err := st.Claim(ctx, "replica-a", 1000, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	done := false
	for _, c := range claimed {
		if c.Namespace == namespace && c.Name == name {
			if _, err := st.CompleteBatch(ctx, []store.Completion{completion(c, attemptOutcome{}, 1)}); err != nil {
				t.Fatal(err)
			}
			done = true
		} else if err := st.Release(ctx, "replica-a", []int64{c.ID}, []string{c.LeaseToken}); err != nil {
			t.Fatal(err)
		}
	}
	if !done {
		t.Fatalf("%s/%s was not due", namespace, name)
	}
}
