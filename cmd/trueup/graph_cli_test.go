package main

import (
	"context"
	"strings"
	"testing"
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
