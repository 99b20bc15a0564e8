package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/auth"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/metrics"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/store/storetest"
	"github.com/trueup-dev/trueup/sources"
)

func TestScopeOf(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		id      auth.Identity
		all     bool
		sees    []string
		seesNot []string
	}{
		{"anonymous admin", anonymousAdmin, true, []string{"staging", "production"}, nil},
		{"viewer of staging", auth.Identity{Role: auth.Viewer, Namespaces: []string{"staging"}}, false, []string{"staging"}, []string{"production", "", "*"}},
		{"operator of two", auth.Identity{Role: auth.Operator, Namespaces: []string{"b", "a"}}, false, []string{"a", "b"}, []string{"c"}},
		{"viewer of every namespace", auth.Identity{Role: auth.Viewer, Namespaces: []string{"*"}}, true, []string{"production"}, nil},
		{"admin of one namespace", auth.Identity{Role: auth.Admin, Namespaces: []string{"staging"}}, false, []string{"staging"}, []string{"production"}},
		{"no namespaces", auth.Identity{Role: auth.Viewer}, false, nil, []string{"staging", ""}},
		{"no role sees nothing", auth.Identity{Namespaces: []string{"*"}}, false, nil, []string{"staging", ""}},
		{"unknown role sees nothing", auth.Identity{Role: "root", Namespaces: []string{"*"}}, false, nil, []string{"staging"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc := scopeOf(c.id)
			if sc.All() != c.all {
				t.Errorf("All() = %v, want %v", sc.All(), c.all)
			}
			for _, ns := range c.sees {
				if !sc.Contains(ns) {
					t.Errorf("does not see %q", ns)
				}
			}
			for _, ns := range c.seesNot {
				if sc.Contains(ns) {
					t.Errorf("sees %q", ns)
				}
			}
		})
	}
}

// identityHeader carries "role:ns1,ns2" to testAuthenticate.
const identityHeader = "X-Test-Identity"

// testAuthenticate stands in for token and session authentication: it reads the identity
// from a header, and a request without one is refused (401).
func testAuthenticate(r *http.Request) (auth.Identity, error) {
	role, nss, ok := strings.Cut(r.Header.Get(identityHeader), ":")
	if !ok {
		return auth.Identity{}, errors.New("no credentials")
	}
	return auth.Identity{Kind: "token", Name: role + "-" + nss, Role: auth.Role(role), Namespaces: strings.Split(nss, ",")}, nil
}

// authzEnv is a database with two sources and a server that authenticates by header:
//
//	source web:     Queue type; staging/stg-a, staging/stg-b, production/prd-a
//	source prodsrc: production/prd-b, production/prd-c
//	source idlesrc: no resources
type authzEnv struct {
	st  *store.Store
	srv *Server
	url string
}

func newAuthzEnv(t *testing.T) *authzEnv {
	t.Helper()
	ctx := context.Background()
	var srcs []store.SourceConfig
	for _, name := range []string{"web", "prodsrc", "idlesrc"} {
		srcs = append(srcs, store.SourceConfig{Name: name, URL: "file:///" + name, Branch: "main"})
	}
	st := storetest.Open(t, store.Options{}, srcs...)
	e := &authzEnv{st: st}
	e.apply(t, "web", "rev1", 1)
	e.apply(t, "prodsrc", "rev1", 1)
	// A sync failure each: events and changes of the sources themselves.
	for _, src := range []string{"web", "prodsrc", "idlesrc"} {
		if err := st.RecordSyncFailure(ctx, store.SyncFailure{Source: src, Reason: "FetchFailed", Message: "fetch of " + src + " failed"}); err != nil {
			t.Fatal(err)
		}
	}
	m := metrics.New(metrics.Options{Logger: slog.New(slog.DiscardHandler)})
	e.srv = New(st, Options{Replica: "test", Metrics: m, Authenticate: testAuthenticate}, slog.New(slog.DiscardHandler))
	e.srv.hub.fallback = time.Minute
	e.srv.hub.heartbeat = 50 * time.Millisecond // moves quiet streams' positions on
	hs := httptest.NewServer(e.srv.Handler())
	t.Cleanup(func() { e.srv.Stop(); hs.Close() })
	e.url = hs.URL
	return e
}

// apply applies revision rev of source with every spec set to size.
func (e *authzEnv) apply(t *testing.T, source, rev string, size int) {
	t.Helper()
	var b strings.Builder
	queue := func(ns, name string) {
		fmt.Fprintf(&b, "---\napiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: %s, namespace: %s}\nspec: {size: %d}\n", name, ns, size)
	}
	switch source {
	case "web":
		b.WriteString(typeDoc)
		queue("staging", "stg-a")
		queue("staging", "stg-b")
		queue("production", "prd-a")
	case "prodsrc":
		queue("production", "prd-b")
		queue("production", "prd-c")
	}
	// Queue is declared by web; prodsrc uses it as a type known from elsewhere.
	types, err := manifest.NewLoader().Load([]sources.File{{Path: "type.yaml", Data: []byte(typeDoc)}}, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	set, err := manifest.NewLoader().Load([]sources.File{{Path: source + ".yaml", Data: []byte(b.String())}}, manifest.Options{KnownTypes: types.Types})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.ApplyRevision(context.Background(), store.ApplyParams{Source: source, Revision: rev, Set: set, Prune: true}); err != nil {
		t.Fatal(err)
	}
	if e.srv != nil {
		e.srv.NotifyChanges()
	}
}

// get answers path for the identity ("" sends none).
func (e *authzEnv) get(t *testing.T, who, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if who != "" {
		req.Header.Set(identityHeader, who)
	}
	code, body := send(t, req)
	return code, string(body)
}

const stagingViewer = "viewer:staging"

// hidden are the names a viewer of staging must never meet.
var hidden = []string{"production", "prd-", "prodsrc", "idlesrc"}

func leaks(body string) []string {
	var out []string
	for _, h := range hidden {
		if strings.Contains(body, h) {
			out = append(out, h)
		}
	}
	return out
}

func TestAuthorizationAPI(t *testing.T) {
	t.Parallel()
	e := newAuthzEnv(t)

	// Every list, count and feed of a viewer of staging: only staging, and web (which has
	// resources in staging), counted over staging alone.
	for _, c := range []struct {
		path string
		want []string // substrings the answer must contain
	}{
		{"/api/v1/resources", []string{"stg-a", "stg-b"}},
		{"/api/v1/resources?namespace=production", []string{`"items":[]`}},
		{"/api/v1/resources?source=prodsrc", []string{`"items":[]`}},
		{"/api/v1/resources?kind=queue&labelSelector=", []string{"stg-a"}},
		{"/api/v1/events", []string{"stg-a", "fetch of web failed"}},
		{"/api/v1/events?source=prodsrc", []string{`"items":[]`}},
		{"/api/v1/events?namespace=production", []string{`"items":[]`}},
		{"/api/v1/sources", []string{`"name":"web"`}},
		{"/api/v1/sources/web", []string{`"name":"web"`}},
		{"/api/v1/sources/web?counts=true", []string{`"resources":{"total":2,`}}, // staging's two of web's three
		{"/api/v1/resourcetypes", []string{"Queue"}},
		{"/api/v1/resourcetypes/queue", []string{"Queue"}},
		{"/api/v1/resources/staging/Queue/stg-a", []string{"stg-a"}},
		{"/api/v1/resources/staging/Queue/stg-a/events", []string{"Created"}},
		{"/api/v1/resources/production/Queue/prd-a/events", []string{`"items":[]`}},
	} {
		e.viewerSees(t, c.path, c.want...)
	}

	// Paging stays within the scope: one item a page, two pages.
	var names []string
	next := ""
	for range 4 {
		var p page
		_, body := e.get(t, stagingViewer, "/api/v1/resources?limit=1&continue="+url.QueryEscape(next))
		if err := json.Unmarshal([]byte(body), &p); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		for _, it := range p.Items {
			names = append(names, it.Metadata.Name)
		}
		if next = p.Continue; next == "" {
			break
		}
	}
	if !slices.Equal(names, []string{"stg-a", "stg-b"}) {
		t.Errorf("paged %v", names)
	}

	// Out of scope is missing: the same status and message as a name that does not exist.
	for _, c := range []struct{ hidden, missing string }{
		{"/api/v1/resources/production/Queue/prd-a", "/api/v1/resources/production/Queue/nope-a"},
		{"/api/v1/resources/production/Queue/prd-a/history", "/api/v1/resources/production/Queue/nope-a/history"},
		{"/api/v1/resources/production/Queue/prd-a/events", "/api/v1/resources/production/Queue/nope-a/events"},
		{"/api/v1/sources/prodsrc", "/api/v1/sources/nopesrc"},
		{"/api/v1/sources/idlesrc", "/api/v1/sources/nopesrc"},
	} {
		if code := e.sameAsMissing(t, c.hidden, c.missing); !strings.HasSuffix(c.hidden, "/events") && code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", c.hidden, code)
		}
	}
	// Admins of every namespace see it all.
	for _, p := range []string{"/api/v1/resources/production/Queue/prd-a", "/api/v1/sources/prodsrc", "/api/v1/sources/idlesrc"} {
		if code, body := e.get(t, "admin:*", p); code != http.StatusOK {
			t.Errorf("admin %s: %d %s", p, code, body)
		}
	}
	if code, body := e.get(t, "admin:*", "/api/v1/sources/web?counts=true"); code != 200 || !strings.Contains(body, `"resources":{"total":3,`) {
		t.Errorf("admin: web's counts: %d %s", code, body)
	}
	if code, body := e.get(t, "viewer:*", "/api/v1/resources"); code != 200 || !strings.Contains(body, "prd-c") || !strings.Contains(body, "stg-a") {
		t.Errorf("viewer of every namespace: %d %s", code, body)
	}

	// Replicas and metrics: admins over every namespace only; 403 for the rest (it names no
	// resource), 401 without credentials.
	for who, want := range map[string]int{stagingViewer: 403, "operator:staging": 403, "operator:*": 403, "admin:staging": 403, "admin:*": 200, "": 401} {
		for _, p := range []string{"/api/v1/replicas", "/metrics"} {
			if code, body := e.get(t, who, p); code != want {
				t.Errorf("%q %s: %d %s, want %d", who, p, code, body, want)
			}
		}
	}
	// Health probes need no credentials.
	if code, _ := e.get(t, "", "/healthz"); code != 200 {
		t.Errorf("healthz without credentials: %d", code)
	}
}

func TestAuthorizationDashboard(t *testing.T) {
	t.Parallel()
	e := newAuthzEnv(t)
	for _, c := range []struct {
		path string
		want []string
	}{
		// The overview's numbers: 2 resources (not 5), web with 2; no replicas section.
		{"/", []string{"stg-a", "2 in all", "source web", ">2 resources<"}},
		{"/resources", []string{"stg-a", "stg-b", `value="staging"`}},
		{"/resources?q=stg-b", []string{"stg-b"}},
		{"/resources?q=prd", []string{}},
		{"/resources/staging/Queue/stg-a", []string{"stg-a", "Created"}},
		{"/sources", []string{"web", ">2 resources<"}},
		{"/sources/web", []string{"web", ">2 resources<", "fetch of web failed"}},
	} {
		if body := e.viewerSees(t, c.path, c.want...); strings.Contains(body, `id="replicas"`) {
			t.Errorf("%s shows the replicas to a viewer", c.path)
		}
	}
	if _, body := e.get(t, stagingViewer, "/resources?q=stg-b"); strings.Contains(body, "stg-a") {
		t.Errorf("search for stg-b shows stg-a")
	}
	// Pages of what is out of scope are the pages of what does not exist.
	for _, c := range []struct{ hidden, missing string }{
		{"/resources/production/Queue/prd-a", "/resources/production/Queue/nope-a"},
		{"/sources/prodsrc", "/sources/nopesrc"},
	} {
		if code := e.sameAsMissing(t, c.hidden, c.missing); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", c.hidden, code)
		}
	}
	// An admin of every namespace sees everything, replicas included.
	_, body := e.get(t, "admin:*", "/")
	for _, w := range []string{"5 in all", "prodsrc", "idlesrc", `id="replicas"`} {
		if !strings.Contains(body, w) {
			t.Errorf("admin overview: no %q", w)
		}
	}
}

// viewerSees gets path as a viewer of staging and checks that the answer is 200, contains
// every string of want and names nothing out of the viewer's scope.
func (e *authzEnv) viewerSees(t *testing.T, path string, want ...string) string {
	t.Helper()
	code, body := e.get(t, stagingViewer, path)
	if code != http.StatusOK {
		t.Errorf("%s: %d %s", path, code, body)
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("%s: no %q in\n%s", path, w, body)
		}
	}
	if l := leaks(body); l != nil {
		t.Errorf("%s shows %v to a viewer of staging:\n%s", path, l, body)
	}
	return body
}

// sameAsMissing checks that a viewer of staging gets for hidden (out of its scope) what it
// gets for missing (a name that does not exist), once the names are swapped, and returns
// the status.
func (e *authzEnv) sameAsMissing(t *testing.T, hidden, missing string) int {
	t.Helper()
	hc, hb := e.get(t, stagingViewer, hidden)
	mc, mb := e.get(t, stagingViewer, missing)
	hb = strings.NewReplacer("prd-a", "nope-a", "prodsrc", "nopesrc", "idlesrc", "nopesrc").Replace(hb)
	if hc != mc || stripTimes(hb) != stripTimes(mb) {
		t.Errorf("%s: %d, %s: %d; the answers differ:\n%s\n%s", hidden, hc, missing, mc, hb, mb)
	}
	return hc
}

// stripTimes removes what differs between two renderings of one page (the clock).
func stripTimes(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if !strings.Contains(line, "datetime=") && !strings.Contains(line, "UTC") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

func TestAuthorizationWatch(t *testing.T) {
	t.Parallel()
	e := newAuthzEnv(t)
	we := &watchEnv{st: e.st, srv: e.srv, url: e.url}
	viewer := http.Header{identityHeader: {stagingViewer}}
	start := we.latest(t)

	// Live: a revision of each source and a failure of each; the viewer of staging gets the
	// changes of staging's resources and of source web, nothing else.
	c := we.watch(t, "", viewer)
	admin := we.watch(t, "", http.Header{identityHeader: {"admin:*"}})
	e.apply(t, "web", "rev2", 2)
	e.apply(t, "prodsrc", "rev2", 2)
	for _, src := range []string{"prodsrc", "web", "idlesrc"} {
		we.failSync(t, src)
	}
	end := we.latest(t)
	all := we.feed(t, start)
	var want []store.Change
	for _, ch := range all {
		if ch.Namespace == "staging" || (ch.Object == "source" && ch.Source == "web") {
			want = append(want, ch)
		}
	}
	if len(want) < 4 || len(all) <= len(want) { // stg-a, stg-b, web's revision and failure at least
		t.Fatalf("the test's feed %+v", all)
	}
	got := c.changes(t, len(want), 10*time.Second)
	sameIDs(t, "viewer's stream", got, want)
	c.quietUntil(t, end, 20*time.Second) // heartbeats move it on; no event of the rest
	sameIDs(t, "admin's stream", admin.changes(t, len(all), 10*time.Second), all)

	// Resumption with Last-Event-ID and with ?since=: only what is in scope, from there on.
	mid := we.latest(t)
	e.apply(t, "prodsrc", "rev3", 3)
	e.apply(t, "web", "rev3", 3)
	we.failSync(t, "prodsrc")
	end = we.latest(t)
	var after []store.Change
	for _, ch := range we.feed(t, mid) {
		if ch.Namespace == "staging" || (ch.Object == "source" && ch.Source == "web") {
			after = append(after, ch)
		}
	}
	for _, how := range []struct {
		query  string
		header http.Header
	}{
		{"", http.Header{identityHeader: {stagingViewer}, "Last-Event-ID": {fmt.Sprint(mid)}}},
		{"since=" + fmt.Sprint(mid), viewer},
	} {
		r := we.watch(t, how.query, how.header)
		sameIDs(t, "resumed "+how.query, r.changes(t, len(after), 10*time.Second), after)
		r.quietUntil(t, end, 20*time.Second)
	}
	// And from the start: the whole history of the feed, in scope.
	var fromStart []store.Change
	for _, ch := range we.feed(t, 0) {
		if ch.Namespace == "staging" || (ch.Object == "source" && ch.Source == "web") {
			fromStart = append(fromStart, ch)
		}
	}
	r := we.watch(t, "since=0", viewer)
	sameIDs(t, "resumed from 0", r.changes(t, len(fromStart), 10*time.Second), fromStart)
	r.quietUntil(t, end, 20*time.Second)

	// Without credentials: 401, no stream.
	if code, _ := e.get(t, "", "/api/v1/watch"); code != http.StatusUnauthorized {
		t.Errorf("watch without credentials: %d", code)
	}
}

func TestAuthorizationNothingVisible(t *testing.T) {
	t.Parallel()
	e := newAuthzEnv(t)
	// A viewer of a namespace without resources sees no source, no event and no number.
	code, body := e.get(t, "viewer:empty-ns", "/")
	if code != 200 || !strings.Contains(body, "No source declares resources in your namespaces") || !strings.Contains(body, "0 in all") {
		t.Errorf("overview: %d\n%s", code, body)
	}
	for _, p := range []string{"/", "/resources", "/sources", "/api/v1/resources", "/api/v1/events", "/api/v1/sources"} {
		_, body := e.get(t, "viewer:empty-ns", p)
		if strings.Contains(body, "stg-") || strings.Contains(body, "web") || leaks(body) != nil {
			t.Errorf("%s shows something to a viewer of an empty namespace:\n%s", p, body)
		}
	}
}

// TestWatchScope follows one scoped watcher through a sequence of changes: a source comes
// into view with the first resource in scope that names it.
func TestWatchScope(t *testing.T) {
	t.Parallel()
	f := changeFilter{visible: newWatchScope(store.InNamespaces("staging"), []string{"web"})}
	res := func(ns, src string) store.Change {
		return store.Change{Object: "resource", Namespace: ns, Kind: "Queue", Name: "q", Source: src}
	}
	srcChange := func(name string) store.Change { return store.Change{Object: "source", Name: name, Source: name} }
	steps := []struct {
		what   string
		change store.Change
		sees   bool
	}{
		{"a resource in scope", res("staging", "web"), true},
		{"a resource out of scope", res("production", "web"), false},
		{"a visible source", srcChange("web"), true},
		{"a source out of scope", srcChange("prodsrc"), false},
		{"a resource out of scope of that source", res("production", "prodsrc"), false},
		{"still out of scope", srcChange("prodsrc"), false},
		{"its first resource in scope", res("staging", "prodsrc"), true},
		{"now in view", srcChange("prodsrc"), true},
		{"a namespace that only shares a prefix", res("staging-2", "web"), false},
		{"a source never seen", srcChange("idlesrc"), false},
	}
	for _, s := range steps {
		if got := f.match(s.change); got != s.sees {
			t.Errorf("%s: match %v, want %v", s.what, got, s.sees)
		}
	}
	// Other filters combine with the scope; the scope still learns from what they drop.
	g := changeFilter{kind: "Other", visible: newWatchScope(store.InNamespaces("staging"), nil)}
	if g.match(res("staging", "apps")) || g.match(srcChange("apps")) {
		t.Error("kind=Other matched a Queue or a source")
	}
	if h := (changeFilter{source: "apps", visible: g.visible}); !h.match(srcChange("apps")) {
		t.Error("source apps, seen through a filtered-out change, is not in view")
	}
}

// A bulk creation reaches a scoped watcher as a reset only in the namespaces it sees, and
// brings the source into view as its resources' changes would: the source's own change of the
// same transaction, and its later ones, follow. A watcher of another namespace hears nothing.
func TestAuthorizationWatchBulkCreation(t *testing.T) {
	t.Parallel()
	e := newAuthzEnv(t)
	ctx := context.Background()
	if err := e.st.RegisterSource(ctx, store.SourceConfig{Name: "bulk", URL: "file:///bulk", Branch: "main"}); err != nil {
		t.Fatal(err)
	}
	we := &watchEnv{st: e.st, srv: e.srv, url: e.url}
	start := we.latest(t)
	staging := we.watch(t, "", http.Header{identityHeader: {stagingViewer}})
	production := we.watch(t, "", http.Header{identityHeader: {"viewer:production"}})

	types, err := manifest.NewLoader().Load([]sources.File{{Path: "type.yaml", Data: []byte(typeDoc)}}, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var doc strings.Builder
	for i := range 3 {
		fmt.Fprintf(&doc, "---\napiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: blk-%d, namespace: staging}\nspec: {size: 1}\n", i)
	}
	set, err := manifest.NewLoader().Load([]sources.File{{Path: "bulk.yaml", Data: []byte(doc.String())}}, manifest.Options{KnownTypes: types.Types})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.ApplyRevision(ctx, store.ApplyParams{Source: "bulk", Revision: "b1", Set: set, Prune: true, BulkCreate: 2}); err != nil {
		t.Fatal(err)
	}
	e.srv.NotifyChanges()
	we.failSync(t, "bulk") // a later change of the source
	end := we.latest(t)
	var want []store.Change
	for _, ch := range we.feed(t, start) {
		if ch.Source == "bulk" {
			want = append(want, ch)
		}
	}
	if len(want) < 3 || want[0].Type != store.ChangeRelist || want[0].Namespace != "staging" {
		t.Fatalf("the feed of source bulk: %+v", want)
	}
	for i, ch := range want {
		b := staging.next(t, 10*time.Second, true)
		if b.ID != ch.ID || (i == 0) != (b.Event == "reset") {
			t.Errorf("staging viewer's event %d: %+v, want %+v", i, b, ch)
		}
	}
	staging.quietUntil(t, end, 20*time.Second)
	production.quietUntil(t, end, 20*time.Second)
}

// TestWatchScopeBulk: a RELIST change is seen by a scoped watcher in its namespace only, and
// brings its source into view there.
func TestWatchScopeBulk(t *testing.T) {
	t.Parallel()
	srcChange := store.Change{Object: "source", Type: store.ChangeModified, Name: "new", Source: "new"}
	added := store.Change{Object: "resource", Type: store.ChangeAdded, Namespace: "staging", Kind: "Queue", Name: "q", Source: "new"}
	relist := store.Change{Object: "source", Type: store.ChangeRelist, Namespace: "staging", Name: "new", Source: "new"}
	each := changeFilter{visible: newWatchScope(store.InNamespaces("staging"), nil)}
	if !each.match(added) || !each.match(srcChange) {
		t.Fatal("one by one: the source's change is not seen")
	}
	bulk := changeFilter{visible: newWatchScope(store.InNamespaces("staging"), nil)}
	if !bulk.match(relist) {
		t.Fatal("bulk: no reset")
	}
	if !bulk.match(srcChange) {
		t.Error("bulk: the source's own change (same transaction) is dropped")
	}
	other := changeFilter{visible: newWatchScope(store.InNamespaces("production"), nil)}
	if other.match(relist) || other.match(srcChange) {
		t.Error("a production-only watcher gets a bulk reset, or the source, for a source with nothing in production")
	}
	for _, f := range []changeFilter{{namespace: "production"}, {source: "old"}} {
		if f.match(relist) {
			t.Errorf("%+v matches a reset for namespace staging of source new", f)
		}
	}
	for _, f := range []changeFilter{{namespace: "staging"}, {source: "new"}, {kind: "Other"}} {
		if !f.match(relist) {
			t.Errorf("%+v does not match a reset for namespace staging of source new", f)
		}
	}
}
