package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/auth"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/store/storetest"
	"github.com/trueup-dev/trueup/sources"
)

// Revisions of the fixture's sources.
const (
	revA   = "4f1c2a9e8b7d6c5e4f3a2b1c0d9e8f7a6b5c4d3e"
	revB   = "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b"
	revC   = "0c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5"
	revBad = "deadbeef00112233445566778899aabbccddeeff"

	xssScript = `<script>alert(1)</script>`
	xssImg    = `"><img src=x onerror=alert(1)>`
	xssURL    = `javascript:alert(1)`
)

// dashTypes are the fixture's ResourceTypes.
var dashTypes = manifesttest.TypeDoc("DatabaseCluster", "example.com",
	"{type: object, properties: {engine: {type: string}, storage_gb: {type: integer}}}", "provision") + "---\n" + typeDoc

// dashManifests renders the infra source at one of its revisions (0: A, 1: B, 2: C, 3: D).
// B changes staging/events and removes dev/scratch; C adds two resources and removes
// dev/old-cache; D changes prod/orders-db (the live update of the browser test).
func dashManifests(step int, bulk int) []sources.File {
	var b strings.Builder
	doc := func(ns, kind, name, labels, spec string) {
		api := "mq.example.com/v1"
		if kind == "DatabaseCluster" {
			api = "example.com/v1"
		}
		fmt.Fprintf(&b, "---\napiVersion: %s\nkind: %s\nmetadata: {name: %s, namespace: %s, labels: {%s}}\nspec: %s\n", api, kind, name, ns, labels, spec)
	}
	ordersGB := 100
	if step >= 3 {
		ordersGB = 200
	}
	doc("prod", "DatabaseCluster", "orders-db", "team: shop, tier: critical", fmt.Sprintf("{engine: postgres, storage_gb: %d}", ordersGB))
	doc("prod", "DatabaseCluster", "billing-db", "team: billing, tier: critical", "{engine: postgres, storage_gb: 500}")
	doc("prod", "Queue", "payments", "team: billing", "{size: 0}")
	doc("staging", "DatabaseCluster", "orders-db", "team: shop", "{engine: postgres, storage_gb: 20}")
	events := 3
	if step >= 1 {
		events = 6
	}
	doc("staging", "Queue", "events", "team: data", fmt.Sprintf("{size: %d}", events))
	if step < 1 {
		doc("dev", "Queue", "scratch", "team: data", "{size: 1}")
	}
	if step < 2 {
		doc("dev", "Queue", "old-cache", "team: data", "{size: 1}")
	}
	if step >= 2 {
		doc("prod", "Queue", "audit-log", "team: security", "{size: 10}")
		doc("dev", "Queue", "new-thing", "team: data", "{size: 2}")
	}
	// The hostile one: labels, annotations, spec and (below) status carry markup and a
	// javascript: URL, which must all render inert.
	fmt.Fprintf(&b, "---\napiVersion: mq.example.com/v1\nkind: Queue\nmetadata:\n  name: evil\n  namespace: xss\n"+
		"  labels: {note: %q, img: %q}\n  annotations: {link: %q, html: %q}\nspec: {size: 1, title: %q, link: %q}\n",
		xssScript, xssImg, xssURL, xssImg, xssImg, xssURL)
	files := []sources.File{{Path: "types.yaml", Data: []byte(dashTypes)}, {Path: "manifests/all.yaml", Data: []byte(b.String())}}
	// Bulk resources, 1,000 to a file (a file may hold at most 1 MiB).
	for i := 0; i < bulk; i += 1000 {
		b.Reset()
		for j := i; j < min(i+1000, bulk); j++ {
			ns := "bulk"
			if bulk > 1000 {
				ns = fmt.Sprintf("team-%02d", j%20) // a large set spreads over namespaces
			}
			doc(ns, "Queue", fmt.Sprintf("item-%03d", j), fmt.Sprintf("team: bulk, idx: %q", fmt.Sprint(j)), fmt.Sprintf("{size: %d}", j))
		}
		files = append(files, sources.File{Path: fmt.Sprintf("manifests/bulk/%03d.yaml", i/1000), Data: []byte(b.String())})
	}
	return files
}

// dashboardFixture is a database in every state a dashboard shows, and a server on it.
type dashboardFixture struct {
	// failEvery makes every n-th bulk resource fail (0: none does).
	failEvery int

	srv *httptest.Server
	api *Server
	st  *store.Store
	url string
}

func (f *dashboardFixture) apply(t testing.TB, step, bulk int, rev string) {
	t.Helper()
	set, err := manifest.NewLoader().Load(dashManifests(step, bulk), manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.ApplyRevision(context.Background(), store.ApplyParams{Source: "infra", Revision: rev, Set: set, Prune: true}); err != nil {
		t.Fatal(err)
	}
}

// attemptOutcome is what one fake reconcile attempt of a resource comes to.
type attemptOutcome struct {
	fail     string // failure message ("" succeeds)
	terminal bool
	outputs  map[string]any
	again    bool // due again at once (to record several attempts)
}

// outcomeFor scripts the fixture's resources; every attempt of a failing one fails.
func (f *dashboardFixture) outcomeFor(c store.Claimed, round int) attemptOutcome {
	var idx int
	if _, err := fmt.Sscanf(c.Name, "item-%d", &idx); err == nil && f.failEvery > 0 && idx%f.failEvery == 0 {
		return attemptOutcome{fail: fmt.Sprintf("exit status %d: timeout waiting for the broker", idx%7+1)}
	}
	id := c.Namespace + "/" + c.Name
	switch id {
	case "prod/billing-db":
		return attemptOutcome{fail: "provision.sh exited 1: ERROR: quota exceeded for instance class db.r6g.2xlarge in eu-west-1 (limit 4, in use 4)", again: round < 3}
	case "prod/payments":
		return attemptOutcome{fail: "spec.size: 0 is below the provider's minimum of 1", terminal: true}
	case "xss/evil":
		return attemptOutcome{fail: "queue " + xssScript + " rejected: " + xssImg, again: round < 2,
			outputs: map[string]any{"url": xssURL, "runURL": xssURL, "webURL": " JaVaScRiPt:alert(1)", "note": xssImg}}
	case "prod/orders-db":
		return attemptOutcome{outputs: map[string]any{"endpoint": "orders-db.prod.internal:5432",
			"runURL": "https://github.com/acme/infra/actions/runs/9876543210", "instances": 3}}
	}
	return attemptOutcome{outputs: map[string]any{"arn": "arn:aws:sqs:eu-west-1:123456789012:" + c.Name}}
}

// reconcileAll claims what is due and completes it as outcomeFor says, round after round,
// the way the reconciler would write it.
func (f *dashboardFixture) reconcileAll(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	for round := 1; round <= 5; round++ {
		claimed, err := f.st.Claim(ctx, "replica-a", 100000, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(claimed) == 0 {
			return
		}
		items := make([]store.Completion, 0, len(claimed))
		for _, c := range claimed {
			items = append(items, completion(c, f.outcomeFor(c, round), round))
		}
		for i := 0; i < len(items); i += 5000 {
			lost, err := f.st.CompleteBatch(ctx, items[i:min(i+5000, len(items))])
			if err != nil || len(lost) > 0 {
				t.Fatalf("complete: %v, lost %v", err, lost)
			}
		}
	}
}

func completion(c store.Claimed, a attemptOutcome, round int) store.Completion {
	return store.Completion{ID: c.ID, Token: c.LeaseToken, Namespace: c.Namespace, Kind: c.Kind, Name: c.Name, Source: c.Source,
		Fn: func(cur store.Current) store.Update {
			now := time.Now()
			o := status.Outcome{Generation: c.Generation, CurrentGeneration: cur.Generation, Err: a.fail, Terminal: a.terminal}
			u := store.Update{Message: a.fail, Outputs: a.outputs, Attempt: round}
			u.Phase, u.Conditions, u.ObservedGeneration = status.Apply(cur.Conditions, cur.ObservedGeneration, o, now)
			h := &store.HistoryEntry{UID: c.UID, Namespace: c.Namespace, Kind: c.Kind, Name: c.Name, Generation: c.Generation,
				Revision: c.Revision, Operation: "reconcile", Trigger: "created", Result: "Succeeded", Message: a.fail,
				Replica: "replica-a", StartedAt: now.Add(-time.Duration(1200+round*700) * time.Millisecond), FinishedAt: now}
			if round > 1 {
				h.Trigger = "retry"
			}
			if a.outputs != nil {
				h.Outputs, _ = json.Marshal(a.outputs)
			}
			ev := store.Event{Namespace: c.Namespace, Kind: c.Kind, Name: c.Name, Source: c.Source, Replica: "replica-a"}
			switch {
			case a.fail != "" && a.terminal:
				h.Result, ev.Type, ev.Reason, ev.Message = "Stalled", store.EventWarning, "Stalled", a.fail
			case a.fail != "":
				h.Result, ev.Type, ev.Reason, ev.Message = "Failed", store.EventWarning, "ReconcileFailed", fmt.Sprintf("attempt %d failed: %s", round, a.fail)
				if a.again {
					u.RunAt = &now
				} else {
					later := now.Add(time.Hour)
					u.RunAt = &later
				}
			default:
				u.Attempt = 0
				ev.Type, ev.Reason, ev.Message = store.EventNormal, "Reconciled", fmt.Sprintf("generation %d is Ready", c.Generation)
			}
			if c.Deleting {
				u = store.Update{Remove: true, History: h}
				h.Operation, h.Trigger, h.Result, h.Message = "delete", "deleted", "Succeeded", "deleted by action noop"
				ev.Type, ev.Reason, ev.Message = store.EventNormal, "Deleted", "deleted by action noop"
			}
			u.History, u.Events = h, []store.Event{ev}
			return u
		}}
}

// newDashboardFixture seeds every phase, a deleted resource with history, a source whose last
// revision was rejected, a replica, the XSS fixture and bulk resources for paging.
func newDashboardFixture(t testing.TB, bulk int) *dashboardFixture {
	return newDashboardFixtureFailing(t, bulk, 0)
}

func newDashboardFixtureFailing(t testing.TB, bulk, failEvery int) *dashboardFixture {
	t.Helper()
	ctx := context.Background()
	st := storetest.Open(t, store.Options{},
		store.SourceConfig{Name: "infra", URL: "https://x-access-token:s3cret@github.com/acme/infra.git", Branch: "main", Path: "manifests"},
		store.SourceConfig{Name: "apps", URL: "https://gitlab.example.com/platform/apps.git", Branch: "main"})
	f := &dashboardFixture{st: st, failEvery: failEvery}
	if err := st.Heartbeat(ctx, store.Replica{Name: "replica-a", Hostname: "node-1", PID: 4242, Version: "v0.9.0", Listen: ":8080"}); err != nil {
		t.Fatal(err)
	}
	f.apply(t, 0, bulk, revA)
	f.reconcileAll(t)
	f.apply(t, 1, bulk, revB)
	// B: dev/scratch is deleted (its history stays) and staging/events stays Reconciling.
	claimed, err := st.Claim(ctx, "replica-a", 100, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range claimed {
		if c.Deleting {
			if _, err := st.CompleteBatch(ctx, []store.Completion{completion(c, attemptOutcome{}, 1)}); err != nil {
				t.Fatal(err)
			}
		} else if err := st.Release(ctx, "replica-a", []int64{c.ID}, []string{c.LeaseToken}); err != nil {
			t.Fatal(err)
		}
	}
	f.apply(t, 2, bulk, revC)

	// The apps source applied once, then rejected a revision with errors.
	appsSet, err := manifest.NewLoader().Load([]sources.File{{Path: "jobs.yaml", Data: []byte(
		"apiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: web-jobs, namespace: apps}\nspec: {size: 4}\n")}},
		manifest.Options{KnownTypes: set0Types(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyRevision(ctx, store.ApplyParams{Source: "apps", Revision: revA, Set: appsSet, Prune: true}); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordSyncFailure(ctx, store.SyncFailure{Source: "apps", Revision: revBad, Reason: "ValidationFailed",
		Message: "2 manifests are invalid", Errors: []store.SourceError{
			{File: "jobs.yaml", Line: 4, Path: "spec.size", Message: "expected integer, but got string"},
			{File: "workers/batch.yaml", Line: 12, Path: "metadata.name", Message: "invalid name \"" + xssScript + "\"", Origin: "tenant=a, region=eu"},
		}}); err != nil {
		t.Fatal(err)
	}

	f.api = New(st, Options{Replica: "replica-a"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	f.srv = httptest.NewServer(f.api.Handler())
	t.Cleanup(f.srv.Close)
	f.url = f.srv.URL
	return f
}

// set0Types returns the fixture's types, for a source that declares none itself.
func set0Types(t testing.TB) []manifest.ResourceType {
	t.Helper()
	set, err := manifest.NewLoader().Load([]sources.File{{Path: "types.yaml", Data: []byte(dashTypes)}}, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return set.Types
}

func getPage(t *testing.T, u string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// TestSourceErrorOrigin: a source's errors keep the input they come from, in the API's answer
// as in the dashboard's list of errors (file:line (origin)).
func TestSourceErrorOrigin(t *testing.T) {
	t.Parallel()
	f := newDashboardFixture(t, 0)
	var got struct {
		Errors []map[string]any `json:"errors"`
	}
	if code := get(t, f.url+"/api/v1/sources/apps", &got); code != 200 || len(got.Errors) != 2 {
		t.Fatalf("GET source: %d, %+v", code, got)
	}
	if _, ok := got.Errors[0]["origin"]; ok {
		t.Errorf("an error without origin has one: %+v", got.Errors[0])
	}
	if o := got.Errors[1]["origin"]; got.Errors[1]["file"] != "workers/batch.yaml" || o != "tenant=a, region=eu" {
		t.Errorf("second error %+v, want origin tenant=a, region=eu", got.Errors[1])
	}
	for page, want := range map[string]string{
		"/sources/apps": `/workers/batch.yaml#L12" rel="noreferrer"><code>workers/batch.yaml:12</code></a> (tenant=a, region=eu)</td>`,
		"/sources":      `/workers/batch.yaml#L12" rel="noreferrer">workers/batch.yaml:12</a> (tenant=a, region=eu)</span>`,
	} {
		if code, _, body := getPage(t, f.url+page); code != 200 || !strings.Contains(body, want) {
			t.Errorf("%s (%d) lacks %s", page, code, want)
		}
	}
}

func TestDashboardPages(t *testing.T) {
	t.Parallel()
	f := newDashboardFixture(t, 120)
	cases := []struct {
		path string
		code int
		want []string
		not  []string
	}{
		{"/", 200, []string{
			"Needs attention", "resources are failing", "source apps rejected revision deadbeef00: 2 manifests are invalid",
			`href="/resources?phase=Failed"`, `data-count="Failed"`,
			// Sources: short SHA linked to the forge, credentials dropped, lag and errors.
			`href="https://github.com/acme/infra/commit/` + revC + `"`, ">0c1d2e3f40<",
			"https://github.com/acme/infra.git", `href="https://gitlab.example.com/platform/apps/-/commit/` + revBad + `"`,
			"rejected", "jobs.yaml:4", `href="https://gitlab.example.com/platform/apps/-/blob/` + revBad + `/jobs.yaml#L4"`,
			"<time datetime=", " UTC</span>",
			// Failures, newest first, with message and since-when.
			`href="/resources/prod/DatabaseCluster/billing-db"`, "quota exceeded", "attempt 3", "Failing since",
			"replica-a", "node-1",
		}, []string{"s3cret", "x-access-token"}},
		{"/resources", 200, []string{"web-jobs", "item-000", "item-098", `rel="next"`, "100 on this page"}, []string{"item-099"}},
		{"/resources?namespace=bulk", 200, []string{"item-000", "item-099", `rel="next"`}, []string{"item-100"}},
		{"/resources?phase=Failed", 200, []string{"billing-db", "payments", "evil", "Failed resources"}, []string{"orders-db", "item-0"}},
		{"/resources?q=ORDERS", 200, []string{"prod", "staging", `data-phase-for="prod/databasecluster/orders-db"`}, []string{"billing-db"}},
		{"/resources?label=tier%3Dcritical&namespace=prod", 200, []string{"orders-db", "billing-db"}, []string{"payments"}},
		{"/resources?kind=queue&namespace=dev", 200, []string{"new-thing", "old-cache", "Deleting", "Pending"}, []string{"orders-db"}},
		{"/resources?source=apps", 200, []string{"web-jobs"}, []string{"orders-db"}},
		{"/resources?phase=Reconciling", 200, []string{"events", "1/2"}, nil},
		{"/resources?q=zzz-nothing", 200, []string{"No resource matches these filters"}, nil},
		{"/resources?label=%3D%3D", 400, []string{"Cannot filter", "label selector"}, nil},
		{"/resources?continue=garbage", 400, []string{"invalid continue token"}, nil},
		{"/resources/prod/DatabaseCluster/orders-db", 200, []string{
			"orders-db.prod.internal:5432", `class="run" href="https://github.com/acme/infra/actions/runs/9876543210"`,
			"&#34;engine&#34;: &#34;postgres&#34;", "storage_gb", "manifests/all.yaml:",
			`href="https://github.com/acme/infra/blob/` + revA + `/manifests/all.yaml#L`, "Conditions", "Synced",
			"Reconciled", `href="/resources?label=team%3Dshop"`, "History", "Succeeded", "created",
			`data-watch="resource:prod/databasecluster/orders-db"`, `data-watch-url="/api/v1/watch?kind=DatabaseCluster&amp;namespace=prod"`,
		}, []string{"Next retry"}},
		{"/resources/prod/databasecluster/billing-db", 200, []string{"Failure", "quota exceeded", "ActionFailed", "retry", "Failed", "ReconcileFailed", "<dt>Next retry</dt>"}, nil},
		{"/resources/prod/Queue/payments", 200, []string{"Stalled", "below the provider"}, nil},
		{"/resources/dev/Queue/scratch", 200, []string{"Deleted.", "delete", "deleted by action noop"}, []string{"Spec"}},
		{"/resources/dev/Queue/old-cache", 200, []string{"Being deleted"}, nil},
		{"/sources", 200, []string{"infra", "apps", "ValidationFailed", "workers/batch.yaml:12"}, []string{"s3cret"}},
		{"/sources/apps", 200, []string{"Validation errors", "was rejected whole", "expected integer", "workers/batch.yaml:12</code></a> (tenant=a, region=eu)</td>", "spec.size", "web-jobs", "Ready"}, nil},
		{"/sources/infra", 200, []string{"The last attempted revision had no errors", "Succeeded", "manifests"}, []string{"s3cret"}},
		{"/static/dashboard.css", 200, []string{"prefers-color-scheme: dark"}, nil},
		{"/static/dashboard.js", 200, []string{"EventSource"}, nil},
	}
	for _, tc := range cases {
		code, h, body := getPage(t, f.url+tc.path)
		if code != tc.code {
			t.Errorf("%s: %d, want %d", tc.path, code, tc.code)
		}
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: no %q", tc.path, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(body, w) {
				t.Errorf("%s: unexpected %q", tc.path, w)
			}
		}
		if strings.HasPrefix(tc.path, "/static/") {
			continue
		}
		if ct := h.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("%s: content type %q", tc.path, ct)
		}
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP %q", tc.path, csp)
		}
		if strings.Contains(body, "style=") || strings.Contains(body, "<script>") || regexp.MustCompile(`<script(?: [^>]*)?>[^<]`).MatchString(body) {
			t.Errorf("%s: inline style or script", tc.path)
		}
	}

	// The failures are the newest first: billing-db failed last (round 3).
	_, _, body := getPage(t, f.url+"/")
	if i, j := strings.Index(body, "billing-db"), strings.Index(body, "prod/<strong>payments"); i < 0 || j < 0 || i > j {
		t.Errorf("failures out of order: billing-db at %d, payments at %d", i, j)
	}

	// Paging: the Next link leads to the rest, then stops.
	_, _, body = getPage(t, f.url+"/resources?namespace=bulk")
	next := regexp.MustCompile(`href="([^"]+)" rel="next"`).FindStringSubmatch(body)
	if next == nil {
		t.Fatal("no next link")
	}
	_, _, body = getPage(t, f.url+strings.ReplaceAll(next[1], "&amp;", "&"))
	if !strings.Contains(body, "item-100") || !strings.Contains(body, "item-119") || strings.Contains(body, "item-099") ||
		strings.Contains(body, `rel="next"`) || !strings.Contains(body, "First page") {
		t.Errorf("second page:\n%s", body)
	}
}

func TestDashboardEmpty(t *testing.T) {
	t.Parallel()
	srv, _ := setup(t, 0)
	for path, want := range map[string]string{
		"/":          "Sources are in sync; they declare no resources",
		"/resources": "No resource matches.",
		"/sources":   "main",
	} {
		if code, _, body := getPage(t, srv.URL+path); code != 200 || !strings.Contains(body, want) {
			t.Errorf("%s: %d, want %q in\n%s", path, code, want, body)
		}
	}
}

func TestDashboardNotFound(t *testing.T) {
	t.Parallel()
	f := newDashboardFixture(t, 0)
	for _, p := range []string{"/resources/prod/Queue/nope", "/resources/nowhere/DatabaseCluster/orders-db", "/sources/nope"} {
		code, h, body := getPage(t, f.url+p)
		if code != 404 || !strings.Contains(body, "<h1>") || !strings.Contains(body, "not") || h.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Errorf("%s: %d %s\n%s", p, code, h.Get("Content-Type"), body)
		}
	}
	if code, _, _ := getPage(t, f.url+"/static/nope.css"); code != 404 {
		t.Errorf("missing static file: %d", code)
	}
}

func TestDashboardDatabaseDown(t *testing.T) {
	t.Parallel()
	f := newDashboardFixture(t, 0)
	f.st.Close()
	for _, p := range []string{"/", "/resources", "/resources/prod/Queue/payments", "/sources", "/sources/infra"} {
		code, _, body := getPage(t, f.url+p)
		if code != 503 || !strings.Contains(body, "Database unavailable") {
			t.Errorf("%s: %d\n%s", p, code, body)
		}
	}
}

// TestDashboardXSS checks that markup and javascript: URLs from manifests, status and outputs
// appear only escaped, and never as a link.
func TestDashboardXSS(t *testing.T) {
	t.Parallel()
	f := newDashboardFixture(t, 0)
	pages := []string{"/", "/resources", "/resources?namespace=xss", "/resources/xss/Queue/evil", "/sources", "/sources/apps",
		"/resources?q=" + "%3Cscript%3E", "/resources?label=" + "%22%3E%3Cimg", "/resources?kind=%3Cscript%3Ealert(1)%3C/script%3E"}
	hrefRe := regexp.MustCompile(`(?i)(?:href|src|action)\s*=\s*"([^"]*)"`)
	for _, p := range pages {
		_, _, body := getPage(t, f.url+p)
		for _, bad := range []string{xssScript, xssImg, "<img", "ZgotmplZ"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s: contains %q unescaped", p, bad)
			}
		}
		for _, m := range hrefRe.FindAllStringSubmatch(body, -1) {
			if u := strings.ToLower(strings.TrimSpace(m[1])); strings.HasPrefix(u, "javascript") || strings.Contains(u, "alert(") && !strings.HasPrefix(u, "/") {
				t.Errorf("%s: dangerous link %q", p, m[1])
			}
		}
	}
	_, _, body := getPage(t, f.url+"/resources/xss/Queue/evil")
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;", xssURL} {
		if !strings.Contains(body, want) {
			t.Errorf("detail page does not show %q escaped", want)
		}
	}
	if strings.Contains(body, `class="run"`) {
		t.Error("a javascript: run URL became a link")
	}
}

// BenchmarkDashboard100k measures the server time of the dashboard's pages with 100,000
// resources, 1% of them failing (run with `go test -run - -bench Dashboard100k ./internal/server/`;
// the seeding takes a while and is not measured). The target is 50 ms a page.
func BenchmarkDashboard100k(b *testing.B) {
	start := time.Now()
	f := newDashboardFixtureFailing(b, 100000, 100)
	b.Logf("seeded 100,000 resources in %v", time.Since(start).Round(time.Millisecond))
	// Measure the steady state that autovacuum keeps, not the bloat of a seeding that rewrote
	// every row three times a second ago.
	if _, err := f.st.Pool().Exec(context.Background(), "VACUUM ANALYZE"); err != nil {
		b.Fatal(err)
	}
	if os.Getenv("TRUEUP_EXPLAIN") != "" {
		for _, q := range []string{
			"SELECT source, count(*) AS n FROM resources GROUP BY source",
			"SELECT source, phase, count(*) AS n FROM resources WHERE phase = ANY('{Failed,Pending,Reconciling,Deleting}') GROUP BY source, phase",
			"SELECT namespace AS k_ns, lower(kind) AS k_kind, name AS k_name FROM resources WHERE name ILIKE '%no-such%' ORDER BY namespace, lower(kind), name LIMIT 101",
			// A viewer of two namespaces: its page of resources, its events, its sources.
			"SELECT namespace, kind, name FROM resources WHERE namespace = ANY('{team-07,team-03}'::text[]) ORDER BY namespace, lower(kind), name LIMIT 101",
			"SELECT id FROM events WHERE (namespace = ANY('{team-07,team-03}'::text[]) OR (namespace = '' AND source = ANY(ARRAY(SELECT s.name FROM sources s " +
				"WHERE EXISTS (SELECT 1 FROM resources vis WHERE vis.source = s.name AND vis.namespace = ANY('{team-07,team-03}'::text[])))))) ORDER BY id DESC LIMIT 12",
			"SELECT name FROM sources WHERE EXISTS (SELECT 1 FROM resources vis WHERE vis.source = sources.name AND vis.namespace = ANY('{team-07,team-03}'::text[]))",
		} {
			rows, err := f.st.Pool().Query(context.Background(), "EXPLAIN (ANALYZE, BUFFERS) "+q)
			if err != nil {
				b.Fatal(err)
			}
			for rows.Next() {
				var line string
				_ = rows.Scan(&line)
				b.Log(line)
			}
			rows.Close()
		}
	}
	h := f.api.Handler()
	for _, p := range []string{
		"/",
		"/resources",
		"/resources?phase=Failed",
		"/resources?namespace=team-07&label=team%3Dbulk",
		"/resources?q=item-4242",
		"/resources?q=no-such-name",
		"/resources?q=item-&phase=Failed&namespace=team-03",
		"/resources?continue=" + deepToken("team-17", "queue", "item-50017"),
		"/resources/team-07/Queue/item-50007",
		"/resources/team-00/Queue/item-50000",
		"/sources",
		"/sources/infra",
	} {
		b.Run(strings.TrimPrefix(p, "/"), func(b *testing.B) {
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", p, rec.Code, rec.Body.String())
				}
			}
		})
	}
	// The same pages for a viewer of two namespaces (the scoped queries).
	viewer := New(f.st, Options{Replica: "bench", Authenticate: func(*http.Request) (auth.Identity, error) {
		return auth.Identity{Kind: "token", Name: "bench", Role: auth.Viewer, Namespaces: []string{"team-07", "team-03"}}, nil
	}}, slog.New(slog.DiscardHandler)).Handler()
	for _, p := range []string{
		"/",
		"/resources",
		"/resources?phase=Failed",
		"/resources?q=item-4242",
		"/resources?continue=" + deepToken("team-07", "queue", "item-50007"),
		"/resources/team-07/Queue/item-50007",
		"/sources",
		"/sources/infra",
	} {
		b.Run("viewer"+p, func(b *testing.B) {
			for b.Loop() {
				rec := httptest.NewRecorder()
				viewer.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", p, rec.Code, rec.Body.String())
				}
			}
		})
	}
}

func deepToken(ns, kind, name string) string {
	b, _ := json.Marshal([3]string{ns, kind, name})
	return base64.RawURLEncoding.EncodeToString(b)
}
