package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

func TestLayoutGraph(t *testing.T) {
	t.Parallel()
	n := func(ids ...string) []svgNode {
		out := make([]svgNode, len(ids))
		for i, id := range ids {
			out[i] = svgNode{ID: id}
		}
		return out
	}
	e := func(pairs ...string) []svgEdge {
		var out []svgEdge
		for _, p := range pairs {
			from, to, _ := strings.Cut(p, ">")
			out = append(out, svgEdge{From: from, To: to})
		}
		return out
	}
	cases := []struct {
		name    string
		nodes   []svgNode
		edges   []svgEdge
		depth   []int
		columns [][]string
	}{
		{"empty", nil, nil, []int{}, [][]string{}},
		{"no edges: one column in input order", n("b", "a"), nil, []int{0, 0}, [][]string{{"b", "a"}}},
		{"chain: dependencies left", n("app", "db", "net"), e("app>db", "db>net"), []int{2, 1, 0}, [][]string{{"net"}, {"db"}, {"app"}}},
		{"longest path wins", n("app", "db", "net"), e("app>db", "db>net", "app>net"), []int{2, 1, 0}, [][]string{{"net"}, {"db"}, {"app"}}},
		{"edges to unknown nodes ignored", n("a"), e("a>ghost", "ghost>a", "a>a"), []int{0}, [][]string{{"a"}}},
		{"cycle cut, not looping", n("a", "b", "c"), e("a>b", "b>c", "c>a"), []int{2, 1, 0}, [][]string{{"c"}, {"b"}, {"a"}}},
		// x1 needs the second leaf and x2 the first: the barycenter pass uncrosses them.
		{"ordering reduces crossings", n("l1", "l2", "x1", "x2"), e("x1>l2", "x2>l1"), []int{0, 0, 1, 1}, [][]string{{"l1", "l2"}, {"x2", "x1"}}},
		{"dependents of one dependency sit together", n("a", "b", "la", "lb", "z"), e("b>lb", "a>la", "z>la"),
			[]int{1, 1, 0, 0, 1}, [][]string{{"la", "lb"}, {"a", "z", "b"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := layoutGraph(c.nodes, c.edges)
			if !reflect.DeepEqual(l.Depth, c.depth) {
				t.Errorf("depth %v, want %v", l.Depth, c.depth)
			}
			cols := [][]string{}
			for _, col := range l.Columns {
				var ids []string
				for _, i := range col {
					ids = append(ids, c.nodes[i].ID)
				}
				cols = append(cols, ids)
			}
			if !reflect.DeepEqual(cols, c.columns) {
				t.Errorf("columns %v, want %v", cols, c.columns)
			}
		})
	}
}

func TestGraphSVG(t *testing.T) {
	t.Parallel()
	evil := `<script>alert("x")</script>`
	nodes := []svgNode{
		{ID: "Queue/prod/" + evil, Kind: "Queue", Namespace: "prod", Name: evil, Phase: "Ready", Link: resourcePath("prod", "Queue", evil)},
		{ID: "Network/prod/core", Kind: "Network", Namespace: "prod", Name: "core", Phase: "Failed", Link: resourcePath("prod", "Network", "core")},
		{ID: "Secret/prod/x", Kind: "Secret", Namespace: "prod", Name: "x", Missing: true},
		{ID: "Queue/prod/a-very-long-name-that-does-not-fit-in-a-box", Kind: "Queue", Namespace: "prod", Name: "a-very-long-name-that-does-not-fit-in-a-box", Phase: "Weird"},
	}
	edges := []svgEdge{
		{From: nodes[0].ID, To: nodes[1].ID, Explicit: true},
		{From: nodes[0].ID, To: nodes[2].ID},
		{From: nodes[3].ID, To: nodes[1].ID},
	}
	svg, err := graphSVG(nodes, edges)
	if err != nil {
		t.Fatal(err)
	}
	got := string(svg)
	for _, want := range []string{
		`<svg xmlns="http://www.w3.org/2000/svg"`,
		`&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;`,
		`<a href="/resources/prod/Queue/%3Cscript%3Ealert%28%22x%22%29%3C%2Fscript%3E">`,
		`<g class="gnode gnode-ready">`, `<g class="gnode gnode-failed">`, `<g class="gnode gnode-missing">`,
		`<g class="gnode gnode-unknown">`, // a phase that is no class
		`prod/a-very-long-name-that-do…`,
		`class="gedge"`, `class="gedge gedge-ref"`, `marker-end="url(#garrow)"`,
		`Secret · missing`,
		`aria-label="Dependency graph: 4 resources, 3 dependencies;`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %s in\n%s", want, got)
		}
	}
	if strings.Contains(got, "<script") || strings.Contains(got, "style=") {
		t.Errorf("unescaped name or inline style in\n%s", got)
	}
	if strings.Count(got, "<a ") != 2 {
		t.Errorf("want links for the 2 nodes that have one:\n%s", got)
	}

	one, err := graphSVG(nodes[1:2], nil)
	if err != nil || !strings.Contains(string(one), `aria-label="Dependency graph: 1 resource, 0 dependencies;`) {
		t.Errorf("one node: %v\n%s", err, one)
	}

	many := make([]svgNode, maxSVGNodes+1)
	for i := range many {
		many[i] = svgNode{ID: strings.Repeat("n", i+1)}
	}
	if _, err := graphSVG(many, nil); !errors.Is(err, errGraphTooLarge) {
		t.Errorf("%d nodes: %v, want errGraphTooLarge", len(many), err)
	}
	if _, err := graphSVG(many[:maxSVGNodes], nil); err != nil {
		t.Errorf("%d nodes: %v", maxSVGNodes, err)
	}
}

// seedEdges: alpha/q000 depends on beta/q001 through a reference and on a missing Secret;
// alpha/q002 lists alpha/q000 under dependsOn.
func seedEdges(t *testing.T, st *store.Store) {
	t.Helper()
	ctx := context.Background()
	if _, err := st.Pool().Exec(ctx, `INSERT INTO resource_edges (resource_id, dep_namespace, dep_kind, dep_name, explicit, outputs)
		SELECT id, 'beta', 'queue', 'q001', false, '{endpoint}'::text[] FROM resources WHERE name = 'q000'
		UNION ALL SELECT id, 'alpha', 'Secret', 'creds', true, '{}'::text[] FROM resources WHERE name = 'q000'
		UNION ALL SELECT id, 'alpha', 'Queue', 'q000', true, '{}'::text[] FROM resources WHERE name = 'q002'`); err != nil {
		t.Fatal(err)
	}
	// has_deps beside the edges, as the apply writes them.
	if _, err := st.Pool().Exec(ctx, `UPDATE resources SET has_deps = true WHERE name IN ('q000', 'q002')`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `UPDATE resources SET resolved_spec = '{"size": 0, "url": "q001:5432"}' WHERE name = 'q000'`); err != nil {
		t.Fatal(err)
	}
}

func getJSONAs(t *testing.T, u, as string, v any) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("X-Test-Identity", as)
	code, b := send(t, req)
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v: %s", u, err, b)
		}
	}
	return code
}

func TestDependencyAPI(t *testing.T) {
	t.Parallel()
	srv, st := setupAuth(t, 4)
	seedEdges(t, st)

	var res resourceAnswer
	if code := getJSONAs(t, srv.URL+"/api/v1/resources/alpha/queue/q000", "viewer-all", &res); code != 200 {
		t.Fatalf("status %d", code)
	}
	no := false
	wantDeps := []wire.Dependency{
		{Kind: "Secret", Namespace: "alpha", Name: "creds", Explicit: true, Outputs: []string{}, Missing: true},
		{Kind: "Queue", Namespace: "beta", Name: "q001", Outputs: []string{"endpoint"}, Phase: "Pending", Source: "main", Ready: &no},
	}
	if !reflect.DeepEqual(res.DependsOn, wantDeps) {
		t.Errorf("dependsOn %+v\nwant %+v", res.DependsOn, wantDeps)
	}
	if want := []dependentAnswer{{Kind: "Queue", Namespace: "alpha", Name: "q002", Phase: "Pending"}}; !reflect.DeepEqual(res.Dependents, want) {
		t.Errorf("dependents %+v", res.Dependents)
	}
	if string(res.Status.ResolvedSpec) != `{"url":"q001:5432","size":0}` || res.Status.Phase != "Pending" || res.Metadata.Name != "q000" {
		t.Errorf("resource %+v", res)
	}

	// A viewer of alpha sees beta/q001 as missing, like a resource that does not exist.
	var scoped resourceAnswer
	if code := getJSONAs(t, srv.URL+"/api/v1/resources/alpha/queue/q000", "viewer-alpha", &scoped); code != 200 || !scoped.DependsOn[1].Missing || scoped.DependsOn[1].Phase != "" {
		t.Errorf("viewer-alpha: %d %+v", code, scoped.DependsOn)
	}

	// Its resolved spec was stored without origins (before they were recorded) and reads an
	// output of beta: left out for viewer-alpha.
	if scoped.Status.ResolvedSpec != nil {
		t.Errorf("viewer-alpha: resolvedSpec %s without origins, want none", scoped.Status.ResolvedSpec)
	}

	// A list item has its dependsOn as written (queue, not Queue), without state, and leaves
	// out dependents and the resolved spec; an item without dependencies has no dependsOn.
	var list struct{ Items []json.RawMessage }
	getJSONAs(t, srv.URL+"/api/v1/resources", "viewer-all", &list)
	byName := map[string]string{}
	for _, it := range list.Items {
		var item struct{ Metadata struct{ Name string } }
		if err := json.Unmarshal(it, &item); err != nil {
			t.Fatal(err)
		}
		byName[item.Metadata.Name] = string(it)
	}
	for name, want := range map[string]string{
		"q000": `"dependsOn":[{"kind":"Secret","namespace":"alpha","name":"creds","explicit":true,"outputs":[]},` +
			`{"kind":"queue","namespace":"beta","name":"q001","explicit":false,"outputs":["endpoint"]}]}`,
		"q002": `"dependsOn":[{"kind":"Queue","namespace":"alpha","name":"q000","explicit":true,"outputs":[]}]}`,
	} {
		if !strings.HasSuffix(byName[name], want) {
			t.Errorf("list item %s: %s\nwant it to end with %s", name, byName[name], want)
		}
	}
	for name, item := range byName {
		if strings.Contains(item, "dependents") || strings.Contains(item, "resolvedSpec") ||
			name != "q000" && name != "q002" && strings.Contains(item, "dependsOn") || len(byName) != 4 {
			t.Errorf("list item %s: %s", name, item)
		}
	}

	var g wire.Graph
	if code := getJSONAs(t, srv.URL+"/api/v1/graph?source=main", "viewer-all", &g); code != 200 {
		t.Fatalf("graph status %d", code)
	}
	var ids []string
	for _, n := range g.Nodes {
		ids = append(ids, n.ID)
	}
	if want := []string{"Queue/alpha/q000", "Queue/alpha/q002", "Secret/alpha/creds", "Queue/beta/q001", "Queue/beta/q003"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("nodes %v, want %v", ids, want)
	}
	wantEdges := []wire.GraphEdge{
		{From: "Queue/alpha/q000", To: "Secret/alpha/creds", Explicit: true, Outputs: []string{}},
		{From: "Queue/alpha/q000", To: "Queue/beta/q001", Outputs: []string{"endpoint"}},
		{From: "Queue/alpha/q002", To: "Queue/alpha/q000", Explicit: true, Outputs: []string{}},
	}
	if !reflect.DeepEqual(g.Edges, wantEdges) {
		t.Errorf("edges %+v", g.Edges)
	}
	if !g.Nodes[2].Missing || !g.Nodes[2].External || g.Nodes[0].External {
		t.Errorf("nodes %+v", g.Nodes)
	}

	for _, c := range []struct {
		q, as string
		code  int
		nodes int
	}{
		{"resource=queue/alpha/q002&depth=1", "viewer-all", 200, 2},
		{"resource=queue/alpha/q002", "viewer-all", 200, 4},
		{"resource=queue/alpha/q002", "viewer-alpha", 200, 4}, // beta/q001 missing for it
		{"resource=queue/beta/q001", "viewer-alpha", 404, 0},
		{"source=main", "viewer-alpha", 200, 4},
		{"source=nope", "viewer-all", 404, 0},
		{"resource=queue/alpha/q002&source=main", "viewer-all", 400, 0},
		{"depth=-1&resource=queue/alpha/q002", "viewer-all", 400, 0},
	} {
		var g wire.Graph
		if code := getJSONAs(t, srv.URL+"/api/v1/graph?"+c.q, c.as, &g); code != c.code || len(g.Nodes) != c.nodes {
			t.Errorf("%s as %s: %d with %d nodes, want %d with %d", c.q, c.as, code, len(g.Nodes), c.code, c.nodes)
		}
	}
}

func TestDependencyPages(t *testing.T) {
	t.Parallel()
	hs, st := setup(t, 4)
	seedEdges(t, st)

	code, _, body := getPage(t, hs.URL+"/resources/alpha/Queue/q000")
	if code != 200 {
		t.Fatalf("resource page %d", code)
	}
	for _, want := range []string{
		`<h2 id="deps-h">Depends on</h2>`,
		`<a href="/resources/beta/Queue/q001"><span class="kind">Queue</span> beta/q001</a>`,
		`<span class="kind">Secret</span> alpha/creds</td>`, // missing: no link
		`<span class="phase phase-missing">`,
		`outputs <code>endpoint</code>`,
		`<h2 id="dependents-h">Dependents</h2>`,
		`<a href="/resources/alpha/Queue/q002"><span class="kind">Queue</span> alpha/q002</a>`,
		`<h2 id="resolved-h">Resolved spec</h2>`,
		`&#34;url&#34;: &#34;q001:5432&#34;`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("resource page: no %s", want)
		}
	}

	code, _, body = getPage(t, hs.URL+"/sources/main")
	if code != 200 {
		t.Fatalf("source page %d", code)
	}
	for _, want := range []string{`<h2 id="graph-h">Graph</h2>`, `<div class="graph"><svg xmlns="http://www.w3.org/2000/svg"`,
		`<a href="/resources/alpha/Queue/q000">`, `<g class="gnode gnode-missing gnode-external">`} {
		if !strings.Contains(body, want) {
			t.Errorf("source page: no %s", want)
		}
	}
}

// TestResolvedSpecMaskedByOrigin: a value of alpha/q000's resolved spec that came from beta
// (resolved_origins) is "***" for a caller who may not read beta, on the API's resource GET
// and on the dashboard's resource page; a caller who reads beta sees it.
func TestResolvedSpecMaskedByOrigin(t *testing.T) {
	t.Parallel()
	srv, st := setupAuth(t, 4)
	seedEdges(t, st)
	if _, err := st.Pool().Exec(context.Background(), `UPDATE resources SET resolved_spec = '{"size": 0, "url": "q001:5432", "list": [{"host": "beta-host"}, "plain"], "obj": {"a": "beta-secret-1"}}',
		resolved_origins = '{"spec.url": ["beta"], "spec.list[0].host": ["beta"], "spec.obj": ["alpha", "beta"]}' WHERE name = 'q000'`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		as   string
		want string
	}{
		{"viewer-alpha", `{"list":[{"host":"***"},"plain"],"obj":"***","size":0,"url":"***"}`},
		{"operator-alpha", `{"list":[{"host":"***"},"plain"],"obj":"***","size":0,"url":"***"}`},
		{"viewer-all", `{"list":[{"host":"beta-host"},"plain"],"obj":{"a":"beta-secret-1"},"size":0,"url":"q001:5432"}`},
	} {
		var res resourceAnswer
		if code := getJSONAs(t, srv.URL+"/api/v1/resources/alpha/queue/q000", c.as, &res); code != 200 {
			t.Fatalf("%s: status %d", c.as, code)
		}
		var v any
		if err := json.Unmarshal(res.Status.ResolvedSpec, &v); err != nil {
			t.Fatalf("%s: %v", c.as, err)
		}
		got, _ := json.Marshal(v)
		if string(got) != c.want {
			t.Errorf("%s: resolvedSpec %s, want %s", c.as, got, c.want)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/resources/alpha/Queue/q000", nil)
	req.Header.Set("X-Test-Identity", "viewer-alpha")
	code, page := send(t, req)
	if code != 200 || !strings.Contains(string(page), `<h2 id="resolved-h">Resolved spec</h2>`) {
		t.Fatalf("dashboard %d:\n%s", code, page)
	}
	for _, leak := range []string{"q001:5432", "beta-host", "beta-secret-1"} {
		if strings.Contains(string(page), leak) {
			t.Errorf("dashboard resource page shows %q to viewer-alpha", leak)
		}
	}
	if !strings.Contains(string(page), `&#34;url&#34;: &#34;***&#34;`) {
		t.Errorf("dashboard: no masked url")
	}
}

func TestMaskForeign(t *testing.T) {
	t.Parallel()
	spec := json.RawMessage(`{"a":"x","b":{"c":[1,"y"]},"d.e":"z"}`)
	for _, c := range []struct {
		name    string
		origins map[string][]string
		sc      store.Scope
		want    string
	}{
		{"no origins", nil, store.InNamespaces("s"), `{"a":"x","b":{"c":[1,"y"]},"d.e":"z"}`},
		{"everything sees all", map[string][]string{"spec.a": {"p"}}, store.Everything, `{"a":"x","b":{"c":[1,"y"]},"d.e":"z"}`},
		{"origin in scope", map[string][]string{"spec.a": {"p"}}, store.InNamespaces("s", "p"), `{"a":"x","b":{"c":[1,"y"]},"d.e":"z"}`},
		{"origin out of scope", map[string][]string{"spec.a": {"p"}}, store.InNamespaces("s"), `{"a":"***","b":{"c":[1,"y"]},"d.e":"z"}`},
		{"one of two origins out of scope", map[string][]string{"spec.b.c[1]": {"p", "s"}}, store.InNamespaces("s"), `{"a":"x","b":{"c":[1,"***"]},"d.e":"z"}`},
		{"a number", map[string][]string{"spec.b.c[0]": {"p"}}, store.InNamespaces("s"), `{"a":"x","b":{"c":["***","y"]},"d.e":"z"}`},
		{"a whole object", map[string][]string{"spec.b": {"p"}}, store.InNamespaces("s"), `{"a":"x","b":"***","d.e":"z"}`},
		{"a key with a dot", map[string][]string{"spec.d.e": {"p"}}, store.InNamespaces("s"), `{"a":"x","b":{"c":[1,"y"]},"d.e":"***"}`},
		{"nothing visible", map[string][]string{"spec.a": {"p"}}, store.Scope{}, `{"a":"***","b":{"c":[1,"y"]},"d.e":"z"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := maskForeign(spec, c.origins, c.sc)
			if string(got) != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
	if got := maskForeign(json.RawMessage(`{"a":`), map[string][]string{"spec.a": {"p"}}, store.InNamespaces("s")); got != nil {
		t.Errorf("an unreadable spec with foreign values: %s, want nothing", got)
	}
}

// TestResolvedSpecWithoutOrigins: a resolved spec stored without origins (before they were
// recorded) is left out for a caller who may not read every namespace, even when the
// resource's references no longer leave its namespace (a spec change keeps the stored
// resolved spec until the next call); one recorded with no foreign value ({}) is shown.
func TestResolvedSpecWithoutOrigins(t *testing.T) {
	t.Parallel()
	srv, st := setupAuth(t, 4)
	seedEdges(t, st)
	ctx := context.Background()
	// The reference to beta is gone from the spec; the resolved spec still holds beta's value.
	if _, err := st.Pool().Exec(ctx, `DELETE FROM resource_edges WHERE dep_namespace = 'beta'`); err != nil {
		t.Fatal(err)
	}
	get := func(as string) json.RawMessage {
		var res resourceAnswer
		if code := getJSONAs(t, srv.URL+"/api/v1/resources/alpha/queue/q000", as, &res); code != 200 {
			t.Fatalf("%s: status %d", as, code)
		}
		return res.Status.ResolvedSpec
	}
	if got := get("viewer-alpha"); got != nil {
		t.Errorf("viewer-alpha: resolvedSpec %s stored without origins, want none", got)
	}
	if got := get("viewer-all"); !strings.Contains(string(got), "q001:5432") {
		t.Errorf("viewer-all: resolvedSpec %s, want it whole", got)
	}
	if _, err := st.Pool().Exec(ctx, `UPDATE resources SET resolved_origins = '{}' WHERE name = 'q000'`); err != nil {
		t.Fatal(err)
	}
	if got := get("viewer-alpha"); !strings.Contains(string(got), `"size":0`) {
		t.Errorf("viewer-alpha: resolvedSpec %s with no foreign origins, want it", got)
	}
}
