package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/noop"
	"github.com/trueup-dev/trueup/internal/cputime"
	"github.com/trueup-dev/trueup/internal/store"
)

// longTxThroughput reconciles n noop resources twice on one replica, alone and with another
// session holding a transaction open (with an xid, as a long report or a forgotten psql
// session does) for the whole drain: no row version the drain leaves behind can be removed
// meanwhile, neither by vacuum nor by the pruning and index-entry killing that reads do.
func (b *bench) longTxThroughput(ctx context.Context, n int) error {
	alone, aloneCPU, err := b.drainWithLongTx(ctx, n, false)
	if err != nil {
		return err
	}
	held, heldCPU, err := b.drainWithLongTx(ctx, n, true)
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

// longTxPasses is how many times every resource reconciles while the transaction is held:
// each pass leaves another few row versions of every resource behind.
const longTxPasses = 3

// drainWithLongTx returns the attempts a second and the CPU time per attempt (µs).
func (b *bench) drainWithLongTx(ctx context.Context, n int, hold bool) (rate, cpu float64, err error) {
	st, url, err := b.seededStore(ctx, n)
	if err != nil {
		return 0, 0, err
	}
	defer st.Close()
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
	// The first pass starts with the reconciler: the start readings come before it.
	pg0, err := postgresCPU(b.cluster)
	if err != nil {
		return 0, 0, err
	}
	own0 := cputime.Self()
	start := time.Now()
	act, _ := noop.New(nil, actions.Env{Name: "act", Logger: b.log})
	stop, err := b.runReconcilers(ctx, url, 1, 32, act)
	if err != nil {
		return 0, 0, err
	}
	defer stop()
	for pass := 0; pass < longTxPasses; pass++ {
		var since time.Time
		if pass > 0 {
			// Every resource due again at once, as a resync interval or a new revision makes it.
			if err := st.Pool().QueryRow(ctx, "UPDATE resource_queue SET run_at = now() RETURNING now()").Scan(&since); err != nil {
				return 0, 0, err
			}
			if _, err := st.Pool().Exec(ctx, "NOTIFY "+store.WorkChannel); err != nil {
				return 0, 0, err
			}
		}
		if err := waitReconciled(ctx, st, n, since, 5*time.Minute); err != nil {
			return 0, 0, err
		}
	}
	took := time.Since(start)
	pg1, err := postgresCPU(b.cluster)
	if err != nil {
		return 0, 0, err
	}
	attempts := float64(n * longTxPasses)
	return attempts / took.Seconds(), 1e6 * (pg1 - pg0 + cputime.Self() - own0).Seconds() / attempts, nil
}

// waitReconciled waits until n resources are Ready, reconciled at since or later. It counts
// them once the history (insert only: none of its rows leaves a dead version) holds n
// attempts more than at since, or every 500 ms: a count reads every version of every row
// that the held transaction keeps, and so does a probe of resources_lease or resources_due,
// whose dead entries stay too; the measure must not add to what it measures.
func waitReconciled(ctx context.Context, st *store.Store, n int, since time.Time, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	lastID := func() (id int64, err error) {
		err = st.Pool().QueryRow(ctx, "SELECT COALESCE(max(id), 0) FROM reconcile_history").Scan(&id)
		return id, err
	}
	from, err := lastID()
	if err != nil {
		return err
	}
	var counted time.Time
	for time.Now().Before(deadline) {
		if id, err := lastID(); err != nil {
			return err
		} else if id-from < int64(n) && time.Since(counted) < 500*time.Millisecond {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		counted = time.Now()
		var done int
		if err := st.Pool().QueryRow(ctx, "SELECT count(*) FROM resources WHERE phase = 'Ready' AND last_reconcile_time >= $1", since).Scan(&done); err != nil {
			return err
		}
		if done >= n {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("not all %d resources reconciled within %s", n, limit)
}
