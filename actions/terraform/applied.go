package terraform

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/trueup-dev/trueup/actions"
)

// appliedTimeout bounds the look-up of a workspace's row.
const appliedTimeout = 15 * time.Second

// newPlanSummary is a plan's summary for a resource never applied: planning it would create
// its workspace (a row of the pg backend, a working copy, downloaded providers) for a
// preview that may never be merged.
const newPlanSummary = "new: the module's resources will be created (not planned before the first apply)"

// unappliedFile, in a working copy, says that the gate's plan created it (and the workspace)
// for a resource never applied: applied reads it as not applied until a Reconcile runs.
const unappliedFile = "unapplied"

// applied reports whether the resource has been applied, without creating anything: for the
// pg backend, whether its row in the instance schema's states table holds resources or
// outputs (no schema: nothing applied yet; the gate's plan of a resource never applied
// creates the row, empty); for a configured backend, which trueup cannot read, whether a
// reconcile left an initialised working copy (a stamp, and no unappliedFile).
//
// The pg backend's table is Terraform's, not trueup's, so this one query lives here rather
// than in internal/store.
func (a *Action) applied(ctx context.Context, ws string) (bool, error) {
	if a.custom {
		for _, name := range []string{"stamp", unappliedFile} {
			_, err := os.Stat(filepath.Join(a.workDir, ws, name))
			switch {
			case name == "stamp" && errors.Is(err, os.ErrNotExist):
				return false, nil
			case name == unappliedFile && err == nil:
				return false, nil
			case err != nil && !errors.Is(err, os.ErrNotExist):
				return false, fmt.Errorf("working copy: %w", err)
			}
		}
		return true, nil
	}
	conn := a.dbURL
	if conn == "" {
		return false, errors.New("no database for the pg backend: the controller has not opened one (set backend: in the config to keep state elsewhere)")
	}
	ctx, cancel := context.WithTimeout(ctx, appliedTimeout)
	defer cancel()
	db, err := pgx.Connect(ctx, conn)
	if err != nil {
		return false, fmt.Errorf("look up workspace %s: connect: %w", ws, scrubConnErr(err, conn))
	}
	defer db.Close(context.WithoutCancel(ctx))
	var ok bool
	q := "SELECT EXISTS (SELECT 1 FROM " + pgx.Identifier{a.schema, "states"}.Sanitize() + ` WHERE name = $1 AND data <> ''
		AND (COALESCE(jsonb_array_length(data::jsonb->'resources'), 0) > 0 OR COALESCE(data::jsonb->'outputs', '{}') <> '{}'))`
	err = db.QueryRow(ctx, q, ws).Scan(&ok)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000"):
		return false, nil // undefined_table, invalid_schema_name: no init ever ran
	case err != nil:
		return false, fmt.Errorf("look up workspace %s: %w", ws, err)
	}
	return ok, nil
}

// scrubConnErr keeps the database URL, which holds a password, out of an error.
func scrubConnErr(err error, conn string) error {
	secrets := []string{conn}
	if u, perr := url.Parse(conn); perr == nil {
		if p, ok := u.User.Password(); ok && p != "" {
			secrets = append(secrets, p)
		}
	}
	return errors.New(actions.Scrubber(secrets)(err.Error()))
}

// lockInit holds a PostgreSQL advisory lock on the instance's schema for the length of an
// init, so that inits in several replicas (or several instances of one configuration) never
// run together: the pg backend creates its schema, sequence and table on the first init with
// CREATE … IF NOT EXISTS, which concurrent sessions can still collide on ("duplicate key value
// violates unique constraint pg_type_typname_nsp_index"). The lock is a session lock on its
// own connection; closing the connection releases it, also when this process dies. A
// configured backend is the operator's: unlock is then a no-op.
func (a *Action) lockInit(ctx context.Context) (unlock func(), err error) {
	if a.custom {
		return func() {}, nil
	}
	conn := a.dbURL
	if conn == "" {
		return nil, errors.New("no database for the pg backend: the controller has not opened one (set backend: in the config to keep state elsewhere)")
	}
	db, err := pgx.Connect(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("lock the backend for init: connect: %w", scrubConnErr(err, conn))
	}
	closeDB := func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = db.Close(ctx)
	}
	if _, err := db.Exec(ctx, "SELECT pg_advisory_lock(hashtext('trueup.terraform.init:' || $1))", a.schema); err != nil {
		closeDB()
		return nil, fmt.Errorf("lock the backend for init: %w", err)
	}
	return closeDB, nil
}
