package server

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// TestPinCommands: pin and unpin need operator rights in every namespace of the source and a
// reason; a revision is a full hash or a unique prefix of the source's history; the source's
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
}
