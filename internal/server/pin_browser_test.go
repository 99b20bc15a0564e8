package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboardPinBrowser pins a source from its page in headless Chromium (a revision of
// its list, a reason), sees the overview's banner, and unpins it: the forms work as a
// browser sends them, with no script error or CSP violation.
func TestDashboardPinBrowser(t *testing.T) {
	f := newDashboardFixture(t, 5)
	b := newBrowser(t)
	ctx := context.Background()
	// A pin made while the overview is open shows there live.
	b.do(t, "open the overview", chromedp.Navigate(f.url+"/"), chromedp.WaitVisible(chromedp.CSS("#health")))
	b.waitFor(t, "the watch stream", `document.getElementById('live').dataset.state === 'live'`, 20*time.Second)
	if _, err := f.st.PinSource(ctx, "infra", revB, "user:ann", "hold"); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the banner", `!document.getElementById("pins").hidden && document.getElementById("pins").textContent.includes("pinned at `+revB[:12]+` by user:ann: hold")`, 20*time.Second)
	if err := f.st.UnpinSource(ctx, "infra", "user:ann", ""); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the banner to go", `document.getElementById("pins").hidden`, 20*time.Second)

	b.do(t, "open the source", chromedp.Navigate(f.url+"/sources/infra"), chromedp.WaitVisible(chromedp.CSS("#revisions-h")))
	b.do(t, "pin an older revision", chromedp.Click(chromedp.CSS(`#revisions a[href*="revision=`+revA+`"]`)),
		chromedp.WaitVisible(chromedp.CSS("select#revision")))
	if got := b.eval(t, `document.querySelector("select#revision").value`); got != revA {
		t.Errorf("the pin form chose %q, want %s", got, revA)
	}
	b.do(t, "confirm", chromedp.SendKeys(chromedp.CSS("textarea#reason"), "incident 7"),
		chromedp.Click(chromedp.CSS(`section.confirm form button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("#pinned")))
	if pin, err := f.st.SourcePin(ctx, "infra"); err != nil || pin == nil || pin.Revision != revA || pin.Reason != "incident 7" {
		t.Fatalf("pinned %+v %v", pin, err)
	}
	b.do(t, "open the overview", chromedp.Navigate(f.url+"/"), chromedp.WaitVisible(chromedp.CSS("#pins")))
	if got := b.eval(t, `document.querySelector("#pins").textContent`); !strings.Contains(got, "source infra is pinned at "+revA[:12]) ||
		!strings.Contains(got, ": incident 7") {
		t.Errorf("banner: %q", got)
	}
	b.do(t, "follow the banner", chromedp.Click(chromedp.CSS("#pins a")), chromedp.WaitVisible(chromedp.CSS("#pinned")))
	b.do(t, "unpin", chromedp.Click(chromedp.CSS(`a[href$="/confirm/unpin"]`)), chromedp.WaitVisible(chromedp.CSS("textarea#reason")))
	b.do(t, "confirm", chromedp.Click(chromedp.CSS(`section.confirm form button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("#revisions-h")))
	b.waitFor(t, "the pin to go", `!document.getElementById("pinned")`, 10*time.Second)
	b.checkClean(t)
}
