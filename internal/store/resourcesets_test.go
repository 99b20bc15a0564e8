package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/trueup-dev/trueup/internal/manifest"
)

// tenantSet is what the loader makes of a ResourceSet tenant-dbs in namespace production
// (file sets/FILE.yaml, line 3) of the tenants given × two regions: a Database each, labelled
// with the set, and the set's info.
func tenantSet(file string, tenants ...string) *manifest.Set {
	set := &manifest.Set{}
	for _, tn := range tenants {
		for _, region := range []string{"eu", "us"} {
			spec := json.RawMessage(fmt.Sprintf(`{"region":%q,"tenant":%q}`, region, tn))
			set.Resources = append(set.Resources, manifest.Resource{APIVersion: "example.com/v1", Kind: "Database",
				Namespace: "production", Name: "db-" + tn + "-" + region,
				Labels:      map[string]string{manifest.LabelResourceSet: "tenant-dbs"},
				Annotations: map[string]string{}, Spec: spec, SpecHash: string(spec), MetaHash: "tenant-dbs",
				File: "sets/" + file + ".yaml", Line: 9})
		}
	}
	set.ResourceSets = []manifest.ResourceSetInfo{{Namespace: "production", Name: "tenant-dbs", File: "sets/" + file + ".yaml",
		Line: 3, Inputs: 2 * len(tenants), Members: len(set.Resources)}}
	return set
}

func getSet(t *testing.T, st *Store, sc Scope, ns, name string) ResourceSet {
	t.Helper()
	rs, err := st.GetResourceSet(context.Background(), sc, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestResourceSetApply: a revision's set is written with its counts in the revision's
// transaction; an input removed prunes its members and updates the counts; a refused prune
// keeps them; a set gone from the revision loses its row.
func TestResourceSetApply(t *testing.T) {
	t.Parallel()
	st := openTest(t, "a")
	ctx := context.Background()
	apply := func(rev string, set *manifest.Set) ApplyResult {
		t.Helper()
		res, err := st.ApplyRevision(ctx, ApplyParams{Source: "a", Revision: rev, Set: set, Prune: true, AllowEmpty: true})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := apply("r1", tenantSet("a", "acme", "globex", "initech")); res.Created != 6 {
		t.Fatalf("created %d, want 6", res.Created)
	}
	rs := getSet(t, st, Everything, "production", "tenant-dbs")
	want := ResourceSet{Namespace: "production", Name: "tenant-dbs", Source: "a", Path: "sets/a.yaml", Line: 3, Revision: "r1",
		Inputs: 6, Members: 6, Phases: map[string]int{"Pending": 6}, CreatedAt: rs.CreatedAt, UpdatedAt: rs.UpdatedAt}
	if fmt.Sprint(rs) != fmt.Sprint(want) || rs.CreatedAt.IsZero() {
		t.Fatalf("set = %+v\nwant %+v", rs, want)
	}
	if _, err := st.pool.Exec(ctx, "UPDATE resources SET phase = 'Ready' WHERE name LIKE 'db-acme-%'"); err != nil {
		t.Fatal(err)
	}
	// A resource of the same name in another namespace, or without the label, is no member.
	other := tenantSet("a", "acme", "globex", "initech")
	stray := other.Resources[0]
	stray.Name, stray.Labels = "unlabelled", map[string]string{}
	other.Resources = append(other.Resources, stray)
	apply("r2", other)
	if rs := getSet(t, st, Everything, "production", "tenant-dbs"); !maps.Equal(rs.Phases, map[string]int{"Ready": 2, "Pending": 4}) || rs.Revision != "r1" {
		t.Errorf("unchanged set: phases %v, revision %s; want Ready 2, Pending 4 at r1", rs.Phases, rs.Revision)
	}

	// globex removed: its two Databases are deleted; a member being deleted counts (as
	// Deleting) until it is gone.
	if res := apply("r3", tenantSet("a", "acme", "initech")); res.Deleted != 3 { // globex's 2 and the stray
		t.Fatalf("deleted %d, want 3", res.Deleted)
	}
	rs = getSet(t, st, Everything, "production", "tenant-dbs")
	if rs.Inputs != 4 || rs.Members != 4 || rs.Revision != "r3" || !maps.Equal(rs.Phases, map[string]int{"Ready": 2, "Pending": 2, "Deleting": 2}) {
		t.Errorf("after removing an input: %+v", rs)
	}
	if a := readApplied(t, st, "a"); strings.Join(a.Deleting, ",") != "db-globex-eu,db-globex-us,unlabelled" {
		t.Errorf("deleting %v", a.Deleting)
	}

	// Removing two of the three remaining inputs' worth is more than half: pruning is
	// refused, the members stay; the row says what the revision generates.
	res := apply("r4", tenantSet("a", "zeta"))
	if res.PruneSkipped == "" || res.Deleted != 0 {
		t.Fatalf("prune skipped %q, deleted %d: want a refusal", res.PruneSkipped, res.Deleted)
	}
	if rs := getSet(t, st, Everything, "production", "tenant-dbs"); rs.Members != 2 || rs.Revision != "r4" {
		t.Errorf("after a refused prune: %+v", rs)
	}

	// The set gone from the revision: its row goes.
	apply("r5", &manifest.Set{})
	if _, err := st.GetResourceSet(ctx, Everything, "production", "tenant-dbs"); !errors.Is(err, ErrNotFound) {
		t.Errorf("removed set: %v, want not found", err)
	}
}

// TestResourceSetConflict: a set another source declares is refused at the set's file:line,
// nothing of the revision is written; a suspended source's revision writes no set.
func TestResourceSetConflict(t *testing.T) {
	t.Parallel()
	st := openTest(t, "a", "b")
	ctx := context.Background()
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "a", Revision: "r1", Set: tenantSet("a", "acme")}); err != nil {
		t.Fatal(err)
	}
	b := tenantSet("b", "globex")
	_, err := st.ApplyRevision(ctx, ApplyParams{Source: "b", Revision: "r1", Set: b})
	var ce *ConflictError
	const want = "sets/b.yaml:3: metadata.name: ResourceSet production/tenant-dbs is already declared by source a (sets/a.yaml)"
	if !errors.As(err, &ce) || ce.Error() != want {
		t.Fatalf("apply b: %v, want a ConflictError %q", err, want)
	}
	if n, err := st.pool.Exec(ctx, "SELECT 1 FROM resources WHERE source = 'b'"); err != nil || n.RowsAffected() != 0 {
		t.Errorf("b wrote %d resources (%v)", n.RowsAffected(), err)
	}

	// Declared by a between b's check and its write: the write refuses it, a's row stands.
	err = st.inTx(ctx, func(tx pgx.Tx) error {
		return applyResourceSets(ctx, tx, ApplyParams{Source: "b", Revision: "r1", Set: b})
	})
	if !errors.As(err, &ce) || ce.Error() != want {
		t.Errorf("b's write: %v, want a ConflictError %q", err, want)
	}
	if rs := getSet(t, st, Everything, "production", "tenant-dbs"); rs.Source != "a" || rs.Path != "sets/a.yaml" {
		t.Errorf("after b's write: %+v", rs)
	}

	if err := st.SetSourceSuspended(ctx, "a", true, "user:bob", ""); err != nil {
		t.Fatal(err)
	}
	held := tenantSet("a", "acme", "globex")
	held.ResourceSets = append(held.ResourceSets, manifest.ResourceSetInfo{Namespace: "staging", Name: "more", File: "sets/more.yaml", Line: 1})
	res, err := st.ApplyRevision(ctx, ApplyParams{Source: "a", Revision: "r2", Set: held})
	if err != nil || !res.Held {
		t.Fatalf("held apply: %+v %v", res, err)
	}
	items, err := st.ListResourceSets(ctx, Everything, ResourceSetFilter{})
	if err != nil || len(items) != 1 || items[0].Revision != "r1" || items[0].Members != 2 {
		t.Errorf("after a held revision: %+v %v", items, err)
	}
}

// TestResourceSetList: the list filters by namespace and source and is scoped like resources;
// a set out of scope is not found, exactly like a missing one.
func TestResourceSetList(t *testing.T) {
	t.Parallel()
	st := openTest(t, "a", "b")
	ctx := context.Background()
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "a", Revision: "r1", Set: tenantSet("a", "acme")}); err != nil {
		t.Fatal(err)
	}
	b := &manifest.Set{ResourceSets: []manifest.ResourceSetInfo{{Namespace: "staging", Name: "caches", File: "c.yaml", Line: 1}}}
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "b", Revision: "r1", Set: b}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sc   Scope
		f    ResourceSetFilter
		want string
	}{
		{Everything, ResourceSetFilter{}, "production/tenant-dbs staging/caches"},
		{Everything, ResourceSetFilter{Source: "b"}, "staging/caches"},
		{Everything, ResourceSetFilter{Namespace: "production"}, "production/tenant-dbs"},
		{InNamespaces("staging"), ResourceSetFilter{}, "staging/caches"},
		{InNamespaces("staging"), ResourceSetFilter{Namespace: "production"}, ""},
		{Scope{}, ResourceSetFilter{}, ""},
	} {
		items, err := st.ListResourceSets(ctx, c.sc, c.f)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, rs := range items {
			got = append(got, rs.Namespace+"/"+rs.Name)
			if rs.Phases == nil {
				t.Errorf("%s: phases nil", rs.Name)
			}
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("scope %v, filter %+v: %v, want %q", c.sc, c.f, got, c.want)
		}
	}
	if _, err := st.GetResourceSet(ctx, InNamespaces("staging"), "production", "tenant-dbs"); !errors.Is(err, ErrNotFound) {
		t.Errorf("out of scope: %v, want not found", err)
	}
	if rs := getSet(t, st, InNamespaces("staging"), "staging", "caches"); rs.Source != "b" || len(rs.Phases) != 0 {
		t.Errorf("in scope: %+v", rs)
	}
}

// TestResourceSetCountUsesIndex: the members are counted by the partial index on the label,
// not by reading every resource: with a few thousand resources, one in a hundred a set's
// member, and their statistics, the planner chooses the index.
func TestResourceSetCountUsesIndex(t *testing.T) {
	t.Parallel()
	st := openTest(t, "git")
	ctx := context.Background()
	if _, err := st.pool.Exec(ctx, `INSERT INTO resources (namespace, kind, name, api_version, source, labels, spec_hash, meta_hash)
		SELECT 'production', 'Database', 'db-' || i, 'example.com/v1', 'git',
		  CASE WHEN i % 100 = 0 THEN jsonb_build_object('trueup.dev/resource-set', 'tenant-dbs', 'team', 'a') ELSE '{"team": "a"}' END, '', ''
		FROM generate_series(1, 5000) i`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.pool.Exec(ctx, "ANALYZE resources"); err != nil {
		t.Fatal(err)
	}
	rows, err := st.pool.Query(ctx, "EXPLAIN "+resourceSetSelect+" WHERE s.namespace = 'production' AND s.name = 'tenant-dbs'")
	if err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan.String(), "resources_resource_set") {
		t.Errorf("the count does not use resources_resource_set:\n%s", plan.String())
	}
}
