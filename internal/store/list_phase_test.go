package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/manifest"
)

// A page filtered by phase is read in steps that do not depend on resource_phases'
// statistics (readPage): whatever the phase's share, the pages hold exactly the rows in that
// phase, in the list's order, and the step that serves each share is the cheap one.
func TestListPhaseSteps(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r1", Set: widgets(3000, func(int) int { return 1 }), Prune: true}); err != nil {
		t.Fatal(err)
	}
	// The statistics say every row is Pending (autovacuum, which would take them again, is
	// off); then 150 become Slow, a third of the others Ready, 20 Failed and 2 Stalled, the
	// Stalled ones at the end of the list's order.
	for _, sql := range []string{"ALTER TABLE resources SET (autovacuum_enabled = false)", "ALTER TABLE resource_phases SET (autovacuum_enabled = false)",
		"ANALYZE resources, resource_phases"} {
		if _, err := st.pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.pool.Exec(ctx, `UPDATE resources SET phase = CASE
		WHEN name IN ('w998', 'w999') THEN 'Stalled'
		WHEN substr(name, 2)::int % 20 = 7 THEN 'Slow'
		WHEN substr(name, 2)::int % 3 = 0 THEN 'Ready'
		WHEN substr(name, 2)::int % 100 = 1 THEN 'Failed'
		ELSE phase END`); err != nil {
		t.Fatal(err)
	}
	st.pageIDCap = 100
	want := func(phase string) []string {
		rows, err := st.pool.Query(ctx, `SELECT name FROM resources WHERE phase = $1 ORDER BY namespace, lower(kind), name`, phase)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var names []string
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			names = append(names, n)
		}
		return names
	}
	for _, c := range []struct {
		phase string
		limit int
		first []phaseStep // the steps of the first page
		f     ResourceFilter
	}{
		{"Ready", 100, []phaseStep{phaseWalk}, ResourceFilter{}},              // a third: the walk fills the page
		{"Failed", 100, []phaseStep{phaseWalk, phaseByID}, ResourceFilter{}},  // 20, fewer than the cap: by id, complete
		{"Pending", 100, []phaseStep{phaseWalk}, ResourceFilter{}},            // most rows
		{"Stalled", 5, []phaseStep{phaseWalk, phaseByID}, ResourceFilter{}},   // two, at the end of the order
		{"Ready", 3, []phaseStep{phaseWalk}, ResourceFilter{}},                // a small page
		{"Unknown", 100, []phaseStep{phaseWalk, phaseByID}, ResourceFilter{}}, // none
		{"Failed", 7, nil, ResourceFilter{}},                                  // pages of 7 among 20
		{"Slow", 100, []phaseStep{phaseWalk, phasePlanned}, ResourceFilter{}}, // 150, more than the cap, few in the walk
		{"Slow", 30, nil, ResourceFilter{}},
		// The other filters with the phase: the same steps, the same rows.
		{"Ready", 100, []phaseStep{phaseWalk}, ResourceFilter{Kind: "widget", Namespace: "default", LabelSelector: "team=a"}},
		{"Failed", 100, []phaseStep{phaseWalk, phaseByID}, ResourceFilter{Source: "s"}},
		// Fewer rows left after the token than the walk checks: the walk is the page.
		{"Stalled", 100, []phaseStep{phaseWalk}, ResourceFilter{Continue: nextToken("default", "Widget", "w990")}},
	} {
		name := fmt.Sprintf("%s by %d", c.phase, c.limit)
		var steps []phaseStep
		st.pageStep = func(s phaseStep) { steps = append(steps, s) }
		var got []string
		token := ""
		for page := 0; ; page++ {
			steps = steps[:0]
			f := c.f
			f.Phase, f.Limit = c.phase, c.limit
			if token != "" {
				f.Continue = token
			}
			items, next, err := st.ListResources(ctx, Everything, f)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if page == 0 && c.first != nil && !slices.Equal(steps, c.first) {
				t.Errorf("%s: first page in steps %v, want %v", name, steps, c.first)
			}
			for _, it := range items {
				if it.Status.Phase != c.phase {
					t.Errorf("%s: %s is %s", name, it.Metadata.Name, it.Status.Phase)
				}
				got = append(got, it.Metadata.Name)
			}
			if next == "" {
				break
			}
			token = next
		}
		st.pageStep = nil
		w := want(c.phase)
		if c.f.Continue != "" {
			w = slices.DeleteFunc(w, func(n string) bool { return n <= "w990" })
		}
		if !slices.Equal(got, w) {
			t.Errorf("%s: pages hold %d rows %v…, want %d %v…", name, len(got), head(got), len(w), head(w))
		}
	}
	// The dashboard's table reads its pages the same way.
	sums, next, err := st.ListResourceSummaries(ctx, Everything, SummaryFilter{Phase: "Failed", Query: "w1", Limit: 100})
	if err != nil || next != "" {
		t.Fatalf("summaries: next %q, %v", next, err)
	}
	var names []string
	for _, s := range sums {
		names = append(names, s.Name)
	}
	var w []string
	for _, n := range want("Failed") {
		if strings.Contains(n, "w1") {
			w = append(w, n)
		}
	}
	if !slices.Equal(names, w) {
		t.Errorf("summaries of Failed named w1…: %v, want %v", names, w)
	}
	// The walk's rows come out in the page's order, so it stops once the page is full.
	if plan := listPlan(t, st, ResourceFilter{Phase: "Ready"}, phaseWalk, nil); !strings.Contains(plan, "resources_identity") || strings.Contains(plan, "Sort") {
		t.Errorf("phaseWalk's plan:\n%s", plan)
	}
	// So do they when a filter holds a column of the order to one value, which the
	// subquery's order then leaves out.
	for _, f := range []ResourceFilter{{Phase: "Ready", Kind: "widget"}, {Phase: "Ready", Namespace: "default"}, {Phase: "Ready", Kind: "Widget", Namespace: "default"}} {
		if plan := listPlan(t, st, f, phaseWalk, nil); strings.Contains(plan, "Sort") {
			t.Errorf("phaseWalk's plan, kind %q, namespace %q:\n%s", f.Kind, f.Namespace, plan)
		}
	}
}

func head(s []string) []string { return s[:min(len(s), 5)] }

// TestListPhaseWalkFixedOrder: with a kind or a namespace filter, the phase walk orders its
// rows without that column (walkOrder); the pages, read in turn, are the rows of the phase in
// the list's order all the same, over namespaces and kinds (one spelled in two cases).
func TestListPhaseWalkFixedOrder(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	set := &manifest.Set{}
	for _, ns := range []string{"b", "a"} {
		for k, kind := range []string{"Widget", "widget", "Gadget"} {
			for i := range 12 {
				set.Resources = append(set.Resources, manifest.Resource{APIVersion: "example.com/v1", Kind: kind, Namespace: ns,
					Name: fmt.Sprintf("n%d-%02d", k, 11-i), Labels: map[string]string{}, Annotations: map[string]string{},
					Spec: json.RawMessage(`{}`), SpecHash: "h", MetaHash: "m", File: "f.yaml", Line: i + 1})
			}
		}
	}
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r1", Set: set, Prune: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.pool.Exec(ctx, `UPDATE resources SET phase = 'Ready' WHERE right(name, 1) <> '3'`); err != nil {
		t.Fatal(err)
	}
	for _, f := range []ResourceFilter{{Kind: "WIDGET"}, {Namespace: "a"}, {Kind: "gadget", Namespace: "b"}} {
		rows, err := st.pool.Query(ctx, `SELECT namespace || '/' || kind || '/' || name FROM resources
			WHERE phase = 'Ready' AND ($1 = '' OR lower(kind) = lower($1)) AND ($2 = '' OR namespace = $2)
			ORDER BY namespace, lower(kind), name`, f.Kind, f.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		want, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for token := ""; ; {
			page := f
			page.Phase, page.Limit, page.Continue = "Ready", 5, token
			items, next, err := st.ListResources(ctx, Everything, page)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				got = append(got, it.Metadata.Namespace+"/"+it.Kind+"/"+it.Metadata.Name)
			}
			if token = next; token == "" {
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("kind %q, namespace %q: pages %v, want %v", f.Kind, f.Namespace, got, want)
		}
	}
}

// TestWalkOrder: the walk's outer order is the page's without the columns a filter holds
// to one value.
func TestWalkOrder(t *testing.T) {
	for _, c := range []struct {
		kind, ns bool
		want     string
	}{
		{false, false, " ORDER BY namespace, kind_key, name"},
		{true, false, " ORDER BY namespace, name"},
		{false, true, " ORDER BY kind_key, name"},
		{true, true, " ORDER BY name"},
	} {
		if got := (pageQuery{kindFixed: c.kind, nsFixed: c.ns}).walkOrder(); got != c.want {
			t.Errorf("kind fixed %t, namespace fixed %t: %q, want %q", c.kind, c.ns, got, c.want)
		}
	}
}
