package store

import (
	"context"
	"maps"
	"testing"
)

// TestResourceCountsFollowWrites: the per-source totals the triggers keep (migration 0029)
// equal a count of the rows after every kind of write, and folding them changes no sum.
func TestResourceCountsFollowWrites(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	for _, step := range []struct{ name, sql string }{
		{"insert many", `INSERT INTO resources (namespace, kind, name, api_version, source, spec_hash, meta_hash)
			SELECT 'ns', 'Thing', 't' || i, 'v1', CASE WHEN i % 3 = 0 THEN 'a' ELSE 'b' END, 'h', 'h' FROM generate_series(1, 30) i`},
		{"upsert keeping the source", `INSERT INTO resources (namespace, kind, name, api_version, source, spec_hash, meta_hash)
			VALUES ('ns', 'Thing', 't1', 'v1', 'b', 'h2', 'h'), ('ns', 'Thing', 'new', 'v1', 'a', 'h', 'h')
			ON CONFLICT (namespace, lower(kind), name) DO UPDATE SET source = EXCLUDED.source, spec_hash = EXCLUDED.spec_hash`},
		{"move to another source", `UPDATE resources SET source = 'c' WHERE name IN ('t2', 't3')`},
		{"status write", `UPDATE resources SET phase = 'Ready'`},
		{"delete some", `DELETE FROM resources WHERE name IN ('t4', 't5', 't6')`},
		{"fold", ``},
		{"delete a source's last", `DELETE FROM resources WHERE source = 'c'`},
		{"fold again", ``},
		{"truncate", `TRUNCATE resources CASCADE`},
	} {
		var err error
		if step.sql == "" {
			err = st.foldResourceCounts(ctx)
		} else {
			_, err = st.pool.Exec(ctx, step.sql)
		}
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		kept, counted := sums(t, st, `SELECT source, sum(n) FROM resource_counts GROUP BY source HAVING sum(n) <> 0`),
			sums(t, st, `SELECT source, count(*) FROM resources GROUP BY source`)
		if !maps.Equal(kept, counted) {
			t.Errorf("%s: kept %v, counted %v", step.name, kept, counted)
		}
	}
}

func sums(t *testing.T, st *Store, q string) map[string]int64 {
	t.Helper()
	rows, err := st.pool.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var s string
		var n int64
		if err := rows.Scan(&s, &n); err != nil {
			t.Fatal(err)
		}
		out[s] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
