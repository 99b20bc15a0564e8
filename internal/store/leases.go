package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Lease is a held singleton lease. Term identifies the holding: it grows on every takeover.
type Lease struct {
	Name   string
	Holder string
	Term   int64
}

// AcquireLease takes name for holder (or renews it when holder already has it) unless another
// holder's lease is still valid. ok is false when someone else holds it.
//
// A renewal and a takeover lock the lease row differently, and that is what fences writes
// without ever blocking a renewal: a fenced transaction takes FOR KEY SHARE on the row in its
// last statement (checkLease); a renewal changes no key column, so it takes FOR NO KEY UPDATE,
// which KEY SHARE does not block; a takeover first takes FOR UPDATE, which KEY SHARE does
// block. A takeover therefore commits either before a fenced transaction's check (which then
// finds the new term and fails) or after its commit — never between the two. A takeover that
// finds a fenced transaction committing gives up at once (NOWAIT) and is retried by the
// caller's next attempt, so no lease loop ever waits on another replica's transaction.
func (s *Store) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (l Lease, ok bool, err error) {
	// Renewal (also of a lease that ran out while nobody took it): one statement, the term stays.
	l = Lease{Name: name, Holder: holder}
	err = s.leases.QueryRow(ctx, `UPDATE leases SET expires_at = now() + $3 * interval '1 millisecond'
		WHERE name = $1 AND holder = $2 RETURNING term`, name, holder, ttl.Milliseconds()).Scan(&l.Term)
	if err == nil {
		return l, true, nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		err = pgx.BeginFunc(ctx, s.leases, func(tx pgx.Tx) error {
			var err error
			l.Term, ok, err = takeLease(ctx, tx, name, holder, ttl)
			return err
		})
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "55P03" { // lock_not_available
		return Lease{}, false, nil // a fenced write of the holder is committing: not taken this time
	}
	if err != nil {
		return Lease{}, false, fmt.Errorf("acquire lease %s: %w", name, err)
	}
	if !ok {
		return Lease{}, false, nil
	}
	return l, true, nil
}

// takeLease creates the lease for holder, or takes it over once it has expired.
func takeLease(ctx context.Context, tx pgx.Tx, name, holder string, ttl time.Duration) (term int64, ok bool, err error) {
	err = tx.QueryRow(ctx, `INSERT INTO leases (name, holder, term, expires_at) VALUES ($1, $2, 1, now() + $3 * interval '1 millisecond')
		ON CONFLICT (name) DO NOTHING RETURNING term`, name, holder, ttl.Milliseconds()).Scan(&term)
	if err == nil || !errors.Is(err, pgx.ErrNoRows) {
		return term, err == nil, err
	}
	// The row is locked only when it has expired (a valid lease is refused without waiting),
	// and FOR UPDATE re-reads it once locked: a lease renewed meanwhile is not taken.
	var one int
	err = tx.QueryRow(ctx, `SELECT 1 FROM leases WHERE name = $1 AND holder <> $2 AND expires_at < now() FOR UPDATE NOWAIT`,
		name, holder).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	err = tx.QueryRow(ctx, `UPDATE leases SET holder = $2, term = term + 1, acquired_at = now(),
		expires_at = now() + $3 * interval '1 millisecond' WHERE name = $1 RETURNING term`, name, holder, ttl.Milliseconds()).Scan(&term)
	return term, err == nil, err
}

// ReleaseLease gives a lease up at once (clean shutdown) and tells every replica on
// LeasesChannel, so another takes over within milliseconds instead of at its next renewal.
func (s *Store) ReleaseLease(ctx context.Context, l Lease) error {
	return pgx.BeginFunc(ctx, s.leases, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE leases SET expires_at = now() - interval '1 millisecond'
			WHERE name = $1 AND holder = $2 AND term = $3`, l.Name, l.Holder, l.Term)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, $2)", LeasesChannel, l.Name)
		return err
	})
}

// checkLease verifies inside tx that l is still held and keeps it so until tx ends: it takes
// FOR KEY SHARE on the lease row, which the holder's renewals do not wait for but a takeover
// does (see AcquireLease). From the check to the commit no takeover can happen, wherever the
// check stands. A transaction that may last long (an apply) calls it as its last statement,
// so that it blocks a takeover for the moment of the commit only and sees one that happened
// while it worked (leaseCurrent first stops it early); a short one (RecordSyncFailure,
// RecordSyncRecovered) may call it where it reads best. The expiry is read on the clock, not
// at the transaction's start.
func checkLease(ctx context.Context, tx pgx.Tx, l *Lease) error {
	if l == nil {
		return nil
	}
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM leases WHERE name = $1 AND holder = $2 AND term = $3 AND expires_at > clock_timestamp() FOR KEY SHARE`,
		l.Name, l.Holder, l.Term).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("lease %s (term %d): %w", l.Name, l.Term, ErrLeaseLost)
	}
	return err
}

// leaseCurrent is checkLease without the lock: a long fenced transaction calls it first, to
// stop before its work when the lease has already moved on.
func leaseCurrent(ctx context.Context, tx pgx.Tx, l *Lease) error {
	if l == nil {
		return nil
	}
	var held bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM leases WHERE name = $1 AND holder = $2 AND term = $3 AND expires_at > clock_timestamp())`,
		l.Name, l.Holder, l.Term).Scan(&held)
	if err == nil && !held {
		err = fmt.Errorf("lease %s (term %d): %w", l.Name, l.Term, ErrLeaseLost)
	}
	return err
}

// Replica is one trueup process sharing the database, with what it holds.
type Replica struct {
	Name       string
	Hostname   string
	PID        int
	Version    string
	Listen     string
	StartedAt  time.Time
	LastSeen   time.Time
	Alive      bool
	Leases     []string // singleton leases held (source:NAME, maintenance)
	Reconciles int      // resources leased right now
	// Sources is what the replica publishes about the sources it syncs (not in the API).
	Sources map[string]any
	// Config is the config the replica runs (SetReplicaConfig; the server shows it).
	Config ReplicaConfig
}

// ReplicaConfig is a replica's config status: the file it runs and its last refused reload.
type ReplicaConfig struct {
	Hash     string
	LoadedAt time.Time // at start, or by the last reload applied
	Error    string    // why the last reload was refused ("": it was applied, or none was tried)
	ErrorAt  time.Time
}

// SetReplicaConfig records replica's config status. A refusal (Error set) keeps the hash and
// load time of the config still running.
func (s *Store) SetReplicaConfig(ctx context.Context, replica string, c ReplicaConfig) error {
	var err error
	if c.Error != "" {
		_, err = s.pool.Exec(ctx, `UPDATE replicas SET config_error = $2, config_error_at = $3 WHERE name = $1`, replica, c.Error, c.ErrorAt)
	} else {
		_, err = s.pool.Exec(ctx, `UPDATE replicas SET config_hash = $2, config_loaded_at = $3, config_error = '', config_error_at = NULL
			WHERE name = $1`, replica, c.Hash, c.LoadedAt)
	}
	if err != nil {
		return fmt.Errorf("record the config of replica %s: %w", replica, err)
	}
	return nil
}

// Heartbeat records that replica r is alive.
func (s *Store) Heartbeat(ctx context.Context, r Replica) error {
	srcs := r.Sources
	if srcs == nil {
		srcs = map[string]any{}
	}
	sj, err := json.Marshal(srcs)
	if err != nil {
		return err
	}
	_, err = s.leases.Exec(ctx, `INSERT INTO replicas (name, hostname, pid, version, listen, sources) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (name) DO UPDATE SET last_seen = now(), sources = excluded.sources`, r.Name, r.Hostname, r.PID, r.Version, r.Listen, string(sj))
	return err
}

// ListReplicas returns replicas seen in the last 10 minutes with what each holds; alive means
// seen within aliveWithin.
func (s *Store) ListReplicas(ctx context.Context, aliveWithin time.Duration) ([]Replica, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT r.name, r.hostname, r.pid, r.version, r.listen, r.started_at, r.last_seen,
		  r.last_seen > now() - $1 * interval '1 millisecond',
		  COALESCE((SELECT array_agg(l.name ORDER BY l.name) FROM leases l WHERE l.holder = r.name AND l.expires_at > now()), '{}'),
		  (SELECT count(*) FROM resource_queue x WHERE x.lease_owner = r.name),
		  r.config_hash, r.config_loaded_at, r.config_error, r.config_error_at
		FROM replicas r WHERE r.last_seen > now() - interval '10 minutes' ORDER BY r.name`, aliveWithin.Milliseconds())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Replica, error) {
		var r Replica
		var loaded, errAt *time.Time
		err := row.Scan(&r.Name, &r.Hostname, &r.PID, &r.Version, &r.Listen, &r.StartedAt, &r.LastSeen, &r.Alive, &r.Leases, &r.Reconciles,
			&r.Config.Hash, &loaded, &r.Config.Error, &errAt)
		if loaded != nil {
			r.Config.LoadedAt = *loaded
		}
		if errAt != nil {
			r.Config.ErrorAt = *errAt
		}
		return r, err
	})
}
