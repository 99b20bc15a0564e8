package store

import (
	"context"
	"testing"

	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
)

// TestLabelSelectorKeepsItsIndex lists, on one connection, a selector that matches nothing
// more times than PostgreSQL's plan cache takes to switch a prepared statement to a generic
// plan (five), then a label half the resources carry: each list is planned for its own
// values (the rare label through the labels index, the common one by the identity index,
// stopping after the page), where one generic plan serves one of them badly.
func TestLabelSelectorKeepsItsIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := Open(ctx, pgtest.NewDatabase(t, MigrateURL), Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.pool.Exec(ctx, `INSERT INTO resources (namespace, kind, name, api_version, source, spec_hash, meta_hash, labels, phase)
		SELECT 'ns' || (i % 200), 'Thing', 't' || i, 'v1', 'a', 'h', 'h', jsonb_build_object('team', 't' || (i % 2)), 'Ready'
		FROM generate_series(1, 200000) i`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.pool.Exec(ctx, `ANALYZE resources`); err != nil {
		t.Fatal(err)
	}
	// The pool's one connection runs every statement below: its statistics are flushed
	// before each read of them.
	labelScans := func() int64 {
		t.Helper()
		if _, err := st.pool.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := st.pool.QueryRow(ctx, `SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 'resources_labels'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const runs = 8
	for _, list := range []struct {
		name string
		run  func(sel string) (int, error)
	}{
		{"api", func(sel string) (int, error) {
			items, _, err := st.ListResources(ctx, Everything, ResourceFilter{LabelSelector: sel})
			return len(items), err
		}},
		{"dashboard", func(sel string) (int, error) {
			items, _, err := st.ListResourceSummaries(ctx, Everything, SummaryFilter{LabelSelector: sel})
			return len(items), err
		}},
	} {
		before := labelScans()
		for i := 0; i < runs; i++ {
			n, err := list.run("team=nobody")
			if err != nil || n != 0 {
				t.Fatalf("%s: %d items, %v", list.name, n, err)
			}
		}
		rare := labelScans() - before
		if rare < runs {
			t.Errorf("%s: %d scans of the labels index in %d lists of a label no resource has", list.name, rare, runs)
		}
		// Half the resources have team=t1: its plan walks the identity index and stops after
		// the page; a generic plan made for the rare label reads all of them through the
		// labels index and sorts them.
		before = labelScans()
		if n, err := list.run("team=t1"); err != nil || n != 100 {
			t.Fatalf("%s: %d items, %v", list.name, n, err)
		}
		if common := labelScans() - before; common != 0 {
			t.Errorf("%s: a common label after %d rare ones is read through the labels index (a generic plan)", list.name, runs)
		}
	}
}
