package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// edgeRow is one row of resource_edges, written directly: the ingest that writes them lives
// in apply.go.
type edgeRow struct {
	from     string // namespace/name of a Queue
	to       string // Kind/namespace/name
	explicit bool
	outputs  []string
}

func edgeSeed(t *testing.T, st *Store, edges ...edgeRow) {
	t.Helper()
	for _, e := range edges {
		fns, fname, _ := strings.Cut(e.from, "/")
		to := strings.SplitN(e.to, "/", 3)
		if e.outputs == nil {
			e.outputs = []string{}
		}
		// has_deps beside the edges, as the apply writes them.
		tag, err := st.pool.Exec(context.Background(), `WITH r AS (UPDATE resources SET has_deps = true
			WHERE namespace = $1 AND kind = 'Queue' AND name = $2 RETURNING id)
			INSERT INTO resource_edges (resource_id, dep_namespace, dep_kind, dep_name, explicit, outputs)
			SELECT id, $3, $4, $5, $6, $7 FROM r`,
			fns, fname, to[1], to[0], to[2], e.explicit, e.outputs)
		if err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("edge %+v: %v (%d rows)", e, err, tag.RowsAffected())
		}
	}
}

// graphSeed: in prod, app → db → net (app also needs a missing secret, and db a queue of the
// apps source in dev); dev/web → prod/db across namespaces and sources.
func graphSeed(t *testing.T) *Store {
	t.Helper()
	st := openTest(t)
	dashSeed(t, st,
		dashRow{ns: "prod", name: "app", source: "infra", phase: "Pending", ready: "False"},
		dashRow{ns: "prod", name: "db", source: "infra", phase: "Ready", observed: 1, ready: "True"},
		dashRow{ns: "prod", name: "net", source: "infra", phase: "Ready", generation: 2, observed: 1, ready: "True"},
		dashRow{ns: "dev", name: "web", source: "apps", phase: "Pending", ready: "False"},
		dashRow{ns: "dev", name: "shared", source: "apps", phase: "Ready", observed: 1, ready: "True"},
		dashRow{ns: "prod", name: "alone", source: "infra", phase: "Ready", observed: 1, ready: "True"},
	)
	edgeSeed(t, st,
		edgeRow{from: "prod/app", to: "queue/prod/db", explicit: true, outputs: []string{"endpoint"}},
		edgeRow{from: "prod/app", to: "Secret/prod/creds", explicit: true},
		edgeRow{from: "prod/db", to: "Queue/prod/net", outputs: []string{"subnetId", "port"}},
		edgeRow{from: "prod/db", to: "Queue/dev/shared", explicit: true},
		edgeRow{from: "dev/web", to: "Queue/prod/db", explicit: true},
	)
	return st
}

func TestResourceNeighbours(t *testing.T) {
	t.Parallel()
	st := graphSeed(t)
	ctx := context.Background()
	q := func(ns, name string) NodeRef { return NodeRef{Kind: "Queue", Namespace: ns, Name: name} }

	n, err := st.ResourceNeighbours(ctx, Everything, "prod", "queue", "db")
	if err != nil {
		t.Fatal(err)
	}
	wantDeps := []Dependency{
		{NodeRef: q("dev", "shared"), NodeState: NodeState{Exists: true, Phase: "Ready", Source: "apps", Ready: true}, Explicit: true, Outputs: []string{}},
		// Ready, but not at its current generation.
		{NodeRef: q("prod", "net"), NodeState: NodeState{Exists: true, Phase: "Ready", Source: "infra"}, Outputs: []string{"subnetId", "port"}},
	}
	if !reflect.DeepEqual(n.DependsOn, wantDeps) {
		t.Errorf("dependsOn\n%+v\nwant\n%+v", n.DependsOn, wantDeps)
	}
	wantDents := []Dependent{{NodeRef: q("dev", "web"), Phase: "Pending"}, {NodeRef: q("prod", "app"), Phase: "Pending"}}
	if !reflect.DeepEqual(n.Dependents, wantDents) {
		t.Errorf("dependents %+v, want %+v", n.Dependents, wantDents)
	}
	if n.ResolvedSpec != nil {
		t.Errorf("resolved spec %s before any call", n.ResolvedSpec)
	}

	// A missing dependency keeps the kind as written; the resolved spec is read when set.
	if _, err := st.pool.Exec(ctx, `UPDATE resources SET resolved_spec = '{"url": "db:5432"}' WHERE name = 'app'`); err != nil {
		t.Fatal(err)
	}
	n, err = st.ResourceNeighbours(ctx, Everything, "prod", "Queue", "app")
	if err != nil {
		t.Fatal(err)
	}
	if len(n.DependsOn) != 2 || n.DependsOn[1].NodeRef != (NodeRef{"Secret", "prod", "creds"}) || n.DependsOn[1].Exists ||
		n.DependsOn[0].NodeRef != q("prod", "db") || !n.DependsOn[0].Ready {
		t.Errorf("dependsOn of app %+v", n.DependsOn)
	}
	if string(n.ResolvedSpec) != `{"url": "db:5432"}` || len(n.Dependents) != 0 {
		t.Errorf("app: resolved %s, dependents %+v", n.ResolvedSpec, n.Dependents)
	}

	// In the prod scope, dev/shared reads as missing and dev/web is no dependent.
	n, err = st.ResourceNeighbours(ctx, InNamespaces("prod"), "prod", "Queue", "db")
	if err != nil {
		t.Fatal(err)
	}
	if n.DependsOn[0].Exists || n.DependsOn[0].Phase != "" || len(n.Dependents) != 1 || n.Dependents[0].Name != "app" {
		t.Errorf("in scope prod: %+v", n)
	}
	for _, c := range []struct {
		sc       Scope
		ns, name string
	}{{Everything, "prod", "nope"}, {InNamespaces("dev"), "prod", "db"}} {
		if _, err := st.ResourceNeighbours(ctx, c.sc, c.ns, "Queue", c.name); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s %s/%s: %v, want not found", c.sc, c.ns, c.name, err)
		}
	}
}

// ResourceDetail's one batch reads what GetResourceIn and ResourceNeighbours read apart, for
// every resource of the seed, one that does not exist, and one out of scope.
func TestResourceDetailAsReadApart(t *testing.T) {
	t.Parallel()
	st := graphSeed(t)
	ctx := context.Background()
	if _, err := st.pool.Exec(ctx, `UPDATE resources SET resolved_spec = '{"url": "db:5432"}', resolved_origins = '{"url": ["dev"]}' WHERE name = 'app'`); err != nil {
		t.Fatal(err)
	}
	for _, sc := range []Scope{Everything, InNamespaces("prod"), InNamespaces("dev")} {
		for _, id := range [][2]string{{"prod", "app"}, {"prod", "db"}, {"prod", "net"}, {"dev", "web"}, {"dev", "shared"}, {"prod", "alone"}, {"prod", "nope"}} {
			res, n, err := st.ResourceDetail(ctx, sc, id[0], "queue", id[1])
			wantRes, errRes := st.GetResourceIn(ctx, sc, id[0], "queue", id[1])
			wantN, errN := st.ResourceNeighbours(ctx, sc, id[0], "queue", id[1])
			if errRes != nil || errN != nil {
				if !errors.Is(err, ErrNotFound) || !errors.Is(errRes, ErrNotFound) || !errors.Is(errN, ErrNotFound) {
					t.Errorf("%s %s: %v, apart %v / %v", sc, id, err, errRes, errN)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s %s: %v", sc, id, err)
			}
			if !reflect.DeepEqual(res, wantRes) || !reflect.DeepEqual(n, wantN) {
				t.Errorf("%s %s:\n%+v\n%+v\nwant\n%+v\n%+v", sc, id, res, n, wantRes, wantN)
			}
		}
	}
}

// graphString is a graph in one line per node and edge: "Kind/ns/name phase [flags]" and
// "from -> to [explicit] [outputs]".
func graphString(g Graph) string {
	var b strings.Builder
	for _, n := range g.Nodes {
		fmt.Fprintf(&b, "%s %s", n.NodeRef, n.Phase)
		if !n.Exists {
			b.WriteString("missing")
		}
		if n.Ready {
			b.WriteString(" ready")
		}
		if n.External {
			b.WriteString(" external")
		}
		b.WriteString("\n")
	}
	for _, e := range g.Edges {
		fmt.Fprintf(&b, "%s -> %s", e.From, e.To)
		if e.Explicit {
			b.WriteString(" explicit")
		}
		if len(e.Outputs) > 0 {
			fmt.Fprintf(&b, " %v", e.Outputs)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestResourceGraph(t *testing.T) {
	t.Parallel()
	st := graphSeed(t)
	ctx := context.Background()
	cases := []struct {
		name string
		sc   Scope
		f    GraphFilter
		want string
	}{
		{"source", Everything, GraphFilter{Source: "infra"}, `
Queue/dev/shared Ready ready external
Queue/dev/web Pending external
Queue/prod/alone Ready ready
Queue/prod/app Pending
Queue/prod/db Ready ready
Queue/prod/net Ready
Secret/prod/creds missing external
Queue/dev/web -> Queue/prod/db explicit
Queue/prod/app -> Queue/prod/db explicit [endpoint]
Queue/prod/app -> Secret/prod/creds explicit
Queue/prod/db -> Queue/dev/shared explicit
Queue/prod/db -> Queue/prod/net [subnetId port]
`},
		{"source in a narrow scope", InNamespaces("prod"), GraphFilter{Source: "infra"}, `
Queue/dev/shared missing external
Queue/prod/alone Ready ready
Queue/prod/app Pending
Queue/prod/db Ready ready
Queue/prod/net Ready
Secret/prod/creds missing external
Queue/prod/app -> Queue/prod/db explicit [endpoint]
Queue/prod/app -> Secret/prod/creds explicit
Queue/prod/db -> Queue/dev/shared explicit
Queue/prod/db -> Queue/prod/net [subnetId port]
`},
		{"namespace", Everything, GraphFilter{Namespace: "dev"}, `
Queue/dev/shared Ready ready
Queue/dev/web Pending
Queue/prod/db Ready ready external
Queue/dev/web -> Queue/prod/db explicit
Queue/prod/db -> Queue/dev/shared explicit
`},
		{"everything", Everything, GraphFilter{}, `
Queue/dev/shared Ready ready
Queue/dev/web Pending
Queue/prod/alone Ready ready
Queue/prod/app Pending
Queue/prod/db Ready ready
Queue/prod/net Ready
Secret/prod/creds missing external
Queue/dev/web -> Queue/prod/db explicit
Queue/prod/app -> Queue/prod/db explicit [endpoint]
Queue/prod/app -> Secret/prod/creds explicit
Queue/prod/db -> Queue/dev/shared explicit
Queue/prod/db -> Queue/prod/net [subnetId port]
`},
		{"around a resource", Everything, GraphFilter{Root: &NodeRef{"queue", "prod", "app"}}, `
Queue/dev/shared Ready ready
Queue/prod/app Pending
Queue/prod/db Ready ready
Queue/prod/net Ready
Secret/prod/creds missing
Queue/prod/app -> Queue/prod/db explicit [endpoint]
Queue/prod/app -> Secret/prod/creds explicit
Queue/prod/db -> Queue/dev/shared explicit
Queue/prod/db -> Queue/prod/net [subnetId port]
`},
		{"around a resource, one level", Everything, GraphFilter{Root: &NodeRef{"Queue", "prod", "db"}, Depth: 1}, `
Queue/dev/shared Ready ready
Queue/dev/web Pending
Queue/prod/app Pending
Queue/prod/db Ready ready
Queue/prod/net Ready
Queue/dev/web -> Queue/prod/db explicit
Queue/prod/app -> Queue/prod/db explicit [endpoint]
Queue/prod/db -> Queue/dev/shared explicit
Queue/prod/db -> Queue/prod/net [subnetId port]
`},
		{"around a leaf", Everything, GraphFilter{Root: &NodeRef{"Queue", "prod", "net"}}, `
Queue/dev/web Pending
Queue/prod/app Pending
Queue/prod/db Ready ready
Queue/prod/net Ready
Queue/dev/web -> Queue/prod/db explicit
Queue/prod/app -> Queue/prod/db explicit [endpoint]
Queue/prod/db -> Queue/prod/net [subnetId port]
`},
		{"around a resource in a narrow scope", InNamespaces("prod"), GraphFilter{Root: &NodeRef{"Queue", "prod", "net"}}, `
Queue/prod/app Pending
Queue/prod/db Ready ready
Queue/prod/net Ready
Queue/prod/app -> Queue/prod/db explicit [endpoint]
Queue/prod/db -> Queue/prod/net [subnetId port]
`},
		{"no edges", Everything, GraphFilter{Root: &NodeRef{"Queue", "prod", "alone"}}, `
Queue/prod/alone Ready ready
`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := st.ResourceGraph(ctx, c.sc, c.f)
			if err != nil {
				t.Fatal(err)
			}
			if got := graphString(g); got != strings.TrimPrefix(c.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", got, strings.TrimPrefix(c.want, "\n"))
			}
		})
	}

	for _, c := range []struct {
		sc   Scope
		f    GraphFilter
		want error
	}{
		{Everything, GraphFilter{Source: "infra", MaxNodes: 4}, ErrGraphTooLarge},
		{Everything, GraphFilter{Root: &NodeRef{"Queue", "prod", "app"}, MaxNodes: 3}, ErrBadRequest},
		{Everything, GraphFilter{Root: &NodeRef{"Queue", "prod", "nope"}}, ErrNotFound},
		{InNamespaces("dev"), GraphFilter{Root: &NodeRef{"Queue", "prod", "app"}}, ErrNotFound},
	} {
		if _, err := st.ResourceGraph(ctx, c.sc, c.f); !errors.Is(err, c.want) {
			t.Errorf("%s %+v: %v, want %v", c.sc, c.f, err, c.want)
		}
	}
}
