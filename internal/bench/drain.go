package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/internal/cputime"
	"github.com/trueup-dev/trueup/internal/pgembed"
	"github.com/trueup-dev/trueup/internal/store"
)

// drainSize is the number of resources of the drain group: TRUEUP_BENCH_DRAIN, or 100,000.
func drainSize() (int, error) {
	v := os.Getenv("TRUEUP_BENCH_DRAIN")
	if v == "" {
		return 100000, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1000 || n > 200000 {
		return 0, fmt.Errorf("TRUEUP_BENCH_DRAIN=%q: want a number of resources from 1000 to 200000", v)
	}
	return n, nil
}

// drainFresh is the drain group (run only when named): n resources applied in one revision,
// as a first sync leaves them (never reconciled, the table grown by n rows in one
// transaction), then drained by one replica at the default settings with the noop action, on
// a durable cluster. Beside the wall figure it prints the CPU time the drain cost, of the
// bench process (the reconciler) and of PostgreSQL (every backend, exited or not), per
// resource: on a shared machine that figure moves far less with the load than the wall one.
// The statements that cost the most (pg_stat_statements) and the table's update counts go to
// stderr.
func (b *bench) drainFresh(ctx context.Context) error {
	n, err := drainSize()
	if err != nil {
		return err
	}
	cluster, err := pgembed.Start(ctx, pgembed.Options{Dir: filepath.Join(b.dir, "pg-drain"), Logger: b.log})
	if err != nil {
		return err
	}
	defer cluster.Stop()
	if err := enableStatements(ctx, cluster); err != nil {
		return err
	}
	st, url, err := b.freshStoreOn(ctx, cluster)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := statementsView(ctx, st); err != nil {
		return err
	}
	if err := b.seed(ctx, st, n); err != nil {
		return err
	}
	// The fresh pass starts with the replica: its start readings and the profile come first.
	fresh0, err := drainBegin(ctx, st, cluster)
	if err != nil {
		return err
	}
	if path := os.Getenv("TRUEUP_BENCH_CPUPROFILE"); path != "" {
		// The profile of the bench process, the reconciler's share of the drain.
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	stop, err := b.defaultReplica(ctx, url, "bench-drain", b.log)
	if err != nil {
		return err
	}
	defer stop()
	fresh, err := drainPass(ctx, st, cluster, n, false, fresh0)
	if err != nil {
		return err
	}
	if path := os.Getenv("TRUEUP_BENCH_ALLOCPROFILE"); path != "" {
		// What the bench process allocated up to the end of the fresh pass (go tool pprof
		// -sample_index=alloc_space): the seed's load and apply, then the reconciles.
		if err := writeProfile(path, "allocs"); err != nil {
			return err
		}
	}
	again0, err := drainBegin(ctx, st, cluster)
	if err != nil {
		return err
	}
	again, err := drainPass(ctx, st, cluster, n, true, again0)
	if err != nil {
		return err
	}
	for _, p := range []struct {
		name string
		f    drainFigures
	}{{"drain_fresh", fresh}, {"drain_again", again}} {
		target, ok := "", func(float64) bool { return true }
		if p.name == "drain_fresh" {
			// What issue 26's million needs: all Ready in 150 s with a first sync of up to
			// 30 s leaves 120 s for 1,000,000 resources.
			target, ok = "≥ 8333", atLeast(8333)
		}
		record(p.name, p.f.rate, "1/s", target, ok)
		record(p.name+"_cpu_pg", p.f.pgCPU, "µs", "", nil)
		record(p.name+"_cpu_engine", p.f.engineCPU, "µs", "", nil)
		record(p.name+"_alloc_engine", p.f.engineAlloc, "B", "", nil)
	}
	return nil
}

// drainFigures are one pass's throughput and CPU time per resource (µs).
type drainFigures struct{ rate, pgCPU, engineCPU, engineAlloc float64 }

// drainStart is what a pass is measured from: CPU times and the clock.
type drainStart struct {
	pgCPU, ownCPU time.Duration
	allocs        uint64 // the bench process's heap allocations so far, bytes
	at            time.Time
}

// drainBegin resets the statement and table statistics and takes a pass's start readings.
func drainBegin(ctx context.Context, st *store.Store, cluster *pgembed.Cluster) (drainStart, error) {
	if _, err := st.Pool().Exec(ctx, "SELECT pg_stat_statements_reset(), pg_stat_reset()"); err != nil {
		return drainStart{}, err
	}
	pg, err := postgresCPU(cluster)
	if err != nil {
		return drainStart{}, err
	}
	return drainStart{pgCPU: pg, ownCPU: cputime.Self(), allocs: heapAllocs(), at: time.Now()}, nil
}

// drainPass waits until every resource is Ready, after making them all due again when again
// is set (a resync of every resource: the rows were reconciled before), and measures from s.
func drainPass(ctx context.Context, st *store.Store, cluster *pgembed.Cluster, n int, again bool, s drainStart) (drainFigures, error) {
	var f drainFigures
	var since time.Time
	if again {
		// Reconciled since the UPDATE: Ready again, due no earlier than its next resync.
		if err := st.Pool().QueryRow(ctx, "UPDATE resource_queue SET run_at = now() RETURNING now()").Scan(&since); err != nil {
			return f, err
		}
		if _, err := st.Pool().Exec(ctx, "NOTIFY "+store.WorkChannel); err != nil {
			return f, err
		}
	}
	// The rows not Ready are read from the partial index resource_phases_unsettled, and the
	// rows due from resource_queue_due: the wait does not count the table.
	err := poll(ctx, 10*time.Minute, 100*time.Millisecond, func() (bool, error) {
		var left bool
		err := st.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM resource_phases WHERE phase <> 'Ready')
			OR EXISTS (SELECT 1 FROM resource_queue WHERE run_at <= $1 AND lease_owner IS NULL AND NOT suspended AND NOT blocked)
			OR EXISTS (SELECT 1 FROM resource_queue WHERE lease_owner IS NOT NULL)`, since).Scan(&left)
		return !left, err
	})
	took := time.Since(s.at)
	pgCPU1, cpuErr := postgresCPU(cluster)
	ownCPU1 := cputime.Self()
	if err != nil {
		return f, err
	}
	if cpuErr != nil {
		return f, cpuErr
	}
	fmt.Fprintf(os.Stderr, "drain (%d resources, again %v, load %s): %s\n", n, again, loadAverage(), took.Round(time.Millisecond))
	printDrainStats(ctx, st, "drain")
	f.rate = float64(n) / took.Seconds()
	f.pgCPU = 1e6 * (pgCPU1 - s.pgCPU).Seconds() / float64(n)
	f.engineCPU = 1e6 * (ownCPU1 - s.ownCPU).Seconds() / float64(n)
	f.engineAlloc = float64(heapAllocs()-s.allocs) / float64(n)
	return f, nil
}

// writeProfile writes the named runtime/pprof profile to path.
func writeProfile(path, name string) error {
	runtime.GC() // the profile holds what the last completed collection saw
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("%s profile: %w", name, err)
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("%s profile %s: %w", name, path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s profile %s: %w", name, path, err)
	}
	return nil
}

// heapAllocs is what the process has allocated on the heap so far, in bytes: the more a
// reconcile allocates, the more often the collector marks what the process keeps.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// enableStatements loads pg_stat_statements into the bench's own cluster (a restart).
func enableStatements(ctx context.Context, cluster *pgembed.Cluster) error {
	st, err := store.Open(ctx, cluster.URL("trueup"), store.Options{MaxConns: 1})
	if err != nil {
		return err
	}
	_, err = st.Pool().Exec(ctx, "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
	st.Close()
	if err != nil {
		return err
	}
	return cluster.Restart(ctx)
}

// statementsView creates the pg_stat_statements view in st's database and reads it once: a
// cluster that has not loaded the library creates the view, then fails to read it.
func statementsView(ctx context.Context, st *store.Store) error {
	if _, err := st.Pool().Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		return err
	}
	_, err := st.Pool().Exec(ctx, "SELECT 1 FROM pg_stat_statements LIMIT 1")
	return err
}

// printDrainStats writes the statements that took the most time, the index blocks and the
// update counts of resources and resource_queue to stderr, each line led by label.
func printDrainStats(ctx context.Context, st *store.Store, label string) {
	rows, err := st.Pool().Query(ctx, `SELECT calls, rows, round(total_exec_time)::bigint, shared_blks_hit + shared_blks_read,
		  COALESCE(left(regexp_replace(query, '\s+', ' ', 'g'), 110), '(no text)')
		FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 12`)
	if err != nil {
		fmt.Fprintln(os.Stderr, label+": statements:", err)
		return
	}
	var b strings.Builder
	for rows.Next() {
		var calls, nrows, ms, blks int64
		var q string
		if err := rows.Scan(&calls, &nrows, &ms, &blks, &q); err != nil {
			fmt.Fprintf(&b, "  %v\n", err)
			break
		}
		fmt.Fprintf(&b, "  %8d calls %9d rows %7d ms %10d blocks  %s\n", calls, nrows, ms, blks, q)
	}
	rows.Close()
	rows, err = st.Pool().Query(ctx, `SELECT indexrelname, idx_blks_hit + idx_blks_read FROM pg_statio_user_indexes
		WHERE relname IN ('resources', 'resource_queue') ORDER BY 2 DESC`)
	if err == nil {
		b.WriteString(label + ": index blocks of resources and resource_queue:")
		for rows.Next() {
			var name string
			var blks int64
			if rows.Scan(&name, &blks) == nil {
				fmt.Fprintf(&b, " %s %d", name, blks)
			}
		}
		rows.Close()
		b.WriteString("\n")
	}
	var upd, hot, ins int64
	_ = st.Pool().QueryRow(ctx, "SELECT n_tup_upd, n_tup_hot_upd, n_tup_ins FROM pg_stat_user_tables WHERE relname = 'resources'").Scan(&upd, &hot, &ins)
	var qupd, qhot int64
	_ = st.Pool().QueryRow(ctx, "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'resource_queue'").Scan(&qupd, &qhot)
	fmt.Fprintf(os.Stderr, "%s: statements by time:\n%s%s: resources updates %d (HOT %d), inserts %d; resource_queue updates %d (HOT %d)\n",
		label, b.String(), label, upd, hot, ins, qupd, qhot)
}
