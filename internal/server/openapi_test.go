package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/trueup-dev/trueup/internal/metrics"
	"github.com/trueup-dev/trueup/internal/policy"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// catchAlls are the method-less patterns of routes(): fallbacks, not endpoints.
var catchAlls = map[string]string{"/api/": "a JSON 404 for unknown API paths", "/hooks/{source}": "a JSON 405 for webhooks not sent with POST"}

// undocumented are routes the API document leaves out on purpose: the dashboard's
// confirmation pages and the forms they post (HTML for people, not an API).
var undocumented = map[string]bool{
	// The dashboard's confirmation pages and their forms.
	"GET /resources/{namespace}/{kind}/{name}/confirm/{action}": true,
	"POST /resources/{namespace}/{kind}/{name}/{action}":        true,
	"GET /sources/{name}/confirm/{action}":                      true,
	"POST /sources/{name}/{action}":                             true,
}

// routePatterns reads every pattern the package registers with Handle or HandleFunc from its
// source, so that no route can be added without this test seeing it.
func routePatterns(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "Handle" && sel.Sel.Name != "HandleFunc") || len(call.Args) != 2 {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				t.Errorf("%s: route pattern is not a string literal; this test cannot see it", fset.Position(call.Pos()))
				return true
			}
			p, _ := strconv.Unquote(lit.Value)
			seen[p] = true
			return true
		})
	}
	if len(seen) < 10 {
		t.Fatalf("found only %d routes: %v", len(seen), seen)
	}
	return slices.Sorted(maps.Keys(seen))
}

// operation turns a ServeMux pattern into "METHOD /openapi/path", or "" for a catch-all.
func operation(pattern string) string {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		return ""
	}
	path = strings.TrimSuffix(path, "{$}")
	path = strings.ReplaceAll(path, "...}", "}")
	return method + " " + path
}

type apiDoc struct {
	raw map[string]any
	c   *jsonschema.Compiler

	mu       sync.Mutex
	compiled map[string]*jsonschema.Schema
}

const docURL = "trueup:///openapi.json"

func loadDoc(t *testing.T) *apiDoc {
	t.Helper()
	d := &apiDoc{compiled: map[string]*jsonschema.Schema{}}
	if err := json.Unmarshal(openapiDoc, &d.raw); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	d.c = jsonschema.NewCompiler()
	d.c.Draft = jsonschema.Draft2020 // OpenAPI 3.1 schemas are JSON Schema 2020-12
	d.c.AssertFormat = true
	d.c.LoadURL = func(u string) (io.ReadCloser, error) { return nil, fmt.Errorf("no remote references: %s", u) }
	if err := d.c.AddResource(docURL, bytes.NewReader(openapiDoc)); err != nil {
		t.Fatal(err)
	}
	return d
}

// at returns the value at a JSON pointer, or nil.
func (d *apiDoc) at(ptr string) any {
	var v any = d.raw
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)]
	}
	return v
}

func esc(s string) string { return strings.NewReplacer("~", "~0", "/", "~1").Replace(s) }

// schema compiles the schema at ptr, resolving its references inside the whole document.
func (d *apiDoc) schema(t *testing.T, ptr string) *jsonschema.Schema {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.compiled[ptr]; ok {
		return s
	}
	s, err := d.c.Compile(docURL + "#" + ptr)
	if err != nil {
		t.Fatalf("compile %s: %v", ptr, err)
	}
	d.compiled[ptr] = s
	return s
}

// response returns the JSON pointer of an operation's documented response, following a $ref.
func (d *apiDoc) response(method, path string, code int) (string, bool) {
	ptr := "/paths/" + esc(path) + "/" + strings.ToLower(method) + "/responses/" + strconv.Itoa(code)
	r, ok := d.at(ptr).(map[string]any)
	if !ok {
		return "", false
	}
	if ref, ok := r["$ref"].(string); ok {
		ptr = strings.TrimPrefix(ref, "#")
		_, ok = d.at(ptr).(map[string]any)
		return ptr, ok
	}
	return ptr, true
}

// template returns the documented path that path matches, preferring literal segments.
func (d *apiDoc) template(path string) string {
	best, bestLit := "", -1
	segs := strings.Split(path, "/")
	for tmpl := range d.raw["paths"].(map[string]any) {
		ts := strings.Split(tmpl, "/")
		if len(ts) != len(segs) {
			continue
		}
		lit := 0
		for i, s := range ts {
			switch {
			case strings.HasPrefix(s, "{") && segs[i] != "":
			case s == segs[i]:
				lit++
			default:
				lit = -1
			}
			if lit < 0 {
				break
			}
		}
		if lit > bestLit {
			best, bestLit = tmpl, lit
		}
	}
	return best
}

func (d *apiDoc) operations() []string {
	var out []string
	for path, item := range d.raw["paths"].(map[string]any) {
		for method := range item.(map[string]any) {
			switch method {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
				out = append(out, strings.ToUpper(method)+" "+path)
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	t.Parallel()
	d := loadDoc(t)
	if v, _ := d.raw["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		t.Errorf("openapi %q, want 3.1.x", v)
	}
	routes := map[string]bool{}
	for _, p := range routePatterns(t) {
		op := operation(p)
		if op == "" {
			if catchAlls[p] == "" {
				t.Errorf("pattern %q has no method: name it in catchAlls if it is a fallback, else give it a method", p)
			}
			continue
		}
		routes[op] = true
	}
	documented := map[string]bool{}
	for _, op := range d.operations() {
		documented[op] = true
		if !routes[op] {
			t.Errorf("openapi.json documents %s, which routes() does not serve", op)
		}
	}
	for op := range routes {
		if !documented[op] && !undocumented[op] {
			t.Errorf("routes() serves %s, which openapi.json does not document", op)
		}
	}
}

// TestOpenAPISchemasAreStrict checks the document itself: every reference resolves, every
// component compiles, and every object that lists properties forbids others and says which are
// required, so that a field added, renamed or dropped in a handler fails the answers' check.
func TestOpenAPISchemasAreStrict(t *testing.T) {
	t.Parallel()
	d := loadDoc(t)
	var walk func(ptr string, v any)
	walk = func(ptr string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok && (!strings.HasPrefix(ref, "#/") || d.at(ref[1:]) == nil) {
				t.Errorf("%s: dangling $ref %s", ptr, ref)
			}
			for k, x := range v {
				walk(ptr+"/"+esc(k), x)
			}
		case []any:
			for i, x := range v {
				walk(ptr+"/"+strconv.Itoa(i), x)
			}
		}
	}
	walk("", d.raw)

	schemas := d.at("/components/schemas").(map[string]any)
	for _, name := range []string{"Resource", "ResourceStatus", "Condition", "Source", "SourceError", "ResourceType",
		"HistoryEntry", "Event", "Replica", "Change", "Error", "ResourceList", "SourceList", "ResourceTypeList",
		"HistoryList", "EventList", "ReplicaList"} {
		if schemas[name] == nil {
			t.Errorf("components.schemas.%s is missing", name)
		}
	}
	for name, s := range schemas {
		d.schema(t, "/components/schemas/"+esc(name))
		var check func(ptr string, s map[string]any)
		check = func(ptr string, s map[string]any) {
			if props, ok := s["properties"].(map[string]any); ok {
				if s["additionalProperties"] != false {
					t.Errorf("%s: additionalProperties must be false", ptr)
				}
				req, ok := s["required"].([]any)
				if !ok {
					t.Errorf("%s: no required list", ptr)
				}
				for _, r := range req {
					if props[r.(string)] == nil {
						t.Errorf("%s: required %v is not a property", ptr, r)
					}
				}
				for k, p := range props {
					if pm, ok := p.(map[string]any); ok {
						check(ptr+"/properties/"+k, pm)
					}
				}
			}
		}
		check(name, s.(map[string]any))
	}

	// The schemas catch drift: an unknown field, a missing one, a wrong type.
	res := d.schema(t, "/components/schemas/Resource")
	good := `{"apiVersion":"v1","kind":"Queue","metadata":{"name":"a","namespace":"b","uid":"6f1c1d9e-1c1a-4f5e-9a57-0e8f2a7f0a11","generation":1,
		"labels":{},"annotations":{},"creationTimestamp":"2024-01-01T00:00:00Z","deletionTimestamp":null},"spec":{},
		"status":{"phase":"Ready","observedGeneration":1,"conditions":[],"message":"","outputs":{},"lastReconcileTime":null},
		"source":{"name":"main","path":"a.yaml","revision":"abc"}}`
	if err := validateJSON(res, []byte(good)); err != nil {
		t.Fatalf("a valid resource: %v", err)
	}
	for _, bad := range []struct{ from, to string }{
		{`"kind":"Queue",`, `"kind":"Queue","extra":1,`},
		{`"message":"",`, ``},
		{`"generation":1`, `"generation":"1"`},
		{`"phase":"Ready"`, `"phase":"Done"`},
		{`"deletionTimestamp":null`, `"deletionTimestamp":"yesterday"`},
	} {
		doc := strings.Replace(good, bad.from, bad.to, 1)
		if validateJSON(res, []byte(doc)) == nil {
			t.Errorf("Resource schema accepts %s instead of %s", bad.to, bad.from)
		}
	}
}

func validateJSON(s *jsonschema.Schema, body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	return s.Validate(v)
}

// apiCall is one request and the status it must get.
type apiCall struct {
	method, path string
	code         int
}

// TestOpenAPIMatchesAnswers calls every endpoint on a database seeded with resources in every
// state worth describing, and validates each answer against the document.
func TestOpenAPIMatchesAnswers(t *testing.T) {
	t.Parallel()
	d := loadDoc(t)
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	_, st := setup(t, 4)
	srv := New(st, Options{Replica: "test", Metrics: metrics.New(metrics.Options{Logger: logger})}, logger)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Stop(); hs.Close() })
	e := &watchEnv{st: st, srv: srv, url: hs.URL, n: 4}

	// q000 Ready with outputs and history; q001 being deleted; q002 and q003 deleted (their
	// history stays); the source's last sync failed with errors; two replicas, one with a lease.
	e.reconcile(t)
	shrink := func(keep int) {
		if _, err := st.ApplyRevision(ctx, store.ApplyParams{Source: "main", Revision: fmt.Sprintf("keep%d", keep),
			Set: manifests(t, 4, 0, func(i int) bool { return i < keep }), Prune: true}); err != nil {
			t.Fatal(err)
		}
	}
	shrink(2)
	e.reconcile(t)
	shrink(1)
	if err := st.RecordSyncFailure(ctx, store.SyncFailure{Source: "main", Revision: "bad", Reason: "ValidationFailed", Message: "2 errors",
		Errors: []store.SourceError{{File: "all.yaml", Line: 3, Path: "spec.size", Message: "must be an integer", Origin: "tenant=a"}, {Message: "no file"}}}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []store.Replica{{Name: "test", Hostname: "h1", PID: 1, Version: "dev", Listen: ":8080"}, {Name: "idle", Hostname: "h2", PID: 2}} {
		if err := st.Heartbeat(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := st.AcquireLease(ctx, "source:main", "test", time.Minute); err != nil || !ok {
		t.Fatalf("lease: %v %v", ok, err)
	}
	// The notifications outbox: the rejected revision's entry is dead, the deletions pending.
	if due, err := st.DueOutbox(ctx, 100); err != nil || len(due) == 0 {
		t.Fatalf("outbox: %v, %v", due, err)
	} else if err := st.FinishOutbox(ctx, []store.OutboxResult{{ID: due[len(due)-1].ID, State: store.OutboxDead, Attempts: 5,
		Done: []string{"all/hook"}, Error: "all/ops: provider answered 500: no"}}); err != nil {
		t.Fatal(err)
	}

	// q000 depends on q001 (through a reference) and on a Secret that does not exist.
	if _, err := st.Pool().Exec(ctx, `INSERT INTO resource_edges (resource_id, dep_namespace, dep_kind, dep_name, explicit, outputs)
		SELECT id, 'beta', 'queue', 'q001', false, '{endpoint}'::text[] FROM resources WHERE name = 'q000'
		UNION ALL SELECT id, 'alpha', 'Secret', 'creds', true, '{}'::text[] FROM resources WHERE name = 'q000'`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `UPDATE resources SET resolved_spec = '{"size": 0, "url": "q001:5432"}' WHERE name = 'q000'`); err != nil {
		t.Fatal(err)
	}
	// The type's drift policy (spec.drift), as ingest stores it.
	if _, err := st.Pool().Exec(ctx, `UPDATE resource_types SET drift = '{"mode": "detect", "ignore": ["/tags"]}'`); err != nil {
		t.Fatal(err)
	}

	// A ResourceSet of main in alpha; q000 is its member (the label ingest gives what it
	// generates).
	if _, err := st.Pool().Exec(ctx, `INSERT INTO resource_sets (namespace, name, source, file_path, file_line, revision, inputs, members)
		VALUES ('alpha', 'queues', 'main', 'sets.yaml', 3, 'keep1', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `UPDATE resources SET labels = labels || '{"trueup.dev/resource-set": "queues"}' WHERE name = 'q000'`); err != nil {
		t.Fatal(err)
	}

	// Previews of main: #7 with a result, #8 pending without one.
	result, err := json.Marshal(previewResult())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []store.Preview{
		{Source: "main", Number: 7, Provider: "github", Title: "bigger", URL: "https://github.com/acme/main/pull/7",
			HeadSHA: "7777777777777777777777777777777777777777", BaseRevision: "keep1", State: store.PreviewSucceeded, Result: result},
		{Source: "main", Number: 8, Provider: "gitlab", HeadSHA: "8888888888888888888888888888888888888888", State: store.PreviewPending},
	} {
		if _, err := st.SavePreview(ctx, p); err != nil {
			t.Fatal(err)
		}
	}

	// q000 waits for an approval, with a vote.
	gate(t, st, "alpha", "q000")
	if _, err := st.Vote(ctx, store.VoteParams{Namespace: "alpha", Kind: "Queue", Name: "q000",
		Vote: store.Vote{Actor: "token:dba", Approver: policy.Approver{Token: "dba"}, Reason: "no"}}); err != nil {
		t.Fatal(err)
	}

	// main is pinned at a revision of its history.
	if _, err := st.Pool().Exec(ctx, `INSERT INTO source_revisions (source, revision) VALUES ('main', $1)`, strings.Repeat("7", 40)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PinSource(ctx, "main", strings.Repeat("7", 40), "token:ops", "incident 7"); err != nil {
		t.Fatal(err)
	}

	var page struct{ Continue string }
	get(t, hs.URL+"/api/v1/resources?limit=1", &page)
	res := "/api/v1/resources/alpha/Queue/q000"
	calls := []apiCall{
		{"GET", "/healthz", 200},
		{"GET", "/readyz", 200},
		{"GET", "/metrics", 200},
		{"GET", "/api/v1/sources", 200},
		{"GET", "/api/v1/sources/main", 200},
		{"GET", "/api/v1/sources/nope", 404},
		{"GET", "/api/v1/sources/main/previews", 200},
		{"GET", "/api/v1/sources/main/previews?limit=1", 200},
		{"GET", "/api/v1/sources/main/previews?limit=0", 400},
		{"GET", "/api/v1/sources/nope/previews", 404},
		{"GET", "/api/v1/sources/main/previews/7", 200},
		{"GET", "/api/v1/sources/main/previews/8", 200},
		{"GET", "/api/v1/sources/main/previews/9", 404},
		{"GET", "/api/v1/sources/main/previews/x", 400},
		{"GET", "/api/v1/sources/main/revisions?limit=2", 200},
		{"GET", "/api/v1/sources/main/revisions?limit=0", 400},
		{"GET", "/api/v1/sources/nope/revisions", 404},
		{"POST", "/api/v1/sources/main/pin", 400}, // no revision, no reason
		{"GET", "/api/v1/resourcetypes", 200},
		{"GET", "/api/v1/resourcetypes/QUEUE", 200},
		{"GET", "/api/v1/resourcetypes/nope", 404},
		{"GET", "/api/v1/resources", 200},
		{"GET", "/api/v1/resources?limit=1", 200},
		{"GET", "/api/v1/resources?limit=1&continue=" + page.Continue, 200},
		{"GET", "/api/v1/resources?kind=queue&namespace=alpha&source=main&phase=Ready&labelSelector=team%3Dred", 200},
		{"GET", "/api/v1/resources?limit=0", 400},
		{"GET", "/api/v1/resources?continue=garbage", 400},
		{"GET", "/api/v1/resources?labelSelector=%3D%3D", 400},
		{"GET", res, 200},
		{"GET", "/api/v1/resources/beta/queue/q001", 200},
		{"GET", "/api/v1/resources/alpha/Queue/q002", 404},
		{"GET", res + "/history", 200},
		{"GET", "/api/v1/resources/alpha/Queue/q002/history?limit=5", 200},
		{"GET", "/api/v1/resources/alpha/Queue/nope/history", 404},
		{"GET", res + "/timeline", 200},
		{"GET", "/api/v1/resources/alpha/Queue/nope/timeline?limit=5", 404},
		{"GET", res + "/events", 200},
		{"GET", "/api/v1/resourcesets", 200},
		{"GET", "/api/v1/resourcesets?namespace=alpha&source=main", 200},
		{"GET", "/api/v1/resourcesets/alpha/queues", 200},
		{"GET", "/api/v1/resourcesets/alpha/nope", 404},
		{"GET", "/api/v1/events", 200},
		{"GET", "/api/v1/events?source=main&kind=queue&limit=5", 200},
		{"GET", "/api/v1/graph", 200},
		{"GET", "/api/v1/graph?source=main", 200},
		{"GET", "/api/v1/graph?namespace=beta", 200},
		{"GET", "/api/v1/graph?resource=queue/beta/q001&depth=1", 200},
		{"GET", "/api/v1/graph?source=nope", 404},
		{"GET", "/api/v1/graph?resource=Queue/alpha/nope", 404},
		{"GET", "/api/v1/graph?resource=Queue/q000", 400},
		{"GET", "/api/v1/graph?depth=2", 400},
		{"GET", "/api/v1/replicas", 200},
		{"GET", "/api/v1/notifications", 200},
		{"GET", "/api/v1/notifications?state=dead&limit=5", 200},
		{"GET", "/api/v1/notifications?state=gone", 400},
		{"GET", "/api/v1/notifications?limit=0", 400},
		{"GET", "/api/v1/watch?since=x", 400},
		{"GET", "/api/v1/openapi.json", 200},
		{"GET", "/api/v1/approvals", 200},
		{"GET", "/api/v1/approvals?namespace=alpha&state=pending", 200},
		{"GET", "/api/v1/approvals?state=gone", 400},
		{"POST", res + "/approve", 403}, // anonymous: neither a token nor a user
		{"POST", "/api/v1/resources/beta/queue/q001/reject", 409},
		{"POST", "/api/v1/resources/alpha/queue/nope/reject", 404},
		{"POST", "/hooks/main", 404}, // no webhook handler here; internal/webhook tests its answers
		{"GET", "/", 200},
		{"GET", "/resources", 200},
		{"GET", "/resources?phase=Ready&kind=Queue", 200},
		{"GET", "/resources?label=%3D%3D", 400},
		{"GET", "/resources/alpha/Queue/q000", 200},
		{"GET", "/resources/alpha/Queue/nope", 404},
		{"GET", "/sources", 200},
		{"GET", "/sources/main", 200},
		{"GET", "/sources/nope", 404},
		{"GET", "/resourcesets/alpha/queues", 200},
		{"GET", "/resourcesets/alpha/nope", 404},
		{"GET", "/sources/main/previews/7", 200},
		{"GET", "/sources/main/previews/8", 200},
		{"GET", "/sources/main/previews/9", 404},
		{"GET", "/sources/main/previews/x", 400},
		{"GET", "/notifications", 200},
		{"GET", "/notifications?state=dead", 200},
		{"GET", "/notifications?state=gone", 400},
		{"GET", "/static/dashboard.js", 200},
		{"GET", "/static/dashboard.css", 200},
		{"GET", "/static/nope.js", 404},
	}
	answered := map[string]bool{}
	for _, c := range calls {
		if tmpl := checkAnswer(t, d, hs.URL, c); c.code < 300 {
			answered[c.method+" "+tmpl] = true
		}
	}
	checkWatchEvents(t, d, e)
	answered["GET /api/v1/watch"] = true

	// The same reads with the database gone: 503, as documented.
	_, gone := setup(t, 0)
	gone.Close()
	dead := New(gone, Options{Replica: "dead"}, logger)
	dhs := httptest.NewServer(dead.Handler())
	t.Cleanup(func() { dead.Stop(); dhs.Close() })
	for _, p := range []string{"/readyz", "/api/v1/sources", "/api/v1/sources/main", "/api/v1/resourcetypes", "/api/v1/resourcetypes/queue",
		"/api/v1/resources", res, res + "/history", res + "/timeline", res + "/events", "/api/v1/events", "/api/v1/graph", "/api/v1/replicas", "/api/v1/watch",
		"/", "/resources", "/resources/alpha/Queue/q000", "/sources", "/sources/main",
		"/api/v1/sources/main/previews", "/api/v1/sources/main/previews/7", "/sources/main/previews/7", "/notifications",
		"/api/v1/sources/main/revisions", "/api/v1/resourcesets", "/api/v1/resourcesets/alpha/queues", "/resourcesets/alpha/queues"} {
		checkAnswer(t, d, dhs.URL, apiCall{"GET", p, 503})
	}
	checkAnswer(t, d, dhs.URL, apiCall{"GET", "/metrics", 404}) // metrics not enabled

	// The sign-in routes answer with redirects through an OpenID provider: TestOIDCLogin walks
	// them with a real (fake) provider.
	answered["GET /login"], answered["GET /auth/callback"] = true, true
	for _, op := range d.operations() {
		if strings.HasPrefix(op, "GET ") && !answered[op] {
			t.Errorf("%s: no successful call checked against the document", op)
		}
	}
}

// checkAnswer makes the call and validates the answer against the response the document
// gives for its status; it returns the documented path.
func checkAnswer(t *testing.T, d *apiDoc, base string, c apiCall) string {
	t.Helper()
	req, err := http.NewRequest(c.method, base+c.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	path, _, _ := strings.Cut(c.path, "?")
	tmpl := d.template(path)
	where := c.method + " " + c.path
	if tmpl == "" {
		t.Errorf("%s: no documented path matches", where)
		return ""
	}
	if resp.StatusCode != c.code {
		t.Errorf("%s: status %d, want %d: %.200s", where, resp.StatusCode, c.code, body)
		return tmpl
	}
	ptr, ok := d.response(c.method, tmpl, resp.StatusCode)
	if !ok {
		t.Errorf("%s: status %d is not documented for %s %s", where, resp.StatusCode, c.method, tmpl)
		return tmpl
	}
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		t.Errorf("%s: content type %q: %v", where, resp.Header.Get("Content-Type"), err)
		return tmpl
	}
	if d.at(ptr+"/content/"+esc(mt)) == nil {
		t.Errorf("%s: %d answered %s, which the document does not list", where, resp.StatusCode, mt)
		return tmpl
	}
	if mt == "application/json" {
		if err := validateJSON(d.schema(t, ptr+"/content/application~1json/schema"), body); err != nil {
			t.Errorf("%s: answer does not match the document: %v\n%.1000s", where, err, body)
		}
	}
	return tmpl
}

// checkWatchEvents validates the events of a stream (every change retained, then a reset)
// against the schemas the document names for each event.
func checkWatchEvents(t *testing.T, d *apiDoc, e *watchEnv) {
	t.Helper()
	ptr, ok := d.response("GET", "/api/v1/watch", 200)
	if !ok {
		t.Fatal("GET /api/v1/watch: 200 is not documented")
	}
	events, _ := d.at(ptr + "/content/text~1event-stream/x-event-schemas").(map[string]any)
	schemaOf := func(event string) *jsonschema.Schema {
		ref, _ := events[event].(map[string]any)["$ref"].(string)
		if ref == "" {
			t.Fatalf("watch: event %q has no schema in x-event-schemas", event)
		}
		return d.schema(t, strings.TrimPrefix(ref, "#"))
	}
	validate := func(b sseBlock) {
		if err := validateJSON(schemaOf(b.Event), []byte(b.Data)); err != nil {
			t.Errorf("watch: event %s does not match the document: %v\n%s", b.Event, err, b.Data)
		}
	}
	latest := e.latest(t)
	c := e.watch(t, "since=0", nil)
	kinds := map[string]int{}
	for c.pos < latest {
		if b := c.next(t, 5*time.Second, true); b.Event != "" {
			validate(b)
			var ch wire.Change
			_ = json.Unmarshal([]byte(b.Data), &ch)
			kinds[b.Event+" "+ch.Type]++
		}
	}
	for _, k := range []string{"resource ADDED", "resource MODIFIED", "resource DELETED", "source MODIFIED"} {
		if kinds[k] == 0 {
			t.Errorf("watch: no %s event checked (got %v)", k, kinds)
		}
	}
	r := e.watch(t, "", http.Header{"Last-Event-ID": {"999999"}})
	b := r.next(t, 5*time.Second, true)
	if b.Event != "reset" {
		t.Fatalf("watch from an unknown id: %+v", b)
	}
	validate(b)
}
