package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// Migration 0032 builds the name search's trigram index on lower(name): with the table's
// statistics the planner no longer probes it for a name equality (a dependency's lookup),
// and the search still finds names case-insensitively, through it.
func TestMigration0032NameSearch(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r1", Set: widgets(2000, func(i int) int { return i })}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.pool.Exec(ctx, `ANALYZE resources`); err != nil {
		t.Fatal(err)
	}
	plan := func(sql string, args ...any) string { return explain(t, st.pool, sql, args...) }
	// A dependency's lookup, as the claim's inputs and the refresh of dependents make it.
	const lookup = `SELECT d.id FROM unnest($1::text[], $2::text[], $3::text[]) AS e(ns, kind, name)
		JOIN resources d ON d.namespace = e.ns AND lower(d.kind) = lower(e.kind) AND d.name = e.name`
	lookupArgs := []any{[]string{"default", "default"}, []string{"Widget", "Widget"}, []string{"w07", "w42"}}
	search := func(when string) {
		t.Helper()
		got, _, err := st.ListResourceSummaries(ctx, Everything, SummaryFilter{Query: "W4", Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for i := range 2000 {
			if strings.HasPrefix(fmt.Sprintf("w%02d", i), "w4") {
				want++
			}
		}
		if len(got) != want {
			t.Errorf("%s: the search for W4 lists %d, want %d", when, len(got), want)
		}
	}
	run := func(file string) { runMigrationFile(t, st, file) }
	def := func() string {
		var d string
		if err := st.pool.QueryRow(ctx, `SELECT indexdef FROM pg_indexes WHERE indexname = 'resources_name_trgm'`).Scan(&d); err != nil {
			t.Fatal(err)
		}
		return d
	}

	if d := def(); !strings.Contains(d, "lower(name)") {
		t.Fatalf("migrated: %s", d)
	}
	if p := plan(lookup, lookupArgs...); strings.Contains(p, "resources_name_trgm") {
		t.Errorf("a name equality probes the trigram index:\n%s", p)
	}
	// A table this small is read whole; the index is what a larger one is read through.
	tx, err := st.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	searchPlan := explain(t, tx, `SELECT id FROM resources WHERE lower(name) LIKE lower($1)`, "%w4%")
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if p := searchPlan; !strings.Contains(p, "resources_name_trgm") {
		t.Errorf("the search does not read the trigram index:\n%s", p)
	}
	search("migrated")
	run("0032_name_search_lower.down.sql")
	if d := def(); strings.Contains(d, "lower(name)") {
		t.Errorf("down: %s", d)
	}
	search("down")
	run("0032_name_search_lower.up.sql")
	if d := def(); !strings.Contains(d, "lower(name)") {
		t.Errorf("up again: %s", d)
	}
}

// Where 0005 built no trigram index (pg_trgm unavailable), 0032 changes nothing, up or down.
func TestMigration0032WithoutTheIndex(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	if _, err := st.pool.Exec(ctx, `DROP INDEX resources_name_trgm`); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"0032_name_search_lower.down.sql", "0032_name_search_lower.up.sql"} {
		runMigrationFile(t, st, file)
		var n int
		if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE tablename = 'resources' AND indexname LIKE 'resources_name_trgm%'`).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s without the index: %d trigram indexes, %v", file, n, err)
		}
	}
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r1", Set: widgets(3, func(int) int { return 1 })}); err != nil {
		t.Fatal(err)
	}
	if got, _, err := st.ListResourceSummaries(ctx, Everything, SummaryFilter{Query: "W0"}); err != nil || len(got) != 3 {
		t.Errorf("a search without the index: %d, %v", len(got), err)
	}
}
