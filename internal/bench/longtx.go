package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/noop"
	"github.com/trueup-dev/trueup/internal/cputime"
	"github.com/trueup-dev/trueup/internal/store"
)

// longTxThroughput runs n noop resources through a minute of steady resyncs on one replica
// (each due again a millisecond after its result, as a short resync interval makes it),
// alone and with another session holding a transaction open (with an xid, as a long report
// or a forgotten psql session does) for that whole minute: no row version made in it can be
// removed meanwhile, neither by vacuum nor by the pruning and index-entry killing that reads
// do. Nothing else writes the rows, and the attempts are counted in the action: the
// measure adds no version of its own.
func (b *bench) longTxThroughput(ctx context.Context, n int) error {
	alone, aloneCPU, err := b.resyncWithLongTx(ctx, n, false)
	if err != nil {
		return err
	}
	held, heldCPU, err := b.resyncWithLongTx(ctx, n, true)
	if err != nil {
		return err
	}
	record("reconcile_throughput_long_tx_alone", alone, "1/s", "", nil)
	record("reconcile_throughput_long_tx", held, "1/s", "", nil)
	record("reconcile_long_tx_drop", 100*(1-held/alone), "%", "≤ 30", atMost(30))
	// CPU time per attempt (PostgreSQL's and the bench process's): what the held
	// transaction costs, apart from the share of a shared machine each run got.
	record("reconcile_long_tx_cpu_alone", aloneCPU, "µs", "", nil)
	record("reconcile_long_tx_cpu", heldCPU, "µs", "", nil)
	record("reconcile_long_tx_cpu_rise", 100*(heldCPU/aloneCPU-1), "%", "", nil)
	return nil
}

// observeCounter counts the calls of a noop action: a resync that finds the resource as it
// was observes it and writes no history.
type observeCounter struct {
	*noop.Action
	calls atomic.Int64
}

func (c *observeCounter) Reconcile(ctx context.Context, req actions.Request) (actions.Result, error) {
	c.calls.Add(1)
	return c.Action.Reconcile(ctx, req)
}

func (c *observeCounter) Observe(ctx context.Context, req actions.Request) (actions.Observation, error) {
	c.calls.Add(1)
	return c.Action.Observe(ctx, req)
}

// relationBlocks reads the blocks each table and index of the database has read (hit or
// not) so far.
func relationBlocks(ctx context.Context, st *store.Store) (map[string]int64, error) {
	rows, err := st.Pool().Query(ctx, `SELECT relname, COALESCE(heap_blks_hit, 0) + COALESCE(heap_blks_read, 0) FROM pg_statio_user_tables
		UNION ALL SELECT indexrelname, idx_blks_hit + idx_blks_read FROM pg_statio_user_indexes`)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for rows.Next() {
		var rel string
		var n int64
		if err := rows.Scan(&rel, &n); err != nil {
			return nil, err
		}
		out[rel] += n
	}
	return out, rows.Err()
}

// longTxHold is how long the transaction is held, and the window measured alone.
const longTxHold = 60 * time.Second

// resyncWithLongTx returns the attempts a second and the CPU time per attempt (µs) over
// longTxHold of steady resyncs, after the first pass has made every resource Ready.
func (b *bench) resyncWithLongTx(ctx context.Context, n int, hold bool) (rate, cpu float64, err error) {
	st, url, err := b.seededStore(ctx, n)
	if err != nil {
		return 0, 0, err
	}
	defer st.Close()
	b.resync = time.Millisecond
	defer func() { b.resync = 0 }()
	inner, _ := noop.New(nil, actions.Env{Name: "act", Logger: b.log})
	act := &observeCounter{Action: inner.(*noop.Action)}
	stop, err := b.runReconcilers(ctx, url, 1, 32, act)
	if err != nil {
		return 0, 0, err
	}
	defer stop()
	if err := waitReady(ctx, st, n, 5*time.Minute); err != nil {
		return 0, 0, err
	}
	if hold {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return 0, 0, err
		}
		defer conn.Close(context.Background())
		tx, err := conn.Begin(ctx)
		if err != nil {
			return 0, 0, err
		}
		defer func() { _ = tx.Rollback(context.Background()) }()
		if _, err := tx.Exec(ctx, "SELECT txid_current()"); err != nil {
			return 0, 0, fmt.Errorf("hold a transaction: %w", err)
		}
	}
	blocks0, err := relationBlocks(ctx, st)
	if err != nil {
		return 0, 0, err
	}
	id0 := act.calls.Load()
	pg0, err := postgresCPU(b.cluster)
	if err != nil {
		return 0, 0, err
	}
	own0, start := cputime.Self(), time.Now()
	select {
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	case <-time.After(longTxHold):
	}
	id1 := act.calls.Load()
	pg1, err := postgresCPU(b.cluster)
	if err != nil {
		return 0, 0, err
	}
	took, own := time.Since(start), cputime.Self()-own0
	attempts := float64(id1 - id0)
	if attempts <= 0 {
		return 0, 0, fmt.Errorf("no attempt in %s of resyncs", longTxHold)
	}
	blocks1, err := relationBlocks(ctx, st)
	if err != nil {
		return 0, 0, err
	}
	// Where the attempts read: the blocks of each table and index per attempt.
	var where []string
	for rel, b1 := range blocks1 {
		if per := float64(b1-blocks0[rel]) / attempts; per >= 0.05 {
			where = append(where, fmt.Sprintf("%s %.2f", rel, per))
		}
	}
	slices.Sort(where)
	fmt.Fprintf(os.Stderr, "longtx (held %v): blocks per attempt: %s\n", hold, strings.Join(where, ", "))
	return attempts / took.Seconds(), 1e6 * (pg1 - pg0 + own).Seconds() / attempts, nil
}
