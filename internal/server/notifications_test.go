package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/store"
)

// TestNotificationsDeadLetters: a dead notification is listed by state=dead and named on the
// overview; a pending one only by the full list.
func TestNotificationsDeadLetters(t *testing.T) {
	t.Parallel()
	hs, st := setup(t, 1)
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
	if err := st.FinishOutbox(ctx, []store.OutboxResult{{ID: due[0].ID, State: store.OutboxDead, Attempts: 5, Error: "all/ops: provider answered 500: no"}}); err != nil {
		t.Fatal(err)
	}
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
