package server

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/auth"
)

// POST /api/v1/admin/reload is an admin's: others get 403 and nothing is reloaded. An
// admin gets 200 with what changed, or 422 with the errors; a refused reload is shown on
// the overview to admins.
func TestReloadEndpoint(t *testing.T) {
	t.Parallel()
	_, st := setup(t, 1)
	adminTok, adminHash := auth.NewToken()
	opTok, opHash := auth.NewToken()
	var mu sync.Mutex
	calls, refuse := 0, false
	var last *ReloadResult
	reload := func(context.Context) ReloadResult {
		mu.Lock()
		defer mu.Unlock()
		calls++
		res := ReloadResult{At: time.Now(), OK: !refuse, Hash: "abc123", SourcesAdded: []string{"b"}, RestartRequired: []string{"server"}}
		if refuse {
			res = ReloadResult{At: time.Now(), Errors: []string{`sources[1].dir.path: required`}}
		}
		last = &res
		return res
	}
	lastReload := func() (ReloadResult, bool) {
		mu.Lock()
		defer mu.Unlock()
		if last == nil {
			return ReloadResult{}, false
		}
		return *last, true
	}
	srv := authServer(t, st, "auth:\n  anonymous: viewer\n  tokens:\n    "+auth.TokenLine("root", adminHash, auth.Admin, []string{auth.AllNamespaces})+
		"\n    "+auth.TokenLine("ci-bot", opHash, auth.Operator, []string{auth.AllNamespaces})+"\n",
		func(o *Options) { o.Reload, o.LastReload = reload, lastReload })
	c := jarClient(t, false)
	bearer := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }

	for name, h := range map[string][]string{"anonymous viewer": nil, "operator": bearer(opTok)} {
		if code, body, _ := fetch(t, c, "POST", srv.URL+"/api/v1/admin/reload", nil, h...); code != 403 {
			t.Errorf("%s: %d %s, want 403", name, code, body)
		}
	}
	if calls != 0 {
		t.Fatalf("a refused caller reloaded %d times", calls)
	}

	code, body, _ := fetch(t, c, "POST", srv.URL+"/api/v1/admin/reload", nil, bearer(adminTok)...)
	var got reloadView
	if err := json.Unmarshal([]byte(body), &got); err != nil || code != 200 || !got.OK || got.Hash != "abc123" ||
		strings.Join(got.Sources.Added, ",") != "b" || got.Sources.Removed == nil || got.Errors == nil || got.RestartRequired[0] != "server" {
		t.Errorf("applied: %d %s (%v)", code, body, err)
	}
	if _, page, _ := fetch(t, c, "GET", srv.URL+"/", nil, bearer(adminTok)...); strings.Contains(page, "config-refused") {
		t.Errorf("the overview shows a banner after a reload that was applied")
	}

	mu.Lock()
	refuse = true
	mu.Unlock()
	code, body, _ = fetch(t, c, "POST", srv.URL+"/api/v1/admin/reload", nil, bearer(adminTok)...)
	got = reloadView{}
	if err := json.Unmarshal([]byte(body), &got); err != nil || code != 422 || got.OK || len(got.Errors) != 1 {
		t.Errorf("refused: %d %s (%v)", code, body, err)
	}
	if _, page, _ := fetch(t, c, "GET", srv.URL+"/", nil, bearer(adminTok)...); !strings.Contains(page, "Config reload refused") ||
		!strings.Contains(page, "sources[1].dir.path: required") {
		t.Errorf("the overview does not show the refused reload to an admin:\n%s", page)
	}
	if _, page, _ := fetch(t, c, "GET", srv.URL+"/", nil); strings.Contains(page, "config-refused") {
		t.Errorf("the overview shows the config's errors to a viewer")
	}
}
