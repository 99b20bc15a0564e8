package store

import (
	"context"
	"reflect"
	"testing"
)

func TestScope(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		scope   Scope
		all     bool
		sees    []string
		seesNot []string
	}{
		{"zero value sees nothing", Scope{}, false, nil, []string{"", "staging", "*"}},
		{"no namespaces sees nothing", InNamespaces(), false, nil, []string{"staging"}},
		{"everything", Everything, true, []string{"staging", "production", ""}, nil},
		{"star is everything", InNamespaces("staging", "*"), true, []string{"production"}, nil},
		{"listed only", InNamespaces("staging", "dev", "staging"), false, []string{"staging", "dev"}, []string{"production", "", "stag", "*"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.scope.All() != c.all {
				t.Errorf("All() = %v", c.scope.All())
			}
			for _, ns := range c.sees {
				if !c.scope.Contains(ns) {
					t.Errorf("does not see %q", ns)
				}
			}
			for _, ns := range c.seesNot {
				if c.scope.Contains(ns) {
					t.Errorf("sees %q", ns)
				}
			}
		})
	}
	if got := InNamespaces("b", "a", "b").Namespaces(); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("namespaces %v", got)
	}
	// Everything adds no predicate: its queries are those of a server without authorization.
	arg := func(any) string { t.Fatal("Everything took an argument"); return "" }
	if Everything.where("namespace", arg) != "" || Everything.sourceWhere("name", arg) != "" {
		t.Error("Everything filters")
	}
}

// TestScopedQueries checks that every list, count and feed of the dashboard and the API
// returns only what the scope sees, pages included.
func TestScopedQueries(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	for _, name := range []string{"apps", "infra", "empty"} {
		if err := st.RegisterSource(ctx, SourceConfig{Name: name, URL: "file:///" + name}); err != nil {
			t.Fatal(err)
		}
	}
	dashSeed(t, st,
		dashRow{ns: "prod", name: "orders", source: "infra", phase: "Ready", observed: 1, ready: "True"},
		dashRow{ns: "prod", name: "payments", source: "infra", phase: "Failed", ready: "False", minutesAgo: 1},
		dashRow{ns: "dev", name: "orders", source: "apps", phase: "Reconciling", ready: "Unknown"},
		dashRow{ns: "staging", name: "web", source: "apps", phase: "Failed", ready: "False", minutesAgo: 5},
		dashRow{ns: "staging", name: "worker", source: "apps", phase: "Ready", observed: 1, ready: "True"},
		dashRow{ns: "staging", name: "zeta", source: "apps", phase: "Ready", observed: 1, ready: "True"},
	)
	for _, e := range []Event{
		{Namespace: "prod", Kind: "Queue", Name: "orders", Source: "infra", Type: EventNormal, Reason: "Created"},
		{Namespace: "staging", Kind: "Queue", Name: "web", Source: "apps", Type: EventWarning, Reason: "ActionFailed"},
		{Source: "infra", Type: EventWarning, Reason: "FetchFailed"},
		{Source: "apps", Type: EventNormal, Reason: "Recovered"},
		{Source: "empty", Type: EventWarning, Reason: "FetchFailed"},
		{Type: EventWarning, Reason: "Global"},
	} {
		if err := st.AddEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	staging := InNamespaces("staging")

	// Resources, two to a page: pages and tokens stay within the scope.
	var names []string
	for f := (ResourceFilter{Limit: 2}); ; {
		items, next, err := st.ListResources(ctx, staging, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			names = append(names, it.Metadata.Namespace+"/"+it.Metadata.Name)
		}
		if next == "" {
			break
		}
		f.Continue = next
	}
	if want := []string{"staging/web", "staging/worker", "staging/zeta"}; !reflect.DeepEqual(names, want) {
		t.Errorf("resources %v, want %v", names, want)
	}
	// A filter naming another namespace finds nothing, it does not widen the scope.
	if items, _, err := st.ListResources(ctx, staging, ResourceFilter{Namespace: "prod"}); err != nil || len(items) != 0 {
		t.Errorf("prod through a staging scope: %v %v", items, err)
	}
	// The search.
	sums, _, err := st.ListResourceSummaries(ctx, staging, SummaryFilter{Query: "or"})
	if err != nil || len(sums) != 1 || sums[0].Name != "worker" {
		t.Errorf("search: %+v %v", sums, err)
	}
	if sums, _, err := st.ListResourceSummaries(ctx, Scope{}, SummaryFilter{}); err != nil || len(sums) != 0 {
		t.Errorf("zero scope: %+v %v", sums, err)
	}

	counts, err := st.CountResources(ctx, staging)
	if err != nil {
		t.Fatal(err)
	}
	if want := []PhaseCount{{Source: "apps", Phase: "Failed", Count: 1}, {Source: "apps", Phase: "Ready", Count: 2}}; !reflect.DeepEqual(counts, want) {
		t.Errorf("counts %+v, want %+v", counts, want)
	}
	// Both ways of counting agree where they overlap.
	all, err := st.CountResources(ctx, Everything)
	if err != nil {
		t.Fatal(err)
	}
	scopedAll, err := st.CountResources(ctx, InNamespaces("dev", "prod", "staging"))
	if err != nil || !reflect.DeepEqual(all, scopedAll) {
		t.Errorf("counts of every namespace %+v, of Everything %+v (%v)", scopedAll, all, err)
	}

	fails, err := st.RecentFailures(ctx, staging, 10)
	if err != nil || len(fails) != 1 || fails[0].Name != "web" {
		t.Errorf("failures %+v %v", fails, err)
	}
	nss, err := st.ListNamespaces(ctx, InNamespaces("staging", "prod", "nothing-here"), 0)
	if err != nil || !reflect.DeepEqual(nss, []string{"prod", "staging"}) {
		t.Errorf("namespaces %v %v", nss, err)
	}

	evs, err := st.ListEvents(ctx, staging, EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, e := range evs {
		reasons = append(reasons, e.Source+"/"+e.Namespace+"/"+e.Reason)
	}
	if want := []string{"apps//Recovered", "apps/staging/ActionFailed"}; !reflect.DeepEqual(reasons, want) {
		t.Errorf("events %v, want %v", reasons, want)
	}
	if evs, err := st.ListEvents(ctx, staging, EventFilter{Source: "infra"}); err != nil || len(evs) != 0 {
		t.Errorf("infra's events through a staging scope: %+v %v", evs, err)
	}
	if evs, err := st.ListEvents(ctx, Everything, EventFilter{}); err != nil || len(evs) != 6 {
		t.Errorf("every event: %d %v", len(evs), err)
	}

	srcs, err := st.ListSources(ctx, staging)
	if err != nil || len(srcs) != 1 || srcs[0].Name != "apps" {
		t.Errorf("sources %+v %v", srcs, err)
	}
	if names, err := st.VisibleSources(ctx, Everything); err != nil || !reflect.DeepEqual(names, []string{"apps", "empty", "infra"}) {
		t.Errorf("every source %v %v", names, err)
	}
	for _, c := range []struct {
		scope  Scope
		source string
		want   bool
	}{
		{staging, "apps", true},
		{staging, "infra", false},
		{staging, "empty", false},
		{staging, "missing", false},
		{InNamespaces("prod", "dev"), "apps", true},
		{Everything, "empty", true},
		{Everything, "missing", false},
		{Scope{}, "apps", false},
	} {
		if ok, err := st.SourceVisible(ctx, c.scope, c.source); err != nil || ok != c.want {
			t.Errorf("%v sees %s: %v %v, want %v", c.scope, c.source, ok, err, c.want)
		}
	}
}
