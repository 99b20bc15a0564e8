package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/server"
	"github.com/trueup-dev/trueup/internal/store"
)

// The production values a viewer of staging must never meet: outputs, spec values, and the
// name of a production resource that no staging manifest names.
var productionSecrets = []string{"proddbhost-7f3a.internal", "prodpass-9b1c", "prodspec-engine-42c", "billingdb", "billing-host-55e1"}

const crossTypes = `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Db}
spec:
  group: example.com
  versions:
    - name: v1
      schema: {type: object, properties: {engine: {type: string}}}
  action: {name: provision}
---
apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: App}
spec:
  group: example.com
  versions:
    - name: v1
      schema: {type: object, properties: {host: {type: string}, note: {type: string}}}
  action: {name: provision}
`

// crossAction answers every call: production Dbs output their host and password, the
// staging App outputs nothing it was given.
const crossAction = `#!/bin/sh
cat > /dev/null
case "$TRUEUP_NAMESPACE/$TRUEUP_NAME" in
production/ordersdb) printf '{"done": true, "outputs": {"host": "proddbhost-7f3a.internal", "password": "prodpass-9b1c"}}\n' ;;
production/billingdb) printf '{"done": true, "outputs": {"host": "billing-host-55e1"}}\n' ;;
*) printf '{"done": true, "outputs": {"ok": "yes"}, "message": "deployed"}\n' ;;
esac
`

// TestCrossNamespaceViewerNeverSeesProduction: the real binary, a staging App reading a
// production Db's host. Granted, the App runs with the value and a viewer of staging still
// never meets it (nor any production output, spec value or unreferenced name) on any GET of
// the OpenAPI document or any dashboard page; the grant removed by a reload, the App stalls
// naming the missing grant, and a new revision reading the Db's password is refused at
// ingest with file:line; the crawl finds nothing then either.
func TestCrossNamespaceViewerNeverSeesProduction(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	writeTestFile(t, filepath.Join(repo, "types.yaml"), crossTypes)
	writeTestFile(t, filepath.Join(repo, "production.yaml"), `apiVersion: example.com/v1
kind: Db
metadata: {name: ordersdb, namespace: production}
spec: {engine: prodspec-engine-42c}
---
apiVersion: example.com/v1
kind: Db
metadata: {name: billingdb, namespace: production}
spec: {engine: prodspec-engine-42c}
`)
	app := `apiVersion: example.com/v1
kind: App
metadata: {name: web, namespace: staging}
spec:
  host: "${{ Db/production/ordersdb.outputs.host }}"
  note: staging-note
`
	writeTestFile(t, filepath.Join(repo, "staging.yaml"), app)
	script := filepath.Join(dir, "action.sh")
	writeTestFile(t, script, crossAction)
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	adminTok, adminLine := createToken(t, "root", "--role", "admin")
	viewerTok, viewerLine := createToken(t, "stg-viewer", "--role", "viewer", "-n", "staging")
	addr := freeAddr(t)
	base := fmt.Sprintf(`server: {listen: %q}
auth:
  tokens:
    %s
    %s
sources:
  - name: infra
    dir: {path: %s, interval: 1s}
actions:
  - {name: provision, type: exec, config: {command: [%s], timeout: 30s}}
reconcile: {workers: 2, backoff: {initial: 200ms, max: 1s}}
`, addr, adminLine, viewerLine, repo, script)
	const grant = "references:\n  expose:\n    - {namespace: production, kinds: [Db], outputs: [host], to: [{namespace: staging}]}\n"
	cfgPath := filepath.Join(dir, "trueup.yaml")
	writeTestFile(t, cfgPath, base+grant)
	cmd := exec.Command(os.Args[0], "serve", "--config", cfgPath, "--data-dir", filepath.Join(dir, "data"))
	cmd.Env = append(os.Environ(), "TRUEUP_TEST_RUN_MAIN=1", "TRUEUP_DATABASE_URL="+pgtest.NewDatabase(t, store.MigrateURL))
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	u := "http://" + addr
	get := func(tok, path string) (int, string) {
		t.Helper()
		// A watch streams until the request ends: what it sent in 2s is read.
		limit := 10 * time.Second
		if strings.HasPrefix(path, "/api/v1/watch") {
			limit = 2 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	eventually := func(what string, cond func() (bool, string)) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			ok, last := cond()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 90s (last: %s)\n%s", what, last, logs.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	type resource struct {
		Status struct {
			Phase        string          `json:"phase"`
			Message      string          `json:"message"`
			ResolvedSpec json.RawMessage `json:"resolvedSpec"`
			Conditions   []struct {
				Type, Status, Message string
			} `json:"conditions"`
		} `json:"status"`
	}
	webAs := func(tok string) resource {
		var r resource
		_, body := get(tok, "/api/v1/resources/staging/App/web")
		_ = json.Unmarshal([]byte(body), &r)
		return r
	}
	eventually("staging/web Ready with production's host", func() (bool, string) {
		r := webAs(adminTok)
		return r.Status.Phase == "Ready" && strings.Contains(string(r.Status.ResolvedSpec), "proddbhost-7f3a.internal"), r.Status.Phase + " " + string(r.Status.ResolvedSpec)
	})
	if r := webAs(viewerTok); !strings.Contains(string(r.Status.ResolvedSpec), `"host":"***"`) || !strings.Contains(string(r.Status.ResolvedSpec), "staging-note") {
		t.Fatalf("viewer of staging: resolvedSpec %s", r.Status.ResolvedSpec)
	}
	// crawl GETs every path as tok and returns what each production value was met in; a value
	// the request itself names (a 404 for it, a search for it) is the caller's own.
	crawl := func(tok string) (map[string][]string, int) {
		t.Helper()
		met := map[string][]string{}
		paths := crawlPaths(t)
		for _, p := range paths {
			if tok == adminTok && strings.HasPrefix(p, "/api/v1/watch") {
				continue // the admin's crawl only shows where the values are; streams wait
			}
			code, body := get(tok, p)
			if code == 0 && !strings.HasPrefix(p, "/api/v1/watch") {
				t.Errorf("GET %s: %s", p, body)
			}
			for _, s := range productionSecrets {
				if strings.Contains(body, s) && !strings.Contains(p, s) {
					met[s] = append(met[s], fmt.Sprintf("%s (%d)", p, code))
				}
			}
		}
		return met, len(paths)
	}
	check := func(when string) {
		t.Helper()
		met, n := crawl(viewerTok)
		for s, where := range met {
			t.Errorf("%s: a viewer of staging meets %q at %v", when, s, where)
		}
		// The crawl reaches what a viewer of staging reads: its resource, on the API and the
		// dashboard.
		for _, p := range []string{"/api/v1/resources/staging/App/web", "/resources/staging/App/web"} {
			if code, body := get(viewerTok, p); code != 200 || !strings.Contains(body, "Db/production/ordersdb.outputs.host") {
				t.Errorf("%s: GET %s: %d", when, p, code)
			}
		}
		// And the same crawl as an admin meets every value: it looks where they are.
		all, _ := crawl(adminTok)
		for _, s := range productionSecrets {
			if len(all[s]) == 0 {
				t.Errorf("%s: the crawl as admin never meets %q", when, s)
			}
		}
		t.Logf("%s: %d GETs as a viewer of staging, no production value (an admin meets %d of %d)", when, n, len(all), len(productionSecrets))
	}
	check("granted")

	// The grant removed: the reload re-judges, web stalls with the missing grant's text.
	writeTestFile(t, cfgPath, base)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u+"/api/v1/admin/reload", nil)
	req.Header.Set("Authorization", "Bearer "+adminTok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var rl server.ReloadResult
	_ = json.NewDecoder(resp.Body).Decode(&rl)
	resp.Body.Close()
	if !rl.OK {
		t.Fatalf("reload %+v", rl)
	}
	const missing = "reference to Db/production/ordersdb outputs host crosses from namespace staging to production without a grant"
	eventually("staging/web Stalled on the removed grant", func() (bool, string) {
		r := webAs(adminTok)
		for _, c := range r.Status.Conditions {
			if c.Type == "Stalled" && c.Status == "True" && strings.Contains(c.Message, missing) {
				return r.Status.ResolvedSpec == nil, "resolved spec kept: " + string(r.Status.ResolvedSpec)
			}
		}
		return false, r.Status.Phase + ": " + r.Status.Message
	})
	// A new revision reading the password is refused at ingest, at its file:line.
	writeTestFile(t, filepath.Join(repo, "staging.yaml"), "# reads the password now\n"+strings.Replace(app, "note: staging-note", "note: \"${{ Db/production/ordersdb.outputs.password }}\"", 1))
	eventually("the revision refused naming the missing grant", func() (bool, string) {
		_, body := get(adminTok, "/api/v1/sources/infra")
		return strings.Contains(body, `"file":"staging.yaml","line":2,"path":"spec","message":"reference to Db/production/ordersdb outputs host, password crosses`), body
	})
	check("not granted")

	// Granted again, host and password: the reload tries the refused head again, and web runs.
	writeTestFile(t, cfgPath, base+strings.Replace(grant, "outputs: [host]", "outputs: [host, password]", 1))
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, u+"/api/v1/admin/reload", nil)
	req.Header.Set("Authorization", "Bearer "+adminTok)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	eventually("the refused head applied once granted, web Ready with both values", func() (bool, string) {
		r := webAs(adminTok)
		return r.Status.Phase == "Ready" && strings.Contains(string(r.Status.ResolvedSpec), "prodpass-9b1c"), r.Status.Phase + " " + r.Status.Message
	})
	if r := webAs(viewerTok); !strings.Contains(string(r.Status.ResolvedSpec), `"host":"***","note":"***"`) {
		t.Fatalf("viewer of staging: resolvedSpec %s", r.Status.ResolvedSpec)
	}
	check("granted again")
}

// crawlPaths lists every GET path of the OpenAPI document with its parameters filled with
// the names of the test (both namespaces, both kinds, every resource and the source), and
// the query filters that name production.
func crawlPaths(t *testing.T) []string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct{ Name, In string } `json:"parameters"`
		} `json:"paths"`
	}
	b, err := os.ReadFile("../../internal/server/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	fill := map[string][]string{
		"namespace": {"staging", "production"},
		"kind":      {"App", "Db"},
		"number":    {"1"},
		"file":      {"app.css"},
	}
	resources := []string{"staging/App/web", "production/Db/ordersdb", "production/Db/billingdb", "staging/Db/ordersdb"}
	queries := map[string][]string{
		"namespace": {"production", "staging"},
		"kind":      {"Db"},
		"name":      {"ordersdb", "billingdb"},
		"source":    {"infra"},
		"resource":  {"App/staging/web", "Db/production/ordersdb", "app/staging/web"},
		"q":         {"ordersdb", "billingdb"},
		"state":     {"sent"},
		"depth":     {"3"},
	}
	var out []string
	for p, ops := range doc.Paths {
		op, ok := ops["get"]
		if !ok || p == "/login" || p == "/auth/callback" {
			continue
		}
		var bases []string
		switch {
		case strings.Contains(p, "{namespace}/{kind}/{name}"):
			for _, r := range resources {
				bases = append(bases, strings.Replace(p, "{namespace}/{kind}/{name}", r, 1))
			}
		case strings.Contains(p, "resourcetypes/{name}"):
			bases = []string{strings.Replace(p, "{name}", "Db", 1), strings.Replace(p, "{name}", "App", 1)}
		default:
			bases = []string{strings.ReplaceAll(p, "{name}", "infra")}
		}
		for k, vs := range fill {
			var next []string
			for _, b := range bases {
				if !strings.Contains(b, "{"+k+"}") {
					next = append(next, b)
					continue
				}
				for _, v := range vs {
					next = append(next, strings.ReplaceAll(b, "{"+k+"}", v))
				}
			}
			bases = next
		}
		for _, b := range bases {
			out = append(out, b)
			for _, prm := range op.Parameters {
				if prm.In != "query" {
					continue
				}
				for _, v := range queries[prm.Name] {
					out = append(out, b+"?"+prm.Name+"="+url.QueryEscape(v))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}
