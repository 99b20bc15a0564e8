package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/trueup-dev/trueup/internal/store"
)

// TestPreviewPagesBrowser loads the source page's previews and a preview page in headless
// Chromium: no script error or CSP violation in either scheme, the markup in titles, diffs
// and plans inert, and a plan's full text folded until its summary is clicked.
func TestPreviewPagesBrowser(t *testing.T) {
	f := newDashboardFixture(t, 0)
	res, err := json.Marshal(previewResult())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.SavePreview(context.Background(), store.Preview{Source: "apps", Number: 7, Provider: "gitlab",
		Title: `Bigger queues <img src=x onerror=alert(1)>`, URL: "https://gitlab.example.com/platform/apps/-/merge_requests/7",
		HeadSHA: "7777777777777777777777777777777777777777", BaseRevision: revA, State: store.PreviewSucceeded,
		Message: "1 to add, 1 to change, 1 to delete", Result: res}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	shots := t.TempDir()
	if os.Getenv("TRUEUP_SCREENSHOTS") == "1" {
		shots = filepath.Join("..", "..", "docs", "screenshots")
	}
	for _, scheme := range []string{"light", "dark"} {
		b.colorScheme(t, scheme)
		b.do(t, "load the source page", chromedp.Navigate(f.url+"/sources/apps"), chromedp.WaitVisible(chromedp.CSS("#previews table")))
		b.screenshot(t, shots, "source-previews-"+scheme)
		b.do(t, "open the preview", chromedp.Click(chromedp.CSS("#previews tbody td a")), chromedp.WaitVisible(chromedp.CSS("#changes table")))
		b.screenshot(t, shots, "preview-"+scheme)
	}
	got := b.eval(t, `JSON.stringify({
		imgs: document.querySelectorAll('img').length,
		onerror: document.querySelectorAll('[onerror]').length,
		scripts: [...document.scripts].filter(s => s.src === '' || s.textContent.includes('alert')).length,
		shown: document.body.textContent.includes('<script>alert(1)</script>'),
		plansOpen: [...document.querySelectorAll('#changes details')].filter(d => d.open && d.querySelector('summary').textContent.startsWith('Plan')).length,
		diffs: document.querySelectorAll('#changes pre.diff').length
	})`)
	if got != `{"imgs":0,"onerror":0,"scripts":0,"shown":true,"plansOpen":0,"diffs":3}` {
		t.Errorf("preview page: %s", got)
	}
	b.do(t, "unfold a plan", chromedp.Click(chromedp.CSS("#changes details:not([open]) summary")))
	if open := b.eval(t, `String([...document.querySelectorAll('#changes details')].filter(d => d.open).length)`); open != "4" {
		t.Errorf("%s details open after unfolding one plan, want 4 (3 diffs and the plan)", open)
	}
	b.checkClean(t)
}
