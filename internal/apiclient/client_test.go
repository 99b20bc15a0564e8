package apiclient

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/wire"
)

func TestClient(t *testing.T) {
	var sawToken []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawToken = append(sawToken, "other:"+r.Header.Get("Authorization"))
		_, _ = w.Write([]byte(`{"items":[],"continue":""}`))
	}))
	defer other.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawToken = append(sawToken, "api:"+r.Header.Get("Authorization"))
		switch {
		case r.URL.Path == "/api/v1/resources" && r.URL.Query().Get("continue") == "":
			_, _ = w.Write([]byte(`{"items":[{"a":1}],"continue":"p2"}`))
		case r.URL.Path == "/api/v1/resources":
			_, _ = w.Write([]byte(`{"items":[{"a":2}],"continue":""}`))
		case r.URL.Path == "/moved":
			http.Redirect(w, r, other.URL+"/api/v1/events", http.StatusFound)
		case r.Method == http.MethodPost:
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(`{"action":"reconcile","actor":"token:ci","requestedAt":"2026-11-24T00:00:00Z","resources":[]}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"resource default/Widget/x not found"}`))
		}
	}))
	defer api.Close()
	c, err := New(api.URL, "tu_secret", false, "test")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	items, err := c.ListResources(ctx, url.Values{"namespace": {""}}, 1)
	if err != nil || len(items) != 2 {
		t.Fatalf("ListResources = %d items, %v", len(items), err)
	}
	_, err = c.GetResource(ctx, "default", "Widget", "x")
	if !IsNotFound(err) || err.Error() != "resource default/Widget/x not found" {
		t.Fatalf("GetResource: %v", err)
	}
	var ans wire.Command
	if err := c.Post(ctx, ResourcePath("default", "Widget", "x")+"/reconcile", nil, nil, &ans); err != nil || ans.Actor != "token:ci" {
		t.Fatalf("Post: %+v %v", ans, err)
	}
	if _, err := c.List(ctx, "/moved", nil); err != nil {
		t.Fatal(err)
	}
	for _, s := range sawToken {
		if strings.HasPrefix(s, "api:") && s != "api:Bearer tu_secret" {
			t.Errorf("the API got %q", s)
		}
		if strings.HasPrefix(s, "other:") && s != "other:" {
			t.Errorf("a redirect to another host carried the token: %q", s)
		}
	}
	// A token never goes in clear to another machine.
	if _, err := New("http://trueup.example.com:8080", "tu_secret", false, "test"); err == nil {
		t.Fatal("a token over http:// to another machine was accepted")
	}
	if _, err := New("ftp://x", "", false, "test"); err == nil {
		t.Fatal("ftp:// accepted")
	}
}

// TestResourceSets: the filter goes in the query, the path is escaped, the answers decode.
func TestResourceSets(t *testing.T) {
	var asked []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.EscapedPath()+"?"+r.URL.RawQuery)
		if r.URL.Path == "/api/v1/resourcesets" {
			_, _ = w.Write([]byte(`{"items":[{"namespace":"prod","name":"dbs","members":6,"phases":{"Ready":6}}]}`))
			return
		}
		_, _ = w.Write([]byte(`{"namespace":"prod","name":"a b","inputs":3,"phases":{}}`))
	}))
	defer api.Close()
	c, err := New(api.URL, "", false, "test")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sets, err := c.ResourceSets(ctx, ResourceSetFilter{Namespace: "prod", Source: "infra"})
	if err != nil || len(sets) != 1 || sets[0].Name != "dbs" || sets[0].Phases["Ready"] != 6 {
		t.Fatalf("ResourceSets = %+v, %v", sets, err)
	}
	if _, err := c.ResourceSets(ctx, ResourceSetFilter{}); err != nil {
		t.Fatal(err)
	}
	rs, err := c.ResourceSet(ctx, "prod", "a b")
	if err != nil || rs.Name != "a b" || rs.Inputs != 3 {
		t.Fatalf("ResourceSet = %+v, %v", rs, err)
	}
	want := []string{"/api/v1/resourcesets?namespace=prod&source=infra", "/api/v1/resourcesets?", "/api/v1/resourcesets/prod/a%20b?"}
	if strings.Join(asked, " ") != strings.Join(want, " ") {
		t.Errorf("asked %q, want %q", asked, want)
	}
}

// roundTripFunc serves a request in process.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestInProcessErrors: an in-process client's errors name the API, not its placeholder URL.
func TestInProcessErrors(t *testing.T) {
	for _, c := range []struct {
		code      int
		body, err string
	}{
		{http.StatusBadGateway, "oops", "GET /api/v1/sources: the API answered 502 Bad Gateway"},
		{http.StatusOK, "oops", "GET /api/v1/sources: unexpected answer of the API: invalid character 'o' looking for beginning of value"},
	} {
		cl := NewInProcess("http://in-process.invalid", roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: c.code, Status: strconv.Itoa(c.code) + " " + http.StatusText(c.code),
				Body: io.NopCloser(strings.NewReader(c.body)), Request: r}, nil
		}), "test")
		var v any
		if err := cl.Get(context.Background(), "/api/v1/sources", nil, &v); err == nil || err.Error() != c.err {
			t.Errorf("got %v, want %s", err, c.err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cl := NewInProcess("http://in-process.invalid", roundTripFunc(func(r *http.Request) (*http.Response, error) { return nil, r.Context().Err() }), "test")
	if err := cl.Get(ctx, "/api/v1/sources", nil, nil); err == nil || err.Error() != "the API: context canceled" {
		t.Errorf("canceled: %v", err)
	}
}
