// Package store owns every SQL statement of trueup (DESIGN §7): migrations, the desired state
// written by the syncer, the work queue and leases used by the reconciler, status, history,
// events, and the read queries behind the API.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNotFound is returned when a named object does not exist.
var ErrNotFound = errors.New("not found")

// ErrLeaseLost is returned by writes fenced by a lease token when the lease has moved on: the
// caller's work must be discarded.
var ErrLeaseLost = errors.New("lease lost")

// IsRetryable reports whether err is a transaction PostgreSQL aborted to break a deadlock or
// a serialization conflict: running it again is the remedy.
func IsRetryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// DB is what both the pool and a transaction satisfy.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Store is the database handle shared by every component of one replica.
type Store struct {
	pool *pgxpool.Pool
	// leases is a small pool of its own for lease renewal, reaping and heartbeats: a pool
	// busy with API queries or results must never let a replica's leases expire.
	leases *pgxpool.Pool
	url    string
	// session, when set, is where the connections that need a session of their own (LISTEN,
	// the liveness lock) connect, instead of leaving the pool (Options.SessionURL).
	session *pgx.ConnConfig
	// standby serves reads while it keeps up (Options.ReadURL; nil: none).
	standby *standby
	// pageStep, when set (tests), is told each step of a page filtered by phase (readPage).
	pageStep func(phaseStep)
	// pageIDCap replaces phaseIDCap when set (tests).
	pageIDCap int
	// trimRows replaces trimProbeRows when set (tests).
	trimRows int
}

// Options tune the pool.
type Options struct {
	MaxConns int32
	// SessionURL reaches PostgreSQL directly when url goes through a pooler in transaction
	// mode (PgBouncer's pool_mode=transaction): the LISTEN connection and the liveness
	// session connect there. With it set, the pool runs every statement in one round trip
	// without named prepared statements (pgx's QueryExecModeCacheDescribe), which a pooler
	// handing each transaction to another server connection does not keep.
	SessionURL string
	// ReadURL is a streaming standby of url: the reads that call reader go there while its
	// replication lag is at most MaxReadLag, through a pool of MaxConns of its own.
	ReadURL    string
	MaxReadLag time.Duration
	Logger     *slog.Logger // the standby's lag changes (nil: discarded)
}

// Open connects to url. It does not migrate.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", redactErr(err))
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	} else if cfg.MaxConns < 8 {
		// The pgx default of max(4, CPUs) starves the reconciler's workers on small machines.
		cfg.MaxConns = 8
	}
	cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	var session *pgx.ConnConfig
	if opts.SessionURL != "" {
		if session, err = pgx.ParseConfig(opts.SessionURL); err != nil {
			return nil, fmt.Errorf("parse database session url: %w", redactErr(err))
		}
		session.ConnectTimeout = 5 * time.Second
		if cfg.ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement { // pgx's default, not a choice in the url
			cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
		}
	}
	jitOff(cfg, session != nil)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", redactErr(err))
	}
	lcfg := cfg.Copy()
	lcfg.MaxConns, lcfg.MinConns = 2, 0
	leases, err := pgxpool.NewWithConfig(ctx, lcfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database: %w", redactErr(err))
	}
	s := &Store{pool: pool, leases: leases, url: url, session: session}
	if opts.ReadURL != "" {
		if err := s.openStandby(ctx, opts.ReadURL, opts.MaxConns, opts.SessionURL != "", opts.MaxReadLag, opts.Logger); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// jitOff turns PostgreSQL's JIT compilation off in the sessions of cfg's pool (SET jit = off
// as each connection opens). trueup's statements are short and indexed; the planner
// compiles one when its estimated cost passes jit_above_cost, which before a bulk apply's
// rows have statistics happens to statements that then read a handful: at a million
// resources a maintenance statement spent 0.5–1.4 s compiling to read nothing. A URL that
// sets jit (jitChosen) keeps its choice. With database.sessionURL set (pooled) the url goes
// through a pooler in transaction mode, where a SET would stay on whichever server session
// ran it: there the role carries the setting (docs/guides/database.md).
func jitOff(cfg *pgxpool.Config, pooled bool) {
	if pooled || jitChosen(cfg.ConnConfig.RuntimeParams) {
		return
	}
	after := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if after != nil {
			if err := after(ctx, conn); err != nil {
				return err
			}
		}
		return setJITOff(ctx, conn)
	}
}

// setJITOff turns JIT compilation off for conn's session (see jitOff).
func setJITOff(ctx context.Context, conn *pgx.Conn) error {
	_, err := conn.Exec(ctx, "SET jit = off")
	return err
}

// jitChosen reports whether a URL's runtime parameters set jit: as a parameter of its own
// (?jit=on) or as a setting in options (-c jit=on, --jit=on).
func jitChosen(params map[string]string) bool {
	_, ok := params["jit"]
	return ok || jitOption.MatchString(params["options"])
}

// jitOption matches a setting of jit (not of jit_above_cost and the like) in options.
var jitOption = regexp.MustCompile(`(^|\s)(-c\s*|--)jit=`)

// Close closes the pool; safe twice.
func (s *Store) Close() {
	if s.standby != nil { // its loop reads the primary's position
		s.standby.close()
		s.standby = nil
	}
	if s.pool != nil {
		s.pool.Close()
	}
	if s.leases != nil {
		s.leases.Close()
	}
}

// Pool exposes the pool for the few callers that need a dedicated connection (LISTEN).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// sessionConn opens a connection for a session of its own: to Options.SessionURL when set,
// else one taken out of pool for good (the caller closes it).
func (s *Store) sessionConn(ctx context.Context, pool *pgxpool.Pool) (*pgx.Conn, error) {
	if s.session != nil {
		conn, err := pgx.ConnectConfig(ctx, s.session)
		if err != nil {
			return nil, fmt.Errorf("connect to database.sessionURL: %w", err)
		}
		if !jitChosen(s.session.RuntimeParams) { // a session of its own: the SET stays with it
			if err := setJITOff(ctx, conn); err != nil {
				conn.Close(context.WithoutCancel(ctx))
				return nil, fmt.Errorf("database.sessionURL: %w", err)
			}
		}
		return conn, nil
	}
	pc, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return pc.Hijack(), nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var one int
	return s.pool.QueryRow(ctx, "SELECT 1").Scan(&one)
}

// inTx runs fn in one transaction (READ COMMITTED), committing when fn returns nil.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// redactErr drops the connection string that pgx sometimes echoes in parse errors.
func redactErr(err error) error {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		return errors.New("invalid database url (details withheld: it may contain a password)")
	}
	return err
}
