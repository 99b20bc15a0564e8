package server

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
	"github.com/trueup-dev/trueup/sources"
)

// TestPinCommands: pin and unpin need operator rights in every namespace of the source and a
// reason; a revision is one of the source's history or a unique prefix of one; the source's
// JSON and its revisions show the pin.
func TestPinCommands(t *testing.T) {
	t.Parallel()
	srv, st := setupAuth(t, 2) // q000 in alpha, q001 in beta
	ctx := context.Background()
	// Kept (not pruned) resources: the revisions differ only in their hash.
	r1, r2, r3 := strings.Repeat("1", 40), "1111111"+strings.Repeat("2", 33), strings.Repeat("9", 40)
	for _, r := range []string{r1, r2, r3} {
		if _, err := st.ApplyRevision(ctx, store.ApplyParams{Source: "main", Revision: r, Set: &manifest.Set{}}); err != nil {
			t.Fatal(err)
		}
	}
	pin := srv.URL + "/api/v1/sources/main/pin"
	for _, tc := range []struct {
		name, url, as, body string
		want                int
	}{
		{"a namespace operator", pin, "operator-alpha", `{"revision":"` + r1 + `","reason":"x"}`, http.StatusForbidden},
		{"a viewer", pin, "viewer-all", `{"revision":"` + r1 + `","reason":"x"}`, http.StatusForbidden},
		{"unseen source", srv.URL + "/api/v1/sources/nope/pin", "admin", `{"revision":"` + r1 + `","reason":"x"}`, http.StatusNotFound},
		{"without a reason", pin, "operator-all", `{"revision":"` + r1 + `"}`, http.StatusBadRequest},
		{"without a revision", pin, "operator-all", `{"reason":"x"}`, http.StatusBadRequest},
		{"an unknown field", pin, "operator-all", `{"revision":"` + r1 + `","reason":"x","force":true}`, http.StatusBadRequest},
		{"an unknown revision", pin, "operator-all", `{"revision":"abcdef0","reason":"x"}`, http.StatusNotFound},
		{"a full hash never applied", pin, "operator-all", `{"revision":"` + strings.Repeat("e", 40) + `","reason":"x"}`, http.StatusNotFound},
		{"an ambiguous prefix", pin, "operator-all", `{"revision":"1111111","reason":"x"}`, http.StatusConflict},
		{"a one-character prefix", pin, "operator-all", `{"revision":"1","reason":"x"}`, http.StatusBadRequest},
		{"a branch name", pin, "operator-all", `{"revision":"main","reason":"x"}`, http.StatusBadRequest},
		{"unpin by a namespace operator", srv.URL + "/api/v1/sources/main/unpin", "operator-alpha", "", http.StatusForbidden},
	} {
		if got := post(t, tc.url, tc.as, tc.body, nil); got != tc.want {
			t.Errorf("%s: POST %s as %s = %d, want %d", tc.name, strings.TrimPrefix(tc.url, srv.URL), tc.as, got, tc.want)
		}
	}
	var p wire.SourcePin
	if code := post(t, pin, "operator-all", `{"revision":"11111112","reason":"incident `+knownSecret+`"}`, &p); code != http.StatusOK {
		t.Fatalf("pin = %d", code)
	}
	if p.Revision != r2 || p.Actor != "user:ann" || strings.Contains(p.Reason, knownSecret) || p.At.IsZero() {
		t.Errorf("pin answer %+v", p)
	}
	var got wire.Source
	if code := getJSONAs(t, srv.URL+"/api/v1/sources/main", "viewer-alpha", &got); code != http.StatusOK || got.Pinned == nil || got.Pinned.Revision != r2 {
		t.Errorf("source JSON = %d, pinned %+v", code, got.Pinned)
	}
	var revs struct{ Items []wire.SourceRevision }
	if code := getJSONAs(t, srv.URL+"/api/v1/sources/main/revisions?limit=3", "viewer-alpha", &revs); code != http.StatusOK || len(revs.Items) != 3 {
		t.Fatalf("revisions = %d %+v", code, revs)
	}
	if revs.Items[0].Revision != r3 || !revs.Items[0].Current || revs.Items[1].Revision != r2 || !revs.Items[1].Pinned {
		t.Errorf("revisions %+v", revs.Items)
	}
	if code := getJSONAs(t, srv.URL+"/api/v1/sources/main/revisions?limit=0", "viewer-alpha", nil); code != http.StatusBadRequest {
		t.Errorf("limit 0 = %d", code)
	}
	if code := getJSONAs(t, srv.URL+"/api/v1/sources/nope/revisions", "admin", nil); code != http.StatusNotFound {
		t.Errorf("revisions of an unknown source = %d", code)
	}

	var cmd wire.Command
	if code := post(t, srv.URL+"/api/v1/sources/main/unpin", "operator-all", `{"reason":"fixed"}`, &cmd); code != http.StatusOK || cmd.Action != "unpin" {
		t.Fatalf("unpin = %d %+v", code, cmd)
	}
	var unpinned wire.Source
	if code := getJSONAs(t, srv.URL+"/api/v1/sources/main", "viewer-alpha", &unpinned); code != http.StatusOK || unpinned.Pinned != nil {
		t.Errorf("after unpin: %d, pinned %+v", code, unpinned.Pinned)
	}
	if code := post(t, srv.URL+"/api/v1/sources/main/unpin", "operator-all", `{"reason":"again"}`, nil); code != http.StatusConflict {
		t.Errorf("unpin a source not pinned = %d, want 409", code)
	}
}

// TestDashboardPin: operators of every namespace of the source get Pin and Unpin; the pin
// form lists the source's revisions and needs a reason; everyone sees the pin on the source
// page and the overview's banner.
func TestDashboardPin(t *testing.T) {
	t.Parallel()
	srv, st := setupAuth(t, 2)
	ctx := context.Background()
	r1 := strings.Repeat("1", 40)
	if _, err := st.ApplyRevision(ctx, store.ApplyParams{Source: "main", Revision: r1, Set: &manifest.Set{}}); err != nil {
		t.Fatal(err)
	}
	c := formClient(t)
	page := srv.URL + "/sources/main"
	if _, body := getAs(t, c, page, "operator-alpha"); strings.Contains(body, "/confirm/pin") || !strings.Contains(body, `id="revisions"`) {
		t.Error("an operator of one of the source's namespaces may pin it, or sees no revisions")
	}
	_, body := getAs(t, c, page, "admin")
	if !strings.Contains(body, `href="/sources/main/confirm/pin"`) || !strings.Contains(body, `href="/sources/main/confirm/pin?revision=abc123"`) {
		t.Fatalf("admin's source page: no Pin button nor a Pin link per revision:\n%s", body)
	}
	if code, _ := getAs(t, c, page+"/confirm/pin", "operator-alpha"); code != http.StatusForbidden {
		t.Errorf("pin confirmation for a namespace operator: %d, want 403", code)
	}
	code, body := getAs(t, c, page+"/confirm/pin?revision=abc123", "admin")
	m := csrfField.FindStringSubmatch(body)
	if code != 200 || m == nil || !strings.Contains(body, `<option value="abc123" selected>`) || !strings.Contains(body, `<option value="`+r1+`">`) {
		t.Fatalf("pin confirmation: %d\n%s", code, body)
	}
	submit := func(action string, form url.Values) int {
		t.Helper()
		form.Set("csrf", m[1])
		req, _ := http.NewRequest(http.MethodPost, page+"/"+action, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Test-Identity", "admin")
		req.Header.Set("Origin", srv.URL)
		code, _ := doAs(t, c, req, "admin")
		return code
	}
	if code := submit("pin", url.Values{"revision": {"abc123"}}); code != http.StatusBadRequest {
		t.Errorf("pin without a reason: %d, want 400", code)
	}
	if code := submit("pin", url.Values{"revision": {"abc123"}, "reason": {"incident 7"}}); code != http.StatusSeeOther {
		t.Fatalf("pin: %d, want 303", code)
	}
	if pin, err := st.SourcePin(ctx, "main"); err != nil || pin == nil || pin.Revision != "abc123" || pin.Actor != "token:root" {
		t.Fatalf("pinned %+v %v", pin, err)
	}
	const banner = "source main is pinned at abc123 by token:root: incident 7"
	if _, body := getAs(t, c, srv.URL+"/", "viewer-alpha"); !strings.Contains(body, `id="pins" data-live class="notice notice-pinned"`) || !strings.Contains(body, banner) {
		t.Errorf("the overview shows no banner:\n%s", body)
	}
	if _, body := getAs(t, c, page, "viewer-alpha"); !strings.Contains(body, `id="pinned"`) || !strings.Contains(body, banner) || strings.Contains(body, "/confirm/") {
		t.Errorf("viewer's source page: no pin, or buttons:\n%s", body)
	}
	if _, body := getAs(t, c, page, "admin"); !strings.Contains(body, `href="/sources/main/confirm/unpin"`) {
		t.Error("admin's page of a pinned source has no Unpin button")
	}
	if code := submit("unpin", url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("unpin: %d, want 303", code)
	}
	if _, body := getAs(t, c, srv.URL+"/", "viewer-alpha"); strings.Contains(body, banner) || !strings.Contains(body, `<section id="pins" data-live hidden>`) {
		t.Error("the overview shows a banner once unpinned")
	}
}

// TestPinNeedsTheRevisionsNamespaces: pinning a revision needs operator rights in the
// namespaces it had, not only in those the source has resources in today: an operator of
// alpha may not bring back a resource in beta that a later revision removed.
func TestPinNeedsTheRevisionsNamespaces(t *testing.T) {
	t.Parallel()
	srv, st := setupAuth(t, 2) // abc123: q000 in alpha, q001 in beta
	ctx := context.Background()
	set, err := manifest.NewLoader().Load([]sources.File{{Path: "all.yaml", Data: []byte(typeDoc +
		"---\napiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: q000, namespace: alpha, labels: {team: red, idx: \"0\"}}\nspec: {size: 0}\n")}}, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	later := strings.Repeat("7", 40)
	if _, err := st.ApplyRevision(ctx, store.ApplyParams{Source: "main", Revision: later, Set: set, Prune: true, MaxPruneFraction: 1}); err != nil {
		t.Fatal(err)
	}
	// The deletion done: the source has resources in alpha only.
	if _, err := st.Pool().Exec(ctx, "DELETE FROM resources WHERE source = 'main' AND namespace = 'beta'"); err != nil {
		t.Fatal(err)
	}
	if nss, err := st.SourceNamespaces(ctx, "main"); err != nil || len(nss) != 1 || nss[0] != "alpha" {
		t.Fatalf("source namespaces %v %v", nss, err)
	}
	pin := srv.URL + "/api/v1/sources/main/pin"
	if code := post(t, pin, "operator-alpha", `{"revision":"abc123","reason":"x"}`, nil); code != http.StatusForbidden {
		t.Errorf("operator-alpha pins a revision with a resource in beta: %d, want 403", code)
	}
	if p, err := st.SourcePin(ctx, "main"); err != nil || p != nil {
		t.Errorf("pin after a refusal: %+v %v", p, err)
	}
	if code := post(t, pin, "operator-alpha", `{"revision":"`+later+`","reason":"x"}`, nil); code != http.StatusOK {
		t.Errorf("operator-alpha pins a revision in alpha only: %d, want 200", code)
	}
	if code := post(t, pin, "operator-all", `{"revision":"abc123","reason":"x"}`, nil); code != http.StatusOK {
		t.Errorf("operator-all pins abc123: %d, want 200", code)
	}
}

// TestCommandReasonsStorable: a reason cut inside a UTF-8 character or holding a NUL is
// stored (not a database error), and a secret is scrubbed before the reason is cut, so none
// of it is kept.
func TestCommandReasonsStorable(t *testing.T) {
	t.Parallel()
	srv, st := setupAuth(t, 2)
	ctx := context.Background()
	src := srv.URL + "/api/v1/sources/main/"
	cut := `"` + strings.Repeat("a", 1023) + `é"`
	for _, tc := range []struct{ name, cmd, body string }{
		{"pin, cut in a character", "pin", `{"revision":"abc123","reason":` + cut + `}`},
		{"unpin, cut in a character", "unpin", `{"reason":` + cut + `}`},
		{"pin, a NUL", "pin", `{"revision":"abc123","reason":"a\u0000b"}`},
		{"unpin, a NUL", "unpin", `{"reason":"a\u0000b"}`},
		{"suspend, cut in a character", "suspend", `{"reason":` + cut + `}`},
		{"resume, a NUL", "resume", `{"reason":"a\u0000b"}`},
		{"suspend, a NUL", "suspend", `{"reason":"a\u0000b"}`},
		{"a resource's suspension, cut in a character", "", `{"reason":` + cut + `}`},
	} {
		u := src + tc.cmd
		if tc.cmd == "" {
			u = srv.URL + "/api/v1/resources/alpha/Queue/q000/suspend"
		}
		if code := post(t, u, "operator-all", tc.body, nil); code != http.StatusOK {
			t.Errorf("%s: %d, want 200", tc.name, code)
		}
	}
	// A secret spanning the cut leaves no prefix of itself.
	body := `{"revision":"abc123","reason":"` + strings.Repeat("a", 1020) + knownSecret + `"}`
	if code := post(t, src+"pin", "operator-all", body, nil); code != http.StatusOK {
		t.Fatalf("pin with a secret at the cut: %d", code)
	}
	p, err := st.SourcePin(ctx, "main")
	if err != nil || p == nil || strings.Contains(p.Reason, knownSecret[:3]) {
		t.Errorf("pin reason %+v %v: holds a prefix of the secret", p, err)
	}
}
