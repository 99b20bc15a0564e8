package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/wire"
)

// seedGraph adds edges to the fixture, as the ingest would have written them:
//
//	production/catalog-mysql → production/orders-pg (dependsOn), production/invoices (outputs arn)
//	production/orders-pg     → production/invoices (dependsOn, outputs arn), Network production/core (missing)
//	staging/orders-pg        → default/build-cache (outputs region)
//	default/jobs (platform)  → production/invoices (dependsOn)
func seedGraph(t *testing.T, a *api) {
	t.Helper()
	_, err := a.store.Pool().Exec(context.Background(), `INSERT INTO resource_edges (resource_id, dep_namespace, dep_kind, dep_name, explicit, outputs)
		SELECT r.id, e.ns, e.kind, e.name, e.explicit, e.outputs
		FROM (VALUES
		  ('production', 'catalog-mysql', 'production', 'DatabaseCluster', 'orders-pg', true, '{}'::text[]),
		  ('production', 'catalog-mysql', 'production', 'bucket', 'invoices', false, '{arn}'),
		  ('production', 'orders-pg', 'production', 'Bucket', 'invoices', true, '{arn}'),
		  ('production', 'orders-pg', 'production', 'Network', 'core', true, '{}'),
		  ('staging', 'orders-pg', 'default', 'Bucket', 'build-cache', false, '{region}'),
		  ('default', 'jobs', 'production', 'Bucket', 'invoices', true, '{}')
		) AS e(rns, rname, ns, kind, name, explicit, outputs)
		JOIN resources r ON r.namespace = e.rns AND r.name = e.rname`)
	if err != nil {
		t.Fatal(err)
	}
}

func TestGraph(t *testing.T) {
	t.Parallel()
	a := setup(t)
	seedGraph(t, a)
	runGolden(t, a, []goldenCase{
		{"graph_all.txt", []string{"graph"}},
		{"graph_source.txt", []string{"graph", "--source", "platform"}},
		{"graph_resource.txt", []string{"graph", "databasecluster/orders-pg", "-n", "production"}},
		{"graph_resource_depth.txt", []string{"graph", "Bucket/invoices", "-n", "production", "--depth", "1"}},
		{"graph_dot.txt", []string{"graph", "-o", "dot"}},
		{"graph_json.txt", []string{"graph", "Bucket/build-cache", "-o", "json"}},
	})

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"graph", "Bucket/nope"}, "not found"},
		{[]string{"graph", "Bucket/invoices", "--source", "infra"}, "--source selects a graph of its own"},
		{[]string{"graph", "--depth", "2"}, "--depth needs a KIND/NAME"},
		{[]string{"graph", "-o", "wide"}, "unknown output format"},
		{[]string{"graph", "--source", "nope"}, "source nope: not found"},
	} {
		if _, _, err := a.run(t, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// TestGraphTreeGuards checks the tree's guards on graphs the API does not answer with: a
// cycle (ingest rejects them) and an edge to a node the answer does not list.
func TestGraphTreeGuards(t *testing.T) {
	t.Parallel()
	g := wire.Graph{
		Nodes: []wire.GraphNode{{ID: "Q/a/x", Phase: "Ready"}, {ID: "Q/a/y", Phase: "Ready"}, {ID: "Q/a/z", Phase: "Ready"}},
		Edges: []wire.GraphEdge{{From: "Q/a/x", To: "Q/a/y"}, {From: "Q/a/y", To: "Q/a/x"}, {From: "Q/a/z", To: "Q/a/ghost", Explicit: true}},
	}
	var b bytes.Buffer
	writeTree(&b, g)
	want := `Q/a/z  Ready
└── Q/a/ghost  (missing)  (dependsOn)
Q/a/x  Ready
└── Q/a/y  Ready
    └── Q/a/x  Ready  (cycle)
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}

	b.Reset()
	writeDot(&b, wire.Graph{Nodes: []wire.GraphNode{{ID: `Q/a/"evil" \ name`, Phase: "Ready"}}})
	if !strings.Contains(b.String(), `"Q/a/\"evil\" \\ name" [label="Q/a/\"evil\" \\ name\nReady"`) {
		t.Errorf("dot quoting:\n%s", b.String())
	}
}
