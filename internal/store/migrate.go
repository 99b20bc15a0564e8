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
