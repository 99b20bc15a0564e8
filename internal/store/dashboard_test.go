package store

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

// dashRow is one resource row as the dashboard queries read it.
type dashRow struct {
	ns, name, source, phase string
	labels                  string
	generation, observed    int64
	ready                   string // Ready condition status
	minutesAgo              int    // status written this long ago
}

func dashSeed(t *testing.T, st *Store, rows ...dashRow) {
	t.Helper()
	for _, r := range rows {
		if r.labels == "" {
			r.labels = "{}"
		}
		if r.generation == 0 {
			r.generation = 1
		}
		_, err := st.pool.Exec(context.Background(), `INSERT INTO resources (namespace, kind, name, api_version, source,
			  spec_hash, meta_hash, labels, phase, generation, observed_generation, conditions, status_updated_at)
			VALUES ($1, 'Queue', $2, 'mq.example.com/v1', $3, 'h', 'm', $4::jsonb, $5, $6, $7,
			  jsonb_build_array(jsonb_build_object('type', 'Synced', 'status', 'True'),
			                    jsonb_build_object('type', 'Ready', 'status', $8::text, 'reason', 'R')),
			  now() - $9 * interval '1 minute')`,
			r.ns, r.name, r.source, r.labels, r.phase, r.generation, r.observed, r.ready, r.minutesAgo)
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestDashboardQueries(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	dashSeed(t, st,
		dashRow{ns: "prod", name: "orders", source: "infra", phase: "Ready", observed: 1, ready: "True", labels: `{"team":"shop"}`},
		dashRow{ns: "prod", name: "payments", source: "infra", phase: "Failed", ready: "False", minutesAgo: 30},
		dashRow{ns: "prod", name: "pay_100%", source: "infra", phase: "Failed", ready: "False", minutesAgo: 5},
		dashRow{ns: "dev", name: "orders", source: "apps", phase: "Reconciling", generation: 2, observed: 1, ready: "Unknown", labels: `{"team":"shop"}`},
		dashRow{ns: "dev", name: "audit", source: "apps", phase: "Ready", observed: 1, ready: "True"},
	)

	counts, err := st.CountResources(ctx, Everything)
	if err != nil {
		t.Fatal(err)
	}
	want := []PhaseCount{
		{Source: "apps", Phase: "Ready", Count: 1}, {Source: "apps", Phase: "Reconciling", Count: 1},
		{Source: "infra", Phase: "Failed", Count: 2}, {Source: "infra", Phase: "Ready", Count: 1},
	}
	if !reflect.DeepEqual(counts, want) {
		t.Errorf("counts %+v\nwant %+v", counts, want)
	}

	names := func(f SummaryFilter) []string {
		t.Helper()
		items, _, err := st.ListResourceSummaries(ctx, Everything, f)
		if err != nil {
			t.Fatalf("%+v: %v", f, err)
		}
		var out []string
		for _, it := range items {
			out = append(out, it.Namespace+"/"+it.Name)
		}
		return out
	}
	cases := []struct {
		f    SummaryFilter
		want []string
	}{
		{SummaryFilter{}, []string{"dev/audit", "dev/orders", "prod/orders", "prod/pay_100%", "prod/payments"}},
		{SummaryFilter{Query: "ORD"}, []string{"dev/orders", "prod/orders"}},
		{SummaryFilter{Query: "pay"}, []string{"prod/pay_100%", "prod/payments"}},
		// LIKE's wildcards match literally.
		{SummaryFilter{Query: "_1"}, []string{"prod/pay_100%"}},
		{SummaryFilter{Query: "%"}, []string{"prod/pay_100%"}},
		{SummaryFilter{Phase: "Failed", Namespace: "prod"}, []string{"prod/pay_100%", "prod/payments"}},
		{SummaryFilter{LabelSelector: "team=shop", Source: "apps"}, []string{"dev/orders"}},
		{SummaryFilter{Kind: "QUEUE", Query: "audit"}, []string{"dev/audit"}},
	}
	for _, tc := range cases {
		if got := names(tc.f); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.f, got, tc.want)
		}
	}

	// Keyset paging visits every row once.
	var all []string
	f := SummaryFilter{Limit: 2}
	for range 5 {
		items, next, err := st.ListResourceSummaries(ctx, Everything, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			all = append(all, it.Namespace+"/"+it.Name)
		}
		if next == "" {
			break
		}
		f.Continue = next
	}
	if len(all) != 5 || all[0] != "dev/audit" || all[4] != "prod/payments" {
		t.Errorf("paged %v", all)
	}

	items, _, err := st.ListResourceSummaries(ctx, Everything, SummaryFilter{Namespace: "dev", Query: "orders"})
	if err != nil || len(items) != 1 {
		t.Fatalf("%v %v", items, err)
	}
	if it := items[0]; it.Ready.Type != "Ready" || it.Ready.Status != "Unknown" || it.Labels["team"] != "shop" ||
		it.Generation != 2 || it.ObservedGeneration != 1 || it.Source != "apps" || it.StatusTime == nil {
		t.Errorf("summary %+v", it)
	}

	for _, bad := range []SummaryFilter{{LabelSelector: "=="}, {Continue: "garbage"}} {
		if _, _, err := st.ListResourceSummaries(ctx, Everything, bad); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%+v: %v, want ErrBadRequest", bad, err)
		}
	}

	fails, err := st.RecentFailures(ctx, Everything, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(fails) != 2 || fails[0].Name != "pay_100%" || fails[1].Name != "payments" {
		t.Errorf("failures %+v", fails)
	}

	nss, err := st.ListNamespaces(ctx, Everything, 0)
	if err != nil || !reflect.DeepEqual(nss, []string{"dev", "prod"}) {
		t.Errorf("namespaces %v %v", nss, err)
	}
}
