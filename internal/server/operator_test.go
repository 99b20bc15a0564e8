package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/auth"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/redact"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
	"github.com/trueup-dev/trueup/sources"
)

// identities are who the operator tests call as, by the X-Test-Identity header.
var identities = map[string]auth.Identity{
	"admin":          {Kind: "token", Name: "root", Role: auth.Admin, Namespaces: []string{auth.AllNamespaces}},
	"operator-alpha": {Kind: "token", Name: "ci-bot", Role: auth.Operator, Namespaces: []string{"alpha"}},
	"operator-all":   {Kind: "user", Name: "ann", Role: auth.Operator, Namespaces: []string{auth.AllNamespaces}},
	"viewer-alpha":   {Kind: "user", Name: "vic", Role: auth.Viewer, Namespaces: []string{"alpha"}},
	"viewer-all":     {Kind: "user", Name: "val", Role: auth.Viewer, Namespaces: []string{auth.AllNamespaces}},
}

// setupAuth is setup with an authenticating server in front of the same database.
func setupAuth(t *testing.T, n int) (*httptest.Server, *store.Store) {
	t.Helper()
	_, st := setup(t, n)
	return serveAs(t, st, identities), st
}

// serveAs serves st with auth: a request is the identity of ids its X-Test-Identity names.
func serveAs(t *testing.T, st *store.Store, ids map[string]auth.Identity) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(New(st, Options{Replica: "test", Authenticate: func(r *http.Request) (auth.Identity, error) {
		id, ok := ids[r.Header.Get("X-Test-Identity")]
		if !ok {
			return auth.Identity{}, errors.New("unknown test identity")
		}
		return id, nil
	}, Redact: redact.New(knownSecret)}, slog.New(slog.NewTextHandler(io.Discard, nil))).Handler())
	t.Cleanup(srv.Close)
	return srv
}

// knownSecret is a secret of the config of setupAuth's server (its Redact masks it).
const knownSecret = "s3cr3t-t0ken"

func post(t *testing.T, u, as, body string, v any) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("X-Test-Identity", as)
	req.Header.Set("Content-Type", "application/json")
	code, b := send(t, req)
	if v != nil && code < 300 {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v: %s", u, err, b)
		}
	}
	return code
}

func TestOperatorCommandsAuthorization(t *testing.T) {
	t.Parallel()
	srv, _ := setupAuth(t, 4) // q000, q002 in alpha; q001, q003 in beta
	res := func(ns, name, cmd string) string {
		return srv.URL + "/api/v1/resources/" + ns + "/queue/" + name + "/" + cmd
	}
	cases := []struct {
		name, url, as string
		want          int
	}{
		{"operator reconciles in its namespace", res("alpha", "q000", "reconcile"), "operator-alpha", http.StatusAccepted},
		{"viewer may not reconcile", res("alpha", "q000", "reconcile"), "viewer-alpha", http.StatusForbidden},
		{"an unseen namespace is not found", res("beta", "q001", "reconcile"), "operator-alpha", http.StatusNotFound},
		{"an unseen namespace is not found for viewers", res("beta", "q001", "reconcile"), "viewer-alpha", http.StatusNotFound},
		{"a missing resource is not found", res("alpha", "nope", "reconcile"), "operator-alpha", http.StatusNotFound},
		{"operator suspends", res("alpha", "q002", "suspend"), "operator-alpha", http.StatusOK},
		{"viewer may not suspend", res("alpha", "q002", "suspend"), "viewer-all", http.StatusForbidden},
		{"unseen suspend", res("beta", "q003", "suspend"), "viewer-alpha", http.StatusNotFound},
		{"operator resumes", res("alpha", "q002", "resume"), "operator-alpha", http.StatusOK},
		{"viewer may not resume", res("alpha", "q002", "resume"), "viewer-alpha", http.StatusForbidden},
		{"source sync needs every namespace", srv.URL + "/api/v1/sources/main/sync", "operator-alpha", http.StatusForbidden},
		{"source sync by an operator over all", srv.URL + "/api/v1/sources/main/sync", "operator-all", http.StatusAccepted},
		{"source sync by a viewer", srv.URL + "/api/v1/sources/main/sync", "viewer-all", http.StatusForbidden},
		{"unknown source", srv.URL + "/api/v1/sources/nope/sync", "admin", http.StatusNotFound},
		{"source suspend by a namespace operator", srv.URL + "/api/v1/sources/main/suspend", "operator-alpha", http.StatusForbidden},
		{"source suspend by admin", srv.URL + "/api/v1/sources/main/suspend", "admin", http.StatusOK},
		{"source resume by admin", srv.URL + "/api/v1/sources/main/resume", "admin", http.StatusOK},
		{"selector without namespace rights", srv.URL + "/api/v1/resources/suspend?selector=team%3Dred", "viewer-all", http.StatusForbidden},
		{"selector in an unseen namespace", srv.URL + "/api/v1/resources/suspend?selector=team%3Dred&namespace=beta", "operator-alpha", http.StatusNotFound},
		{"selector without a selector", srv.URL + "/api/v1/resources/suspend", "admin", http.StatusBadRequest},
		{"selector that does not parse", srv.URL + "/api/v1/resources/suspend?selector=%3D%3D", "admin", http.StatusBadRequest},
	}
	for _, tc := range cases { // in order: suspend before resume
		if got := post(t, tc.url, tc.as, "", nil); got != tc.want {
			t.Errorf("%s: POST %s as %s = %d, want %d", tc.name, strings.TrimPrefix(tc.url, srv.URL), tc.as, got, tc.want)
		}
	}
}

func TestReconcileCommand(t *testing.T) {
	t.Parallel()
	srv, st := setupAuth(t, 2)
	ctx := context.Background()
	var out wire.Command
	if code := post(t, srv.URL+"/api/v1/resources/alpha/QUEUE/q000/reconcile", "operator-alpha", "", &out); code != http.StatusAccepted {
		t.Fatalf("reconcile = %d", code)
	}
	if out.Action != "reconcile" || out.Actor != "token:ci-bot" || len(out.Resources) != 1 || out.Resources[0].Kind != "Queue" {
		t.Errorf("answer = %+v", out)
	}
	evs, err := st.ListEvents(ctx, store.Everything, store.EventFilter{Namespace: "alpha", Kind: "Queue", Name: "q000"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 || evs[0].Reason != store.ReasonManualReconcile || !strings.Contains(evs[0].Message, "token:ci-bot") {
		t.Errorf("newest event = %+v, want ManualReconcile by token:ci-bot", evs[0])
	}
	// The claim hands the actor to the worker.
	cl, err := st.Claim(ctx, "r1", 10, 30e9)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range cl {
		if c.Name == "q000" {
			found = c.ManualBy == "token:ci-bot"
		} else if c.ManualBy != "" {
			t.Errorf("%s claimed with ManualBy %q", c.Name, c.ManualBy)
		}
	}
	if !found {
		t.Errorf("q000 not claimed as a manual reconcile by token:ci-bot: %+v", cl)
	}

	// A suspended resource is not run on request: 409.
	if code := post(t, srv.URL+"/api/v1/resources/beta/queue/q001/suspend", "admin", `{"reason":"hands off"}`, &out); code != http.StatusOK {
		t.Fatalf("suspend = %d", code)
	}
	if code := post(t, srv.URL+"/api/v1/resources/beta/queue/q001/reconcile", "admin", "", nil); code != http.StatusConflict {
		t.Errorf("reconcile of a suspended resource = %d, want 409", code)
	}
	if code := post(t, srv.URL+"/api/v1/resources/beta/queue/q001/suspend", "admin", `{"why":"x"}`, nil); code != http.StatusBadRequest {
		t.Errorf("suspend with an unknown field = %d, want 400", code)
	}
}

func TestSuspendCommand(t *testing.T) {
	t.Parallel()
	srv, st := setupAuth(t, 6) // alpha: q000 q002 q004 (red); beta: q001 q003 q005 (blue)
	ctx := context.Background()
	var out wire.Command
	if code := post(t, srv.URL+"/api/v1/resources/alpha/queue/q000/suspend", "operator-alpha", `{"reason":"fixing by hand"}`, &out); code != http.StatusOK {
		t.Fatalf("suspend = %d", code)
	}
	r, err := st.GetResource(ctx, "alpha", "Queue", "q000")
	if err != nil {
		t.Fatal(err)
	}
	c, ok := status.Get(r.Status.Conditions, status.Suspended)
	if !ok || c.Status != status.True || c.Message != "suspended by token:ci-bot: fixing by hand" {
		t.Errorf("Suspended condition = %+v", c)
	}
	// Nothing suspended is claimed, though all six are due.
	cl, err := st.Claim(ctx, "r1", 10, 30e9)
	if err != nil {
		t.Fatal(err)
	}
	if len(cl) != 5 {
		t.Errorf("claimed %d, want 5 (q000 suspended)", len(cl))
	}
	for _, c := range cl {
		if c.Name == "q000" {
			t.Error("claimed a suspended resource")
		}
	}

	// A selector, scoped by the caller's namespaces: an alpha operator suspends only alpha's.
	if code := post(t, srv.URL+"/api/v1/resources/suspend?selector=idx+in+(1,2,3)", "operator-alpha", "", &out); code != http.StatusOK {
		t.Fatalf("selector suspend = %d", code)
	}
	if len(out.Resources) != 1 || out.Resources[0].Name != "q002" {
		t.Errorf("selector suspended %+v, want only alpha/q002", out.Resources)
	}
	if code := post(t, srv.URL+"/api/v1/resources/resume?selector=team%3Dred&namespace=alpha", "operator-all", "", &out); code != http.StatusOK {
		t.Fatalf("selector resume = %d", code)
	}
	if len(out.Resources) != 2 || out.Actor != "user:ann" {
		t.Errorf("selector resumed %+v, want q000 and q002 by user:ann", out)
	}
	evs, err := st.ListEvents(ctx, store.Everything, store.EventFilter{Namespace: "alpha", Kind: "Queue", Name: "q002"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) < 2 || evs[0].Reason != store.ReasonResumed || evs[1].Reason != store.ReasonSuspended {
		t.Errorf("q002 events = %+v, want Suspended then Resumed", evs)
	}
	r, _ = st.GetResource(ctx, "alpha", "Queue", "q000")
	if status.IsSuspended(r.Status.Conditions) {
		t.Error("q000 still suspended after the selector's resume")
	}
}

func TestSourceSuspendCommand(t *testing.T) {
	t.Parallel()
	srv, st := setupAuth(t, 2)
	ctx := context.Background()
	if code := post(t, srv.URL+"/api/v1/sources/main/suspend", "admin", `{"reason":"freeze"}`, nil); code != http.StatusOK {
		t.Fatalf("suspend = %d", code)
	}
	src, err := st.GetSource(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := status.Get(src.Conditions, status.Suspended)
	if !src.Suspended || c.Status != status.True || !strings.Contains(c.Message, "token:root: freeze") {
		t.Errorf("source = suspended %v, condition %+v", src.Suspended, c)
	}
	evs, _ := st.ListEvents(ctx, store.Everything, store.EventFilter{Source: "main"})
	if len(evs) == 0 || evs[0].Reason != store.ReasonSuspended {
		t.Errorf("newest source event = %+v", evs)
	}
	if code := post(t, srv.URL+"/api/v1/sources/main/resume", "admin", "", nil); code != http.StatusOK {
		t.Fatalf("resume = %d", code)
	}
	src, _ = st.GetSource(ctx, "main")
	if src.Suspended || status.IsSuspended(src.Conditions) {
		t.Errorf("source still suspended: %+v", src)
	}
}

func TestAccessDecisions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		as      string
		ns      string   // namespaceAccess
		nss     []string // sourceAccess
		wantNS  access
		wantSrc access
	}{
		{"admin", "admin", "beta", []string{"alpha", "beta"}, accessAllowed, accessAllowed},
		{"operator in its namespace", "operator-alpha", "alpha", []string{"alpha"}, accessAllowed, accessAllowed},
		{"operator, source spanning another namespace", "operator-alpha", "beta", []string{"alpha", "beta"}, accessHidden, accessForbidden},
		{"operator, source only elsewhere", "operator-alpha", "beta", []string{"beta"}, accessHidden, accessHidden},
		{"operator, source without resources", "operator-alpha", "alpha", nil, accessAllowed, accessHidden},
		{"operator over all, source without resources", "operator-all", "beta", nil, accessAllowed, accessAllowed},
		{"viewer", "viewer-alpha", "alpha", []string{"alpha"}, accessForbidden, accessForbidden},
		{"viewer over all, source without resources", "viewer-all", "alpha", nil, accessForbidden, accessForbidden},
		{"no role", "nobody", "alpha", []string{"alpha"}, accessHidden, accessHidden},
	} {
		id := identities[tc.as]
		if got := namespaceAccess(id, tc.ns); got != tc.wantNS {
			t.Errorf("%s: namespaceAccess(%s) = %d, want %d", tc.name, tc.ns, got, tc.wantNS)
		}
		if got := sourceAccess(id, tc.nss); got != tc.wantSrc {
			t.Errorf("%s: sourceAccess(%v) = %d, want %d", tc.name, tc.nss, got, tc.wantSrc)
		}
	}
}

// formClient is a cookie-keeping client that does not follow redirects.
func formClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func getAs(t *testing.T, c *http.Client, u, as string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	return doAs(t, c, req, as)
}

// doAs sends req as the test identity as and returns the answer's status and body.
func doAs(t *testing.T, c *http.Client, req *http.Request, as string) (int, string) {
	t.Helper()
	req.Header.Set("X-Test-Identity", as)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`)

func TestDashboardOperatorButtons(t *testing.T) {
	t.Parallel()
	srv, st := setupAuth(t, 2)
	ctx := context.Background()
	c := formClient(t)
	resPage := srv.URL + "/resources/alpha/Queue/q000"

	// Viewers see no buttons, operators do; the footer calls the dashboard read-only only
	// for those who get no buttons.
	const readOnly, operator = "read-only (operators see Reconcile and Suspend)", "operator: Reconcile, Sync, Suspend and Resume each ask to confirm"
	if code, body := getAs(t, c, resPage, "viewer-alpha"); code != 200 || strings.Contains(body, "/confirm/") || !strings.Contains(body, readOnly) {
		t.Errorf("viewer's resource page: %d, buttons shown: %v, footer read-only: %v", code, strings.Contains(body, "/confirm/"), strings.Contains(body, readOnly))
	}
	code, body := getAs(t, c, resPage, "operator-alpha")
	if code != 200 || !strings.Contains(body, `href="/resources/alpha/Queue/q000/confirm/reconcile"`) || !strings.Contains(body, "/confirm/suspend") {
		t.Errorf("operator's resource page: %d, no buttons", code)
	}
	if strings.Contains(body, "read-only") || !strings.Contains(body, operator) {
		t.Errorf("operator's resource page: the footer does not say the buttons work:\n%s", body[strings.Index(body, "<footer"):])
	}
	if _, body := getAs(t, c, srv.URL+"/sources/main", "operator-alpha"); strings.Contains(body, "/confirm/") {
		t.Error("an operator of one of the source's namespaces sees the source's buttons")
	}
	if _, body := getAs(t, c, srv.URL+"/sources/main", "admin"); !strings.Contains(body, `href="/sources/main/confirm/sync"`) {
		t.Error("admin sees no sync button on the source page")
	}
	// The confirmation page: viewers are refused, unseen namespaces are not found.
	if code, _ := getAs(t, c, resPage+"/confirm/suspend", "viewer-alpha"); code != http.StatusForbidden {
		t.Errorf("viewer's confirmation page: %d, want 403", code)
	}
	if code, _ := getAs(t, c, srv.URL+"/resources/beta/Queue/q001/confirm/suspend", "operator-alpha"); code != http.StatusNotFound {
		t.Errorf("confirmation page in an unseen namespace: %d, want 404", code)
	}
	code, body = getAs(t, c, resPage+"/confirm/suspend", "operator-alpha")
	m := csrfField.FindStringSubmatch(body)
	if code != 200 || m == nil {
		t.Fatalf("confirmation page: %d, no token in %s", code, body)
	}
	token := m[1]

	submit := func(origin, tok string) int {
		t.Helper()
		form := url.Values{"csrf": {tok}, "reason": {"by hand"}}
		req, _ := http.NewRequest(http.MethodPost, resPage+"/suspend", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Test-Identity", "operator-alpha")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		name, origin, token string
	}{
		{"cross-origin", "https://evil.example", token},
		{"no origin nor referer", "", token},
		{"wrong token", srv.URL, strings.Repeat("0", 64)},
		{"no token", srv.URL, ""},
	} {
		if code := submit(tc.origin, tc.token); code != http.StatusForbidden {
			t.Errorf("%s POST: %d, want 403", tc.name, code)
		}
	}
	if r, _ := st.GetResource(ctx, "alpha", "Queue", "q000"); status.IsSuspended(r.Status.Conditions) {
		t.Fatal("a refused POST suspended the resource")
	}
	if code := submit(srv.URL, token); code != http.StatusSeeOther {
		t.Fatalf("confirmed POST: %d, want 303", code)
	}
	r, _ := st.GetResource(ctx, "alpha", "Queue", "q000")
	if c, _ := status.Get(r.Status.Conditions, status.Suspended); c.Message != "suspended by token:ci-bot: by hand" {
		t.Errorf("after the form: Suspended %+v", c)
	}
	// The badge shows to viewers too; the operator now gets Resume instead of Suspend.
	// It names the work that waits (q000 was never reconciled), as the CLI's get does.
	if _, body := getAs(t, c, resPage, "viewer-alpha"); !strings.Contains(body, "badge-suspended") || !strings.Contains(body, "Suspended (generation 1 pending)") {
		t.Errorf("viewer sees no Suspended badge naming the pending generation:\n%s", body)
	}
	if _, body := getAs(t, c, srv.URL+"/resources?namespace=alpha", "viewer-alpha"); !strings.Contains(body, ">suspended (generation 1 pending)</span>") {
		t.Errorf("the resource list marks no suspended resource:\n%s", body)
	}
	if _, body := getAs(t, c, resPage, "operator-alpha"); !strings.Contains(body, "/confirm/resume") || strings.Contains(body, "/confirm/reconcile") {
		t.Error("operator's page of a suspended resource: want Resume and no Reconcile")
	}
}

// TestCrossOriginRefused: a state-changing request a browser sends from another site is
// refused (403) before it reaches a handler, whoever the caller is; the CLI's requests (no
// Origin, no Sec-Fetch-Site) and same-origin ones pass; signed webhooks are not checked.
func TestCrossOriginRefused(t *testing.T) {
	t.Parallel()
	srv, _ := setup(t, 1) // no auth: every caller is the anonymous admin
	u := srv.URL + "/api/v1/resources/alpha/queue/q000/reconcile"
	do := func(method, target string, headers map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, target, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "text/plain")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		code, b := send(t, req)
		return code, string(b)
	}
	for _, tc := range []struct {
		name    string
		method  string
		target  string
		headers map[string]string
		want    int
	}{
		{"cli", "POST", u, nil, http.StatusAccepted},
		{"same origin", "POST", u, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": srv.URL}, http.StatusAccepted},
		{"cross site", "POST", u, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, http.StatusForbidden},
		{"other origin, old browser", "POST", u, map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"same site sibling", "POST", u, map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "https://other.example.com"}, http.StatusForbidden},
		{"admin reload", "POST", srv.URL + "/api/v1/admin/reload", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"reads pass", "GET", srv.URL + "/api/v1/resources", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, http.StatusOK},
		{"webhooks are not checked", "POST", srv.URL + "/hooks/main", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, http.StatusNotFound},
	} {
		code, body := do(tc.method, tc.target, tc.headers)
		if code != tc.want {
			t.Errorf("%s: %d, want %d: %s", tc.name, code, tc.want, body)
		}
		if tc.want == http.StatusForbidden && !strings.Contains(body, "cross-origin request refused") {
			t.Errorf("%s: body %q does not say why", tc.name, body)
		}
	}
}

// TestAbandonCommand: POST …/abandon forgets a resource whose manifest was removed, for an
// operator of its namespace or an admin, with a reason; a viewer, an operator of another
// namespace, a resource still in Git and a missing reason are refused.
func TestAbandonCommand(t *testing.T) {
	t.Parallel()
	srv, st := setupAuth(t, 4) // q000, q002 in alpha; q001, q003 in beta
	ctx := context.Background()
	// q000 and q001 removed from Git: being deleted.
	var b strings.Builder
	b.WriteString(typeDoc)
	for _, q := range []struct{ name, ns string }{{"q002", "alpha"}, {"q003", "beta"}} {
		fmt.Fprintf(&b, "---\napiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: %s, namespace: %s}\nspec: {size: 1}\n", q.name, q.ns)
	}
	set, err := manifest.NewLoader().Load([]sources.File{{Path: "all.yaml", Data: []byte(b.String())}}, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyRevision(ctx, store.ApplyParams{Source: "main", Revision: "def456", Set: set, Prune: true, MaxPruneFraction: 1}); err != nil {
		t.Fatal(err)
	}
	abandon := func(ns, name string) string {
		return srv.URL + "/api/v1/resources/" + ns + "/queue/" + name + "/abandon"
	}
	const why = `{"reason":"the queue service is gone"}`
	cases := []struct {
		name, url, as, body string
		want                int
	}{
		{"viewer may not abandon", abandon("alpha", "q000"), "viewer-alpha", why, http.StatusForbidden},
		{"viewer of every namespace may not abandon", abandon("alpha", "q000"), "viewer-all", why, http.StatusForbidden},
		{"operator of another namespace", abandon("beta", "q001"), "operator-alpha", why, http.StatusNotFound},
		{"a reason is required", abandon("alpha", "q000"), "operator-alpha", "", http.StatusBadRequest},
		{"a blank reason is no reason", abandon("alpha", "q000"), "operator-alpha", `{"reason":"  "}`, http.StatusBadRequest},
		{"unknown fields refused", abandon("alpha", "q000"), "operator-alpha", `{"reason":"x","force":true}`, http.StatusBadRequest},
		{"manifest still in Git", abandon("alpha", "q002"), "operator-alpha", why, http.StatusConflict},
		{"missing resource", abandon("alpha", "nope"), "operator-alpha", why, http.StatusNotFound},
		{"operator of its namespace", abandon("alpha", "q000"), "operator-alpha", why, http.StatusOK},
		{"gone once abandoned", abandon("alpha", "q000"), "operator-alpha", why, http.StatusNotFound},
		{"admin, pasting a secret", abandon("beta", "q001"), "admin", `{"reason":"401 with token ` + knownSecret + `"}`, http.StatusOK},
	}
	for _, tc := range cases { // in order: the refusals before the abandons
		if got := post(t, tc.url, tc.as, tc.body, nil); got != tc.want {
			t.Errorf("%s: POST %s as %s = %d, want %d", tc.name, strings.TrimPrefix(tc.url, srv.URL), tc.as, got, tc.want)
		}
	}
	hs, err := st.ListHistory(ctx, "alpha", "Queue", "q000", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) == 0 || hs[0].Operation != store.OperationAbandon || hs[0].Actor != "token:ci-bot" ||
		!strings.Contains(hs[0].Message, "the queue service is gone") {
		t.Errorf("newest history of q000 = %+v, want an abandon by token:ci-bot with the reason", hs)
	}
	evs, err := st.ListEvents(ctx, store.Everything, store.EventFilter{Namespace: "alpha", Kind: "Queue", Name: "q000"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 || evs[0].Reason != store.ReasonAbandoned || !strings.Contains(evs[0].Message, "abandoned by token:ci-bot: the queue service is gone") {
		t.Errorf("newest event of q000 = %+v, want Abandoned by token:ci-bot", evs)
	}
	// The reason is kept scrubbed of the config's secrets, everywhere it is kept.
	var leaks int
	if err := st.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM reconcile_history WHERE message LIKE '%' || $1 || '%')
		+ (SELECT count(*) FROM events WHERE message LIKE '%' || $1 || '%')
		+ (SELECT count(*) FROM notification_outbox WHERE message LIKE '%' || $1 || '%')`, knownSecret).Scan(&leaks); err != nil || leaks != 0 {
		t.Errorf("the secret in an abandon's reason is kept in %d rows (%v)", leaks, err)
	}
	hs, err = st.ListHistory(ctx, "beta", "Queue", "q001", 10)
	if err != nil || len(hs) == 0 || !strings.Contains(hs[0].Message, "401 with token ***") {
		t.Errorf("newest history of q001 = %+v (%v), want the reason scrubbed", hs, err)
	}
	for _, q := range []struct{ ns, name string }{{"alpha", "q002"}, {"beta", "q003"}} {
		if _, err := st.GetResource(ctx, q.ns, "Queue", q.name); err != nil {
			t.Errorf("%s after the abandons: %v, want it untouched", q.name, err)
		}
	}
}
