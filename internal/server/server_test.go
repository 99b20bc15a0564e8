package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/store/storetest"
	"github.com/trueup-dev/trueup/internal/wire"
	"github.com/trueup-dev/trueup/sources"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var typeDoc = manifesttest.TypeDoc("Queue", "mq.example.com", "{type: object, properties: {size: {type: integer}}}", "noop")

// setup seeds a database with n queues across two namespaces through the real apply path
// and returns an API server on it.
func setup(t testing.TB, n int) (*httptest.Server, *store.Store) {
	t.Helper()
	ctx := context.Background()
	st := storetest.Open(t, store.Options{})
	var b strings.Builder
	b.WriteString(typeDoc)
	for i := 0; i < n; i++ {
		ns, team := "alpha", "red"
		if i%2 == 1 {
			ns, team = "beta", "blue"
		}
		fmt.Fprintf(&b, "---\napiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: q%03d, namespace: %s, labels: {team: %s, idx: \"%d\"}}\nspec: {size: %d}\n", i, ns, team, i, i)
	}
	set, err := manifest.NewLoader().Load([]sources.File{{Path: "all.yaml", Data: []byte(b.String())}}, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RegisterSource(ctx, store.SourceConfig{Name: "main", URL: "file:///repo", Branch: "main"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyRevision(ctx, store.ApplyParams{Source: "main", Revision: "abc123", Set: set, Prune: true}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(st, Options{Replica: "test"}, slog.New(slog.NewTextHandler(io.Discard, nil))).Handler())
	t.Cleanup(srv.Close)
	return srv, st
}

func get(t *testing.T, u string, v any) int {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); v != nil && ct != "application/json" {
		t.Errorf("%s: content type %q", u, ct)
	}
	body, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("%s: %v: %s", u, err, body)
		}
	}
	return resp.StatusCode
}

type page struct {
	Items    []wire.Resource `json:"items"`
	Continue string          `json:"continue"`
}

func TestListFiltersAndPaging(t *testing.T) {
	t.Parallel()
	srv, _ := setup(t, 25)
	cases := []struct {
		query string
		want  int
	}{
		{"", 25},
		{"kind=queue", 25},
		{"kind=Other", 0},
		{"namespace=alpha", 13},
		{"namespace=beta&labelSelector=team%3Dblue", 12},
		{"labelSelector=team%3Dred", 13},
		{"labelSelector=team!%3Dred", 12},
		{"labelSelector=idx+in+(1,2,3)", 3},
		{"labelSelector=idx+notin+(1,2,3)", 22},
		{"labelSelector=team", 25},
		{"labelSelector=!team", 0},
		{"source=main&phase=Pending", 25},
		{"phase=Ready", 0},
	}
	for _, tc := range cases {
		var p page
		if code := get(t, srv.URL+"/api/v1/resources?"+tc.query, &p); code != 200 || len(p.Items) != tc.want {
			t.Errorf("?%s: code %d, %d items, want %d", tc.query, code, len(p.Items), tc.want)
		}
	}
	// Walk all pages of 10: every item once, in order.
	var names []string
	next := ""
	for pages := 0; ; pages++ {
		var p page
		get(t, srv.URL+"/api/v1/resources?limit=10&continue="+url.QueryEscape(next), &p)
		for _, it := range p.Items {
			names = append(names, it.Metadata.Namespace+"/"+it.Metadata.Name)
		}
		if p.Continue == "" {
			break
		}
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		next = p.Continue
	}
	if len(names) != 25 || names[0] != "alpha/q000" || names[24] != "beta/q023" {
		t.Errorf("paged %d items: first %v last %v", len(names), names[0], names[len(names)-1])
	}
}

func TestGetAndErrors(t *testing.T) {
	t.Parallel()
	srv, _ := setup(t, 2)
	var r wire.Resource
	if code := get(t, srv.URL+"/api/v1/resources/beta/QUEUE/q001", &r); code != 200 {
		t.Fatalf("get: %d", code)
	}
	if r.Kind != "Queue" || r.APIVersion != "mq.example.com/v1" || r.Metadata.Generation != 1 || r.Metadata.UID == "" ||
		r.Status.Phase != "Pending" || r.Source.Name != "main" || r.Source.Revision != "abc123" || r.Source.Path != "all.yaml" ||
		r.Metadata.Labels["team"] != "blue" || string(r.Spec) == "" {
		t.Errorf("resource %+v", r)
	}
	// Created: Ready Unknown, and Reconciling True (the first reconcile is pending).
	if len(r.Status.Conditions) != 2 || r.Status.Conditions[0].Type != "Ready" || r.Status.Conditions[0].Status != "Unknown" ||
		r.Status.Conditions[1].Type != "Reconciling" || r.Status.Conditions[1].Status != "True" {
		t.Errorf("conditions %+v", r.Status.Conditions)
	}
	errCases := []struct {
		path string
		code int
	}{
		{"/api/v1/resources/beta/Queue/nope", 404},
		{"/api/v1/resources/beta/Queue/nope/history", 404},
		{"/api/v1/sources/nope", 404},
		{"/api/v1/resourcetypes/nope", 404},
		{"/api/v1/nothing", 404},
		{"/api/v1/resources?limit=0", 400},
		{"/api/v1/resources?limit=5000", 400},
		{"/api/v1/resources?continue=garbage", 400},
		{"/api/v1/resources?labelSelector=%3D%3D", 400},
	}
	for _, tc := range errCases {
		var e map[string]string
		if code := get(t, srv.URL+tc.path, &e); code != tc.code || e["error"] == "" {
			t.Errorf("%s: code %d body %v, want %d with an error", tc.path, code, e, tc.code)
		}
	}
	var types struct{ Items []wire.ResourceType }
	if get(t, srv.URL+"/api/v1/resourcetypes", &types); len(types.Items) != 1 || types.Items[0].Name != "Queue" {
		t.Errorf("types %+v", types)
	}
	var typ wire.ResourceType
	if code := get(t, srv.URL+"/api/v1/resourcetypes/queue", &typ); code != 200 || !strings.Contains(string(typ.Spec), "versions") {
		t.Errorf("type %d %+v", code, typ)
	}
	var srcs struct{ Items []wire.Source }
	if get(t, srv.URL+"/api/v1/sources", &srcs); len(srcs.Items) != 1 || srcs.Items[0].Revision != "abc123" {
		t.Errorf("sources %+v", srcs)
	}
	var evs struct{ Items []wire.Event }
	if get(t, srv.URL+"/api/v1/events", &evs); len(evs.Items) != 2 || evs.Items[0].Reason != "Created" {
		t.Errorf("events %+v", evs)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if code := get(t, srv.URL+p, nil); code != 200 {
			t.Errorf("%s: %d", p, code)
		}
	}
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "q001") || !strings.Contains(string(body), "abc123") {
		t.Errorf("dashboard: %d\n%s", resp.StatusCode, body)
	}
}

func TestReadyzWithoutDatabase(t *testing.T) {
	t.Parallel()
	srv, st := setup(t, 0)
	st.Close()
	var e map[string]string
	if code := get(t, srv.URL+"/readyz", &e); code != 503 {
		t.Errorf("readyz with the database gone: %d %v", code, e)
	}
	if code := get(t, srv.URL+"/healthz", nil); code != 200 {
		t.Errorf("healthz: %d", code)
	}
}

func TestHardening(t *testing.T) {
	t.Parallel()
	srv, st := setup(t, 1)
	for _, tc := range []struct {
		path string
		code int
	}{
		{"/api/v1/resources?kind=%00", 400},
		{"/api/v1/resources?namespace=%ff", 400},
		{"/api/v1/resources/%00/Queue/x", 400},
		{"/resources?q=%ff", 400},
	} {
		var e map[string]string
		if code := get(t, srv.URL+tc.path, &e); code != tc.code || e["error"] == "" {
			t.Errorf("%s: %d %v, want %d with an error", tc.path, code, e, tc.code)
		}
	}
	var e map[string]string
	if code := get(t, srv.URL+"/hooks/anything", &e); code != http.StatusMethodNotAllowed || e["error"] == "" {
		t.Errorf("GET /hooks: %d %v", code, e)
	}

	// Listening on loopback: another Host name (DNS rebinding) is refused, except webhooks.
	h := New(st, Options{Listen: "127.0.0.1:8080", ExternalURL: "https://trueup.example.com/"}, slog.New(slog.DiscardHandler)).Handler()
	for host, want := range map[string]int{"127.0.0.1:8080": 200, "localhost:8080": 200, "trueup.example.com": 200,
		"attacker.example:8080": http.StatusMisdirectedRequest} {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/sources", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %s: %d, want %d", host, rec.Code, want)
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/hooks/x", nil)
	req.Host = "attacker.example"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotFound {
		t.Errorf("webhook through a proxy name: %d, want 404 (no webhooks configured)", rec.Code)
	}
}

func TestPanicAfterHeadersAborts(t *testing.T) {
	t.Parallel()
	s := &Server{log: slog.New(slog.DiscardHandler)}
	h := s.recoverer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]string{"a": "b"})
		panic("boom")
	}))
	defer func() {
		if v := recover(); v != http.ErrAbortHandler {
			t.Errorf("recovered %v, want http.ErrAbortHandler", v)
		}
	}()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
}

// send makes req and returns the answer's status code and body.
func send(t testing.TB, req *http.Request) (int, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
