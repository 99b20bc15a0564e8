package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/auth"
	"github.com/trueup-dev/trueup/internal/changewindow"
	"github.com/trueup-dev/trueup/internal/policy"
	"github.com/trueup-dev/trueup/internal/redact"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// openWindows is a set whose deny windows are open now: freeze (beta, operators may
// override) and lockdown (q002, operators may not).
func openWindows(t *testing.T) *changewindow.Set {
	t.Helper()
	// Each opened a minute ago (a yearly schedule) for two hours.
	at := time.Now().UTC().Add(-time.Minute)
	yearly := fmt.Sprintf("%d %d %d %d *", at.Minute(), at.Hour(), at.Day(), int(at.Month()))
	set, err := changewindow.Compile([]changewindow.Window{
		{Name: "freeze", Kind: changewindow.Deny, Schedule: yearly, Duration: 2 * time.Hour,
			Match: policy.Match{Namespaces: []string{"beta"}}, AllowOperators: true},
		{Name: "lockdown", Kind: changewindow.Deny, Schedule: yearly, Duration: 2 * time.Hour,
			Match: policy.Match{Selector: "idx=2"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// setupWindows is setupAuth with the windows of openWindows in force.
func setupWindows(t *testing.T, n int) (*httptest.Server, *store.Store) {
	t.Helper()
	_, st := setup(t, n)
	set := openWindows(t)
	srv := httptest.NewServer(New(st, Options{Replica: "test", Authenticate: func(r *http.Request) (auth.Identity, error) {
		id, ok := identities[r.Header.Get("X-Test-Identity")]
		if !ok {
			return auth.Identity{}, errors.New("unknown test identity")
		}
		return id, nil
	}, Redact: redact.New(knownSecret), Windows: func() *changewindow.Set { return set }},
		slog.New(slog.NewTextHandler(io.Discard, nil))).Handler())
	t.Cleanup(srv.Close)
	return srv, st
}

func TestReconcileOverrideWindow(t *testing.T) {
	t.Parallel()
	srv, st := setupWindows(t, 3) // q000, q002 in alpha; q001 in beta
	ctx := context.Background()
	u := func(ns, name string) string {
		return srv.URL + "/api/v1/resources/" + ns + "/queue/" + name + "/reconcile"
	}
	for _, tc := range []struct{ name, url, body string }{
		{"no reason", u("beta", "q001"), `{"overrideWindow": true}`},
		{"blank reason", u("beta", "q001"), `{"overrideWindow": true, "reason": "  "}`},
		{"unknown field", u("beta", "q001"), `{"override": true}`},
	} {
		req, _ := http.NewRequest(http.MethodPost, tc.url, strings.NewReader(tc.body))
		req.Header.Set("X-Test-Identity", "admin")
		code, b := send(t, req)
		if code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", tc.name, code)
		}
		if tc.name != "unknown field" && !strings.Contains(string(b), "reason") {
			t.Errorf("%s: %s does not name reason", tc.name, b)
		}
	}
	// lockdown does not allow operators: 409 naming it, nothing recorded.
	req, _ := http.NewRequest(http.MethodPost, u("alpha", "q002"), strings.NewReader(`{"overrideWindow": true, "reason": "hotfix"}`))
	req.Header.Set("X-Test-Identity", "operator-alpha")
	code, b := send(t, req)
	if code != http.StatusConflict || !strings.Contains(string(b), "change window lockdown does not allow operators to override it") {
		t.Errorf("override of lockdown = %d %s, want 409 naming lockdown", code, b)
	}
	// freeze allows operators: 202, recorded with actor and reason (scrubbed).
	var out wire.Command
	if code := post(t, u("beta", "q001"), "admin", `{"overrideWindow": true, "reason": "INC-42 `+knownSecret+`"}`, &out); code != http.StatusAccepted {
		t.Fatalf("override of freeze = %d", code)
	}
	if !out.OverrideWindow || !strings.HasPrefix(out.Reason, "INC-42") {
		t.Errorf("answer = %+v", out)
	}
	// A suspended resource is refused as a plain reconcile is.
	if code := post(t, srv.URL+"/api/v1/resources/alpha/queue/q000/suspend", "admin", "", nil); code != http.StatusOK {
		t.Fatalf("suspend = %d", code)
	}
	if code := post(t, u("alpha", "q000"), "operator-alpha", `{"overrideWindow": true, "reason": "early"}`, nil); code != http.StatusConflict {
		t.Errorf("override of a suspended resource = %d, want 409", code)
	}
	if code := post(t, srv.URL+"/api/v1/resources/alpha/queue/q000/resume", "admin", "", nil); code != http.StatusOK {
		t.Fatalf("resume = %d", code)
	}
	// No window holds q000: the override is recorded all the same.
	if code := post(t, u("alpha", "q000"), "operator-alpha", `{"overrideWindow": true, "reason": "early"}`, nil); code != http.StatusAccepted {
		t.Errorf("override without a holding window = %d, want 202", code)
	}
	evs, err := st.ListEvents(ctx, store.Everything, store.EventFilter{Namespace: "beta", Kind: "Queue", Name: "q001"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 || evs[0].Reason != store.ReasonWindowOverride || evs[0].Message != "change windows overridden by token:root: INC-42 ***" {
		t.Errorf("newest event = %+v, want WindowOverridden by token:root", evs)
	}
	cl, err := st.Claim(ctx, "r1", 10, 30e9)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*store.WindowOverride{}
	for _, c := range cl {
		got[c.Name] = c.WindowOverride
	}
	if o := got["q001"]; o == nil || o.Actor != "token:root" || o.Reason != "INC-42 ***" || o.At.IsZero() {
		b, _ := json.Marshal(o)
		t.Errorf("q001 claimed with override %s", b)
	}
	if got["q002"] != nil {
		t.Errorf("q002 claimed with an override after a refusal: %+v", got["q002"])
	}
}

// The reason of an override is scrubbed whole and then cut, so that a secret straddling the
// cut leaves no prefix behind; it is made storable (a NUL is dropped, not a 503); the answer,
// window_override and the event carry the same reason.
func TestReconcileOverrideReasonStored(t *testing.T) {
	t.Parallel()
	srv, st := setupWindows(t, 3)
	ctx := context.Background()
	stored := func(name string) (override, event string) {
		t.Helper()
		if err := st.Pool().QueryRow(ctx, `SELECT r.window_override->>'reason', e.message FROM resources r
			JOIN events e ON e.name = r.name AND e.reason = 'WindowOverridden' WHERE r.name = $1 ORDER BY e.id DESC LIMIT 1`, name).
			Scan(&override, &event); err != nil {
			t.Fatal(err)
		}
		return override, event
	}
	// The secret starts two bytes before the cut: scrubbed first, the cut falls in "***".
	straddling := strings.Repeat("x", maxReason-2) + knownSecret
	want := strings.Repeat("x", maxReason-2) + "**…"
	b, _ := json.Marshal(map[string]any{"overrideWindow": true, "reason": straddling})
	var out wire.Command
	if code := post(t, srv.URL+"/api/v1/resources/beta/queue/q001/reconcile", "admin", string(b), &out); code != http.StatusAccepted {
		t.Fatalf("override with a long reason = %d, want 202", code)
	}
	tail := func(s string) string { return s[max(len(s)-12, 0):] }
	override, event := stored("q001")
	if out.Reason != want || override != want || event != "change windows overridden by token:root: "+want {
		t.Errorf("reason answered …%q, stored …%q, in the event …%q; want …%q", tail(out.Reason), tail(override), tail(event), tail(want))
	}
	if code := post(t, srv.URL+"/api/v1/resources/alpha/queue/q000/reconcile", "admin", `{"overrideWindow": true, "reason": "a\u0000b"}`, &out); code != http.StatusAccepted {
		t.Fatalf("override with a NUL in its reason = %d, want 202", code)
	}
	if override, event := stored("q000"); out.Reason != "ab" || override != "ab" || event != "change windows overridden by token:root: ab" {
		t.Errorf("reason answered %q, stored %q, in the event %q; want ab", out.Reason, override, event)
	}
	if code := post(t, srv.URL+"/api/v1/resources/alpha/queue/q000/reconcile", "admin", `{"overrideWindow": true, "reason": "\u0000"}`, nil); code != http.StatusBadRequest {
		t.Errorf("override with a reason of a NUL only = %d, want 400", code)
	}

	// The dashboard's form stores the same.
	c := formClient(t)
	page := srv.URL + "/resources/beta/Queue/q001"
	_, body := getAs(t, c, page+"/confirm/override", "admin")
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no token on the confirmation page")
	}
	form := url.Values{"csrf": {m[1]}, "reason": {"\x00" + straddling}}
	req, _ := http.NewRequest(http.MethodPost, page+"/override", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", srv.URL)
	if code, _ := doAs(t, c, req, "admin"); code != http.StatusSeeOther {
		t.Fatalf("dashboard override = %d, want 303", code)
	}
	if override, event := stored("q001"); override != want || event != "change windows overridden by token:root: "+want {
		t.Errorf("dashboard: reason stored …%q, in the event …%q; want …%q", tail(override), tail(event), tail(want))
	}
}

func TestResourceTimeline(t *testing.T) {
	t.Parallel()
	srv, _ := setupWindows(t, 3)
	get := func(as, path string) (int, wire.Timeline) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("X-Test-Identity", as)
		code, b := send(t, req)
		var tl wire.Timeline
		if code == http.StatusOK {
			if err := json.Unmarshal(b, &tl); err != nil {
				t.Fatal(err)
			}
		}
		return code, tl
	}
	if code := post(t, srv.URL+"/api/v1/resources/beta/queue/q001/reconcile", "admin", `{"overrideWindow": true, "reason": "INC-42"}`, nil); code != http.StatusAccepted {
		t.Fatalf("override = %d", code)
	}
	code, tl := get("viewer-all", "/api/v1/resources/beta/QUEUE/q001/timeline")
	if code != http.StatusOK {
		t.Fatalf("timeline = %d", code)
	}
	if tl.Resource.Kind != "Queue" || len(tl.Blocking) == 0 || tl.Blocking[0].Reason != "Window" || tl.Blocking[0].Until == nil ||
		!strings.Contains(tl.Blocking[0].Message, "change window freeze (deny) holds changes until ") {
		t.Errorf("blocking = %+v, want the freeze first", tl.Blocking)
	}
	var kinds []string
	for _, e := range tl.Entries {
		kinds = append(kinds, e.Kind+" "+e.Reason)
	}
	if got := strings.Join(kinds, ", "); got != "commit Created, operator ManualReconcile, operator WindowOverridden" {
		t.Errorf("entries = %s", got)
	}
	// q000 is held by no window; a namespace the caller does not see is not found.
	if code, tl := get("viewer-alpha", "/api/v1/resources/alpha/queue/q000/timeline"); code != http.StatusOK || len(tl.Blocking) != 0 {
		t.Errorf("q000: %d %+v, want no blocking reason", code, tl.Blocking)
	}
	if code, _ := get("viewer-alpha", "/api/v1/resources/beta/queue/q001/timeline"); code != http.StatusNotFound {
		t.Errorf("unseen namespace = %d, want 404", code)
	}
	// limit is 1 to 1000: another value is refused, not replaced by the default.
	for _, limit := range []string{"0", "1001", "-1", "ten"} {
		if code, _ := get("viewer-all", "/api/v1/resources/beta/queue/q001/timeline?limit="+limit); code != http.StatusBadRequest {
			t.Errorf("limit=%s: %d, want 400", limit, code)
		}
	}
	if code, tl := get("viewer-all", "/api/v1/resources/beta/queue/q001/timeline?limit=1000"); code != http.StatusOK || len(tl.Entries) != 3 {
		t.Errorf("limit=1000: %d, %d entries, want 3", code, len(tl.Entries))
	}
	if code, tl := get("viewer-all", "/api/v1/resources/beta/queue/q001/timeline?limit=1"); code != http.StatusOK || len(tl.Entries) != 1 {
		t.Errorf("limit=1: %d, %d entries, want 1", code, len(tl.Entries))
	}
}

// A dependency in a namespace the caller may not see keeps only its name in the blocking
// reasons: neither its phase nor the change window holding it, nor when that ends.
func TestResourceTimelineHiddenDependency(t *testing.T) {
	t.Parallel()
	srv, st := setupWindows(t, 3)
	ctx := context.Background()
	// alpha/q000 depends on beta/q001 (Pending, under freeze) and waits for it.
	if _, err := st.Pool().Exec(ctx, `INSERT INTO resource_edges (resource_id, dep_namespace, dep_kind, dep_name, explicit, outputs)
		SELECT id, 'beta', 'queue', 'q001', true, '{}'::text[] FROM resources WHERE name = 'q000'`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `UPDATE resources SET conditions = jsonb_build_array(jsonb_build_object('type', 'Reconciling',
		'status', 'True', 'reason', 'WaitingForDependency', 'message', 'waiting for beta/queue/q001 (not Ready)', 'lastTransitionTime', now()))
		WHERE name = 'q000'`); err != nil {
		t.Fatal(err)
	}
	timeline := func(as string) []wire.Blocker {
		t.Helper()
		var tl wire.Timeline
		if code := getJSONAs(t, srv.URL+"/api/v1/resources/alpha/queue/q000/timeline", as, &tl); code != http.StatusOK {
			t.Fatalf("%s: timeline = %d", as, code)
		}
		return tl.Blocking
	}
	if b := timeline("viewer-alpha"); len(b) != 1 || b[0].Reason != "Dependency" || b[0].Until != nil ||
		b[0].Message != "waits for dependency beta/queue/q001 to be Ready" {
		t.Errorf("viewer-alpha: blocking = %+v, want the dependency's name only", b)
	}
	if b := timeline("viewer-all"); len(b) != 1 || b[0].Until == nil ||
		!strings.HasPrefix(b[0].Message, "waits for dependency beta/Queue/q001 to be Ready (it is Pending); change window freeze (deny) holds it until ") {
		t.Errorf("viewer-all: blocking = %+v, want the dependency's phase and window", b)
	}
	c := formClient(t)
	page := srv.URL + "/resources/alpha/Queue/q000"
	code, body := getAs(t, c, page, "viewer-alpha")
	if code != http.StatusOK || !strings.Contains(body, "<strong>Dependency</strong>: waits for dependency beta/queue/q001 to be Ready</li>") ||
		strings.Contains(body, "freeze") || strings.Contains(body, "it is Pending") {
		t.Errorf("viewer-alpha's page: %d, shows the dependency's state or window: %v %v", code,
			strings.Contains(body, "freeze"), strings.Contains(body, "it is Pending"))
	}
	if _, body := getAs(t, c, page, "viewer-all"); !strings.Contains(body, "change window freeze (deny) holds it until ") {
		t.Error("viewer-all's page does not name the window holding the dependency")
	}
}

func TestDashboardWindowOverride(t *testing.T) {
	t.Parallel()
	srv, st := setupWindows(t, 3)
	ctx := context.Background()
	c := formClient(t)
	// q001 (freeze) and q002 (lockdown) wait as the reconciler leaves a held change.
	if _, err := st.Pool().Exec(ctx, `UPDATE resources SET conditions = jsonb_build_array(jsonb_build_object('type', 'Reconciling',
		'status', 'True', 'reason', 'WindowClosed', 'message', 'change window ' || CASE namespace WHEN 'beta' THEN 'freeze' ELSE 'lockdown' END
		  || ' (deny) holds changes', 'lastTransitionTime', now())) WHERE name IN ('q001', 'q002')`); err != nil {
		t.Fatal(err)
	}
	page := srv.URL + "/resources/beta/Queue/q001"
	const button = `href="/resources/beta/Queue/q001/confirm/override"`
	if code, body := getAs(t, c, page, "viewer-all"); code != 200 || !strings.Contains(body, "change window freeze (deny) holds changes") ||
		strings.Contains(body, button) || !strings.Contains(body, `id="why"`) || !strings.Contains(body, "<strong>Window</strong>") {
		t.Errorf("viewer's page: %d, window shown %v, override offered %v, why %v", code, strings.Contains(body, "freeze"),
			strings.Contains(body, button), strings.Contains(body, "<strong>Window</strong>"))
	}
	if _, body := getAs(t, c, page, "admin"); !strings.Contains(body, button) {
		t.Error("admin is not offered the override of freeze")
	}
	if _, body := getAs(t, c, srv.URL+"/resources/alpha/Queue/q002", "operator-alpha"); !strings.Contains(body, "lockdown") || strings.Contains(body, "/confirm/override") {
		t.Error("lockdown, which does not allow operators, is offered to override (or not shown)")
	}
	code, body := getAs(t, c, page+"/confirm/override", "admin")
	m := csrfField.FindStringSubmatch(body)
	if code != 200 || m == nil || !strings.Contains(body, `name="reason"`) {
		t.Fatalf("confirmation page: %d, token %v", code, m != nil)
	}
	submit := func(u, as, reason string) int {
		t.Helper()
		form := url.Values{"csrf": {m[1]}, "reason": {reason}}
		req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", srv.URL)
		code, _ := doAs(t, c, req, as)
		return code
	}
	if code := submit(page+"/override", "admin", " "); code != http.StatusBadRequest {
		t.Errorf("override without a reason: %d, want 400", code)
	}
	if code := submit(srv.URL+"/resources/alpha/Queue/q002/override", "admin", "please"); code != http.StatusConflict {
		t.Errorf("override of lockdown: %d, want 409", code)
	}
	if code := submit(page+"/override", "admin", "INC-42"); code != http.StatusSeeOther {
		t.Fatalf("override: %d, want 303", code)
	}
	evs, err := st.ListEvents(ctx, store.Everything, store.EventFilter{Namespace: "beta", Kind: "Queue", Name: "q001"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 || evs[0].Message != "change windows overridden by token:root: INC-42" {
		t.Errorf("events = %+v, want WindowOverridden by token:root", evs)
	}
}
