package store

import (
	"context"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/migrations"
)

// migrationLockID is the advisory lock key under which migrations run, so that replicas
// starting together apply each migration once.
const migrationLockID = 7_470_617_500_001

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		n := e.Name()
		if !strings.HasSuffix(n, ".up.sql") {
			continue
		}
		num, _, ok := strings.Cut(n, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with NNNN_", n)
		}
		b, err := fs.ReadFile(migrations.FS, n)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: strings.TrimSuffix(n, ".up.sql"), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// LatestMigration is the newest embedded migration version.
func LatestMigration() int {
	ms, err := loadMigrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// Migrate applies every pending migration in one transaction under a transaction-scoped
// advisory lock (session locks through a pool would leak to the next borrower). Its
// statements use no named prepared statement (pgx.QueryExecModeExec), so it runs through a
// pooler in transaction mode whatever the pool's options.
func (s *Store) Migrate(ctx context.Context) (applied []string, err error) {
	ms, err := loadMigrations()
	if err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", pgx.QueryExecModeExec, migrationLockID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		done := map[int]bool{}
		rows, err := tx.Query(ctx, "SELECT version FROM schema_migrations", pgx.QueryExecModeExec)
		if err != nil {
			return err
		}
		vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			return err
		}
		for _, v := range vs {
			done[v] = true
		}
		for _, m := range ms {
			if done[m.version] {
				continue
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", pgx.QueryExecModeExec, m.version, m.name); err != nil {
				return err
			}
			applied = append(applied, m.name)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return applied, nil
}

// RepairQueue keeps one resource_queue row per resource. The insert trigger of resources
// makes one row per resource and a statement trigger refuses a second one written by any
// other statement; rows written with triggers off (pg_restore --data-only
// --disable-triggers over a database that holds them, session_replication_role = replica)
// pass both, and two rows of one resource would each be claimed. Each replica runs it at
// start (Migrate's callers), under the migrations' lock: it reads the queue's id index once
// (0.14 s for a million rows) and, when some resource has more than one row, locks the queue
// against writers and locking reads (claims of running peers wait), keeps one row per
// resource (repairKeepSQL), suspended when any of them was, and reports how many rows it
// removed.
func (s *Store) RepairQueue(ctx context.Context) (removed int64, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", pgx.QueryExecModeExec, migrationLockID); err != nil {
			return err
		}
		var twice bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM resource_queue GROUP BY id HAVING count(*) > 1)`, pgx.QueryExecModeExec).Scan(&twice); err != nil {
			return err
		}
		if !twice {
			return nil
		}
		// Bounded, as migrations' locks: claims, results and renewals of every replica would
		// queue behind a lock that waits for a long transaction.
		if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '10s'", pgx.QueryExecModeExec); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "LOCK TABLE resource_queue IN EXCLUSIVE MODE", pgx.QueryExecModeExec); err != nil {
			return fmt.Errorf("some resources have two queue rows, and the queue could not be locked to remove them (start again once the transaction holding it ends): %w", err)
		}
		tag, err := tx.Exec(ctx, `WITH rows AS (
			  SELECT ctid AS at, row_number() OVER (PARTITION BY id ORDER BY `+repairKeepSQL+`) AS n,
			    bool_or(suspended) OVER (PARTITION BY id) AS suspended
			  FROM resource_queue WHERE id IN (SELECT id FROM resource_queue GROUP BY id HAVING count(*) > 1)),
			kept AS (UPDATE resource_queue q SET suspended = true FROM rows k WHERE q.ctid = k.at AND k.n = 1 AND k.suspended AND NOT q.suspended)
			DELETE FROM resource_queue q USING rows d WHERE q.ctid = d.at AND d.n > 1`, pgx.QueryExecModeExec)
		removed = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("check resource_queue: %w", err)
	}
	return removed, nil
}

// Summaries says what RepairSummaries found: the rows of resources, those resource_phases
// and resource_queue hold and resource_counts counts for them, and the tables it repaired.
type Summaries struct {
	Resources, Phases, Counted, Queued int64
	Repaired                           []string
}

// RepairSummaries repairs the tables the triggers of resources keep: resource_phases (each
// resource's phase: the phase filters and counts), resource_counts (resources per source:
// the overview's totals, the prune guard) and resource_queue (each resource's queue row),
// when one does not account for as many resources as resources holds: rows written with
// triggers off (pg_restore --data-only --disable-triggers of resources without them,
// session_replication_role = replica) pass the triggers. Each replica runs it at start
// (Migrate's callers), after RepairQueue and under the migrations' lock: it counts the
// tables in one snapshot, and when a count differs locks resources against writers (results
// and applies of running peers wait while it runs) and repairs that table from resources:
// phase rows of no resource removed and the others written where they differ (readers of
// resource_phases do not wait); a correction appended to resource_counts per source, as its
// triggers append (its retention's fold may run meanwhile); queue rows of no resource
// removed and a queue row made for each resource without one, as the insert trigger makes it
// (due now, blocked when it has dependencies, which are then looked at after the commit, as
// after an apply; the replicas are told work is due). Rows that count right and hold the
// wrong phase or source are not found, nor a row of no resource and a resource without one
// that make the queue's count right (the database guide says how to rebuild them).
func (s *Store) RepairSummaries(ctx context.Context) (Summaries, error) {
	var sum Summaries
	var waiting []int64 // the queue rows made blocked: their dependencies are looked at after
	// Read committed: the count after the lock sees what writers committed before it.
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", pgx.QueryExecModeExec, migrationLockID); err != nil {
			return err
		}
		count := func() error {
			return tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM resources), (SELECT count(*) FROM resource_phases),
				(SELECT COALESCE(sum(n), 0)::bigint FROM resource_counts), (SELECT count(*) FROM resource_queue)`, pgx.QueryExecModeExec).
				Scan(&sum.Resources, &sum.Phases, &sum.Counted, &sum.Queued)
		}
		if err := count(); err != nil {
			return err
		}
		if sum.Phases == sum.Resources && sum.Counted == sum.Resources && sum.Queued == sum.Resources {
			return nil
		}
		if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '10s'", pgx.QueryExecModeExec); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "LOCK TABLE resources IN SHARE MODE", pgx.QueryExecModeExec); err != nil {
			return fmt.Errorf("resource_phases, resource_counts or resource_queue does not account for every resource, and resources could not be locked to repair them (start again once the transaction holding it ends): %w", err)
		}
		if err := count(); err != nil { // what a writer committed before the lock counts
			return err
		}
		if sum.Phases != sum.Resources {
			if _, err := tx.Exec(ctx, `DELETE FROM resource_phases p WHERE NOT EXISTS (SELECT 1 FROM resources r WHERE r.id = p.id)`, pgx.QueryExecModeExec); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO resource_phases AS p (id, source, phase) SELECT id, source, phase FROM resources
				ON CONFLICT (id) DO UPDATE SET source = excluded.source, phase = excluded.phase
				WHERE (p.source, p.phase) IS DISTINCT FROM (excluded.source, excluded.phase)`, pgx.QueryExecModeExec); err != nil {
				return err
			}
			sum.Repaired = append(sum.Repaired, "resource_phases")
		}
		if sum.Counted != sum.Resources {
			if _, err := tx.Exec(ctx, `INSERT INTO resource_counts (source, n)
				SELECT source, sum(n) FROM (SELECT source, count(*) AS n FROM resources GROUP BY source
				  UNION ALL SELECT source, -n FROM resource_counts) d GROUP BY source HAVING sum(n) <> 0`, pgx.QueryExecModeExec); err != nil {
				return err
			}
			sum.Repaired = append(sum.Repaired, "resource_counts")
		}
		if sum.Queued != sum.Resources {
			// Rows of no resource (no writer of resources runs: none is being created) are
			// never claimed; each resource without a row gets one.
			tag, err := tx.Exec(ctx, `DELETE FROM resource_queue q WHERE NOT EXISTS (SELECT 1 FROM resources r WHERE r.id = q.id)`, pgx.QueryExecModeExec)
			if err != nil {
				return err
			}
			rows, err := tx.Query(ctx, `INSERT INTO resource_queue (id, run_at, blocked) SELECT id, now(), has_deps FROM resources r
				WHERE NOT EXISTS (SELECT 1 FROM resource_queue q WHERE q.id = r.id) RETURNING id, blocked`, pgx.QueryExecModeExec)
			if err != nil {
				return err
			}
			made := 0
			var id int64
			var blocked bool
			_, err = pgx.ForEachRow(rows, []any{&id, &blocked}, func() error {
				made++
				if blocked {
					waiting = append(waiting, id)
				}
				return nil
			})
			if err != nil {
				return err
			}
			if tag.RowsAffected() > 0 || made > 0 {
				sum.Repaired = append(sum.Repaired, "resource_queue")
			}
			if made > 0 {
				if _, err := tx.Exec(ctx, "SELECT pg_notify($1, '')", pgx.QueryExecModeExec, WorkChannel); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return Summaries{}, fmt.Errorf("check resource_phases, resource_counts and resource_queue: %w", err)
	}
	// As after an apply: the rows made wait only for what they depend on.
	if err := s.RefreshDependencies(ctx, waiting); err != nil {
		return sum, fmt.Errorf("refresh the dependencies of the resource_queue rows made: %w", err)
	}
	return sum, nil
}

// repairKeepSQL orders the queue rows of one resource, the one kept first: a leased row (its
// call may be running: its result finds the row), then the first in the table. Migration
// 0035's down migration keeps the same row.
const repairKeepSQL = "lease_owner IS NULL, ctid"

// MigrationsCurrent reports whether the database has every embedded migration.
func (s *Store) MigrationsCurrent(ctx context.Context) (bool, error) {
	var v *int
	err := s.pool.QueryRow(ctx, "SELECT max(version) FROM schema_migrations").Scan(&v)
	if err != nil {
		return false, err
	}
	return v != nil && *v >= LatestMigration(), nil
}

// MigrateURL opens url, migrates and closes: the shape the test helper wants.
func MigrateURL(ctx context.Context, url string) error {
	s, err := Open(ctx, url, Options{MaxConns: 2})
	if err != nil {
		return err
	}
	defer s.Close()
	_, err = s.Migrate(ctx)
	return err
}
