package store

import (
	"context"
	"maps"
	"math/rand"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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

// TestResourceCountsTruncateDuringFold truncates resources while a fold holds its
// transaction open: once the fold commits and the TRUNCATE ends, no count is left.
func TestResourceCountsTruncateDuringFold(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	if _, err := st.pool.Exec(ctx, `INSERT INTO resources (namespace, kind, name, api_version, source, spec_hash, meta_hash)
		SELECT 'ns', 'Thing', 't' || i, 'v1', 'a', 'h', 'h' FROM generate_series(1, 10) i`); err != nil {
		t.Fatal(err)
	}
	fold := openFold(t, st)
	done := make(chan error, 1)
	go func() { _, err := st.pool.Exec(ctx, `TRUNCATE resources CASCADE`); done <- err }()
	// The TRUNCATE's trigger waits for the fold's locks.
	deadline := time.Now().Add(time.Minute)
	for {
		var waiting bool
		if err := st.pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE 'TRUNCATE resources%' AND wait_event_type = 'Lock')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the TRUNCATE does not wait for the fold after a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := fold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if kept := sums(t, st, `SELECT source, sum(n) FROM resource_counts GROUP BY source HAVING sum(n) <> 0`); len(kept) != 0 {
		t.Errorf("counts left after the truncate: %v", kept)
	}
}

// TestResourceCountsConcurrentWritesAndFolds runs writers (inserts and upserts that move
// resources between sources, deletes, source changes, a quarter rolled back) beside two
// folding loops: the kept totals equal a count of the rows at the end.
func TestResourceCountsConcurrentWritesAndFolds(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			for i := 0; i < 150; i++ {
				tx, err := st.pool.Begin(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				src := []string{"a", "b", "c"}[rng.Intn(3)]
				lo := rng.Intn(200)
				var e error
				switch rng.Intn(3) {
				case 0:
					_, e = tx.Exec(ctx, `INSERT INTO resources (namespace, kind, name, api_version, source, spec_hash, meta_hash)
						SELECT 'ns','Thing','t'||i,'v1',$1,'h','h' FROM generate_series($2::int, $2::int+20) i
						ON CONFLICT (namespace, lower(kind), name) DO UPDATE SET source = EXCLUDED.source`, src, lo)
				case 1:
					_, e = tx.Exec(ctx, `DELETE FROM resources WHERE name IN (SELECT 't'||i FROM generate_series($1::int, $1::int+10) i)`, lo)
				case 2:
					_, e = tx.Exec(ctx, `UPDATE resources SET source = $1 WHERE name IN (SELECT 't'||i FROM generate_series($2::int, $2::int+5) i)`, src, lo)
				}
				if e != nil { // a deadlock between writers: roll back
					_ = tx.Rollback(ctx)
					continue
				}
				if rng.Intn(4) == 0 {
					_ = tx.Rollback(ctx)
				} else {
					_ = tx.Commit(ctx) // a writer that lost a deadlock commits nothing
				}
			}
		}(w)
	}
	for f := 0; f < 2; f++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 60; i++ {
				if err := st.foldResourceCounts(ctx); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	kept, counted := sums(t, st, `SELECT source, sum(n) FROM resource_counts GROUP BY source HAVING sum(n) <> 0`),
		sums(t, st, `SELECT source, count(*) FROM resources GROUP BY source`)
	if !maps.Equal(kept, counted) {
		t.Errorf("after concurrent writes and folds: kept %v, counted %v", kept, counted)
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

// TestSourceResourceTotals: a source's counts from the kept totals and partial indexes equal
// a count of its rows (the scoped query, which reads them).
func TestSourceResourceTotals(t *testing.T) {
	t.Parallel()
	st := openTest(t, "infra")
	ctx := context.Background()
	if _, err := st.pool.Exec(ctx, `INSERT INTO resources (namespace, kind, name, api_version, source, spec_hash, meta_hash, phase,
			deletion_timestamp, orphaned)
		SELECT CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END, 'Thing', 't' || i, 'v1', CASE WHEN i % 7 = 0 THEN 'apps' ELSE 'infra' END, 'h', 'h',
			(ARRAY['Ready', 'Ready', 'Failed', 'Pending', 'Deleting'])[i % 5 + 1],
			CASE WHEN i % 5 = 4 THEN now() END, i % 11 = 0
		FROM generate_series(1, 60) i`); err != nil {
		t.Fatal(err)
	}
	for _, source := range []string{"infra", "apps", "none"} {
		got, err := st.SourceResourceCounts(ctx, Everything, source)
		if err != nil {
			t.Fatal(err)
		}
		want, err := st.SourceResourceCounts(ctx, InNamespaces("a", "b"), source)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, counted %+v", source, got, want)
		}
	}
}

// openFold folds resource_counts in a transaction it leaves open.
func openFold(t *testing.T, st *Store) pgx.Tx {
	t.Helper()
	fold, err := st.pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fold.Rollback(context.Background()) }) //nolint:errcheck
	if _, err := fold.Exec(context.Background(), foldCountsSQL); err != nil {
		t.Fatal(err)
	}
	return fold
}
