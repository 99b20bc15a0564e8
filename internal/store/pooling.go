package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// sessionRead is what one statement of the pooling probe saw: the server process that ran
// it, and whether the probe's session setting was there.
type sessionRead struct {
	pid int32
	saw bool
}

// sessionsPooled decides from the probe's reads whether a connection's statements share one
// server session. first is a's statement that set the session setting; other a statement of
// a second connection b inside a transaction begun right after; again a's next statement
// while b's transaction is open (nil before it ran). Directly connected, b has a session of
// its own and a keeps its own. A pooler in transaction mode hands b the server connection a
// just left (PgBouncer reuses the most recent one first), or a finds another one while b
// holds that one.
func sessionsPooled(first, other sessionRead, again *sessionRead) bool {
	if other.pid == first.pid || other.saw {
		return true
	}
	return again != nil && (again.pid != first.pid || !again.saw)
}

// probeSessions runs the probe sessionsPooled decides on, with two connections of cfg.
func probeSessions(ctx context.Context, cfg *pgx.ConnConfig) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cfg = cfg.Copy()
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol // no statement outlives its round trip
	a, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, err
	}
	defer a.Close(context.WithoutCancel(ctx))
	b, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, err
	}
	defer b.Close(context.WithoutCancel(ctx))
	token := strconv.FormatUint(rand.Uint64(), 36)
	const read = "SELECT pg_backend_pid(), COALESCE(current_setting('trueup.session_probe', true), '') = $1"
	var first, other, again sessionRead
	if err := a.QueryRow(ctx, "SELECT pg_backend_pid(), set_config('trueup.session_probe', $1, false)", token).Scan(&first.pid, new(string)); err != nil {
		return false, err
	}
	tx, err := b.Begin(ctx)
	if err != nil {
		if statementPooling(err) {
			return true, nil
		}
		return false, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := tx.QueryRow(ctx, read, token).Scan(&other.pid, &other.saw); err != nil {
		if statementPooling(err) {
			return true, nil
		}
		return false, err
	}
	if sessionsPooled(first, other, nil) {
		return true, nil // before a waits for a server connection b may hold
	}
	if err := a.QueryRow(ctx, read, token).Scan(&again.pid, &again.saw); err != nil {
		return false, err
	}
	return sessionsPooled(first, other, &again), nil
}

// statementPooling reports whether err is PgBouncer's refusal of a transaction block in
// pool_mode=statement (it ends the client's connection with 08P01).
func statementPooling(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "08P01" && strings.Contains(pe.Message, "transaction blocks not allowed in statement pooling mode")
}

// CheckSessions refuses what would misbehave behind a pooler in transaction mode: a url
// through one with no Options.SessionURL beside it (LISTEN and the liveness lock need a
// session that stays theirs), or a session URL through one.
func (s *Store) CheckSessions(ctx context.Context) error {
	if s.session != nil {
		pooled, err := probeSessions(ctx, s.session)
		if err != nil {
			return fmt.Errorf("check database.sessionURL: %w", err)
		}
		if pooled {
			return errors.New("database.sessionURL goes through a pooler that hands transactions to different server sessions " +
				"(PgBouncer's pool_mode=transaction or statement): point it at PostgreSQL itself, or at a pool in session mode")
		}
		return s.checkSessionTarget(ctx)
	}
	pooled, err := probeSessions(ctx, s.pool.Config().ConnConfig)
	if err != nil {
		return fmt.Errorf("check the database connection: %w", err)
	}
	if pooled {
		return errors.New("database.url goes through a pooler that hands transactions to different server sessions " +
			"(PgBouncer's pool_mode=transaction or statement), and trueup's LISTEN connection and liveness lock need a session of their own: " +
			"set database.sessionURL (or TRUEUP_DATABASE_SESSION_URL) to a URL that reaches PostgreSQL directly (docs/guides/database.md)")
	}
	return nil
}

// checkSessionTarget checks that Options.SessionURL reaches what url does: a liveness-class
// advisory lock taken on a session connection must be seen held through the pool (the same
// server and database: peers read the liveness locks there), and both must connect as the
// same role (a replica ends its own previous session with that role's right).
func (s *Store) checkSessionTarget(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cfg := s.session.Copy()
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("check database.sessionURL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var key int32
	var sessionUser, sessionDB string
	for try := 0; ; try++ {
		key = rand.Int32N(1<<31 - 1)
		var ok bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2), current_user, current_database()", livenessClass, key).
			Scan(&ok, &sessionUser, &sessionDB); err != nil {
			return fmt.Errorf("check database.sessionURL: %w", err)
		}
		if ok {
			break
		}
		if try > 20 {
			return errors.New("check database.sessionURL: no free advisory lock key")
		}
	}
	var held bool
	var poolUser, poolDB string
	err = s.pool.QueryRow(ctx, `SELECT EXISTS (`+lockHeldSQL("$2")+`), current_user, current_database()`, livenessClass, key).
		Scan(&held, &poolUser, &poolDB)
	if _, uerr := conn.Exec(ctx, "SELECT pg_advisory_unlock($1, $2)", livenessClass, key); uerr != nil && err == nil {
		err = uerr
	}
	if err != nil {
		return fmt.Errorf("check database.sessionURL: %w", err)
	}
	switch {
	case !held && sessionDB != poolDB:
		return fmt.Errorf("database.sessionURL reaches database %q and database.url database %q: "+
			"they must reach the same database as the same role (peers would see this replica's liveness lock missing)", sessionDB, poolDB)
	case !held:
		return fmt.Errorf("database.sessionURL reaches another PostgreSQL server than database.url (a lock taken on it is not seen through database.url; both name database %q): "+
			"they must reach the same database as the same role (peers would see this replica's liveness lock missing)", poolDB)
	case sessionUser != poolUser:
		return fmt.Errorf("database.sessionURL connects as role %q and database.url as role %q: they must reach the same database as the same role", sessionUser, poolUser)
	}
	return nil
}
