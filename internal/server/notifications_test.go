package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/store"
)

// seedOutbox writes two notifications, q000's Failed and q001's Recovered, and makes the
// first a dead letter whose last error is lastErr.
func seedOutbox(t *testing.T, st *store.Store, lastErr string) {
	t.Helper()
	ctx := context.Background()
	if err := st.AddOutbox(ctx, []store.OutboxEntry{
		{Event: "Failed", Namespace: "alpha", Kind: "Queue", Name: "q000", Source: "main", Revision: "abc", Phase: "Failed", Message: "boom"},
		{Event: "Recovered", Namespace: "alpha", Kind: "Queue", Name: "q001", Source: "main", Revision: "abc", Phase: "Ready"},
	}); err != nil {
		t.Fatal(err)
	}
	due, err := st.DueOutbox(ctx, 10)
	if err != nil || len(due) != 2 {
		t.Fatalf("due: %v, %v", due, err)
	}
	if err := st.FinishOutbox(ctx, []store.OutboxResult{{ID: due[0].ID, State: store.OutboxDead, Attempts: 5, Error: lastErr}}); err != nil {
		t.Fatal(err)
	}
}

// TestNotificationsDeadLetters: a dead notification is listed by state=dead and named on the
// overview; a pending one only by the full list.
func TestNotificationsDeadLetters(t *testing.T) {
	t.Parallel()
	hs, st := setup(t, 1)
	seedOutbox(t, st, "all/ops: provider answered 500: no")
	var page struct{ Items []notificationJSON }
	get(t, hs.URL+"/api/v1/notifications?state=dead", &page)
	if len(page.Items) != 1 || page.Items[0].Name != "q000" || page.Items[0].Attempts != 5 || page.Items[0].FinishedAt == nil ||
		!strings.Contains(page.Items[0].LastError, "500") {
		t.Fatalf("dead: %+v", page.Items)
	}
	get(t, hs.URL+"/api/v1/notifications", &page)
	if len(page.Items) != 2 || page.Items[0].Name != "q001" {
		t.Fatalf("all: %+v", page.Items)
	}
	resp, err := http.Get(hs.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "1 notification could not be delivered") {
		t.Errorf("the overview does not name the dead letter")
	}
}

// TestNotificationsPage: the dashboard lists the outbox for admins, filtered by state, with a
// dead letter's attempts and last error; other callers get 403 and no link in the menu.
func TestNotificationsPage(t *testing.T) {
	t.Parallel()
	srv, st := setupAuth(t, 1)
	seedOutbox(t, st, "prod/ops: provider answered 500: <no>")
	page := func(as, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("X-Test-Identity", as)
		code, b := send(t, req)
		return code, string(b)
	}
	code, body := page("admin", "/notifications?state=dead")
	if code != http.StatusOK {
		t.Fatalf("dead letters: %d\n%s", code, body)
	}
	for _, want := range []string{"Queue/alpha/q000", `href="/resources/alpha/Queue/q000"`, "provider answered 500: &lt;no&gt;", ">5<", `href="/notifications"`} {
		if !strings.Contains(body, want) {
			t.Errorf("dead letters page lacks %q", want)
		}
	}
	if strings.Contains(body, "q001") {
		t.Errorf("dead letters page lists the pending entry")
	}
	if code, body = page("admin", "/notifications"); code != http.StatusOK || !strings.Contains(body, "Queue/alpha/q001") || !strings.Contains(body, "next attempt") {
		t.Errorf("all: %d, pending entry or its next attempt missing", code)
	}
	if code, _ = page("admin", "/notifications?state=lost"); code != http.StatusBadRequest {
		t.Errorf("state=lost: %d, want 400", code)
	}
	if code, body = page("admin", "/"); !strings.Contains(body, `href="/notifications?state=dead"`) {
		t.Errorf("the overview does not link the dead letters (%d)", code)
	}
	for _, as := range []string{"viewer-all", "operator-alpha"} {
		if code, body = page(as, "/notifications"); code != http.StatusForbidden || strings.Contains(body, "q000") {
			t.Errorf("%s: %d, want 403 without entries", as, code)
		}
		if _, body = page(as, "/"); strings.Contains(body, `href="/notifications"`) {
			t.Errorf("%s: the menu links the notifications page", as)
		}
	}
}
