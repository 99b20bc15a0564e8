package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/status"
)

// LeasesChannel is notified when singleton leases were given up or taken from a dead replica:
// the payload is "*" (any) or a lease name. Replicas try to take them at once.
const LeasesChannel = "trueup_leases"

// livenessClass is the first key of every replica's advisory lock (pg_advisory_lock(int, int));
// the second is the replica's liveness_key.
const livenessClass = 0x74727570 // "trup"

// HistoryInterrupted is the history result of an attempt cut short by the death of its
// replica or the loss of its lease.
const HistoryInterrupted = "Interrupted"

// Liveness is a replica's dedicated database session holding its advisory lock: while the
// session lives, the lock is held; the moment PostgreSQL ends the session (the process died,
// the connection was killed), the lock is free and every peer can see it in pg_locks.
type Liveness struct {
	conn *pgx.Conn
	Key  int32
}

// HoldLiveness opens the replica's liveness session (on Options.SessionURL when set), takes a fresh lock key, records it on the
// replica's row and releases whatever the replica's previous session still held, recording
// its attempts as Interrupted. Replica names are unique per process, so a previous session
// that still holds its lock is this process's own, cut off (a dropped idle connection the
// server has not noticed yet): it is terminated rather than waited for — it may otherwise
// linger until the server's TCP keepalive ends it.
func (s *Store) HoldLiveness(ctx context.Context, r Replica) (*Liveness, int, error) {
	conn, err := s.sessionConn(ctx, s.leases)
	if err != nil {
		return nil, 0, fmt.Errorf("liveness session: %w", err)
	}
	l := &Liveness{conn: conn}
	fail := func(err error) (*Liveness, int, error) {
		_ = conn.Close(context.Background())
		return nil, 0, err
	}
	// The server notices a vanished client within seconds rather than the OS default of two
	// hours; the replica itself notices sooner still (Wait pings), and stops its work first.
	if _, err := conn.Exec(ctx, "SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 2; SET tcp_keepalives_count = 3"); err != nil {
		return fail(fmt.Errorf("liveness session: %w", err))
	}
	for try := 0; ; try++ {
		key := rand.Int32N(1<<31 - 1)
		var ok bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2)", livenessClass, key).Scan(&ok); err != nil {
			return fail(fmt.Errorf("liveness lock: %w", err))
		}
		if ok {
			l.Key = key
			break
		}
		if try > 20 {
			return fail(errors.New("liveness lock: no free key"))
		}
	}
	var released int
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		var old *int32
		err := tx.QueryRow(ctx, "SELECT liveness_key FROM replicas WHERE name = $1 FOR UPDATE", r.Name).Scan(&old)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if old != nil && *old != l.Key {
			// End the previous session if it still holds its lock: every lease it stood for
			// is released below, and it must not be seen alive.
			if _, err := tx.Exec(ctx, `SELECT pg_terminate_backend(l.pid) FROM pg_locks l WHERE `+lockHeldWhere("$2"),
				livenessClass, *old); err != nil {
				return fmt.Errorf("end the previous session: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO replicas (name, hostname, pid, version, listen, liveness_key) VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (name) DO UPDATE SET hostname = excluded.hostname, pid = excluded.pid, version = excluded.version,
			  listen = excluded.listen, liveness_key = excluded.liveness_key, last_seen = now()`,
			r.Name, r.Hostname, r.PID, r.Version, r.Listen, l.Key); err != nil {
			return err
		}
		released, err = releaseOwner(ctx, tx, r.Name, r.Name, "its previous database session ended")
		return err
	})
	if err != nil {
		return fail(fmt.Errorf("liveness: %w", err))
	}
	return l, released, nil
}

// Wait blocks until the liveness session ends (error) or ctx does (nil). It reads the
// connection (a server that ends the session is seen at once) and pings it every
// pingEvery: an idle connection dropped on the way (a NAT, a partition) is noticed within
// pingEvery + pingTimeout.
func (l *Liveness) Wait(ctx context.Context) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, pingEvery)
		err := l.conn.PgConn().WaitForNotification(wctx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			return errors.New("unexpected notification on the liveness session")
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, pingTimeout)
		err = l.conn.Ping(pctx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("liveness ping: %w", err)
		}
	}
}

// The liveness session's own check of its connection.
const (
	pingEvery   = time.Second
	pingTimeout = 3 * time.Second
)

// Close ends the session, freeing the lock.
func (l *Liveness) Close() { _ = l.conn.Close(context.Background()) }

// Retire forgets the replica's liveness key (clean shutdown, after it released its work), so
// that peers do not report it dead when its session closes. Anything still leased to the
// replica is released first as a takeover releases it (status.Released): a claim committed
// while it stopped, never started, goes back as it was; a row whose call had started (its
// release failed) shows the attempt Interrupted, with a history row.
func (s *Store) Retire(ctx context.Context, name string, key int32) error {
	return pgx.BeginFunc(ctx, s.leases, func(tx pgx.Tx) error {
		if _, err := releaseLeased(ctx, tx, `lease_owner = $1`, []any{name}, false, name,
			"it shut down with the call unfinished"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "UPDATE replicas SET liveness_key = NULL WHERE name = $1 AND liveness_key = $2", name, key)
		return err
	})
}

// DeadReplica is a replica whose liveness lock is free: its database session ended.
type DeadReplica struct {
	Name string
	Key  int32
}

// DeadReplicas lists replicas with a liveness key whose lock nobody holds. It reads pg_locks
// (the lock manager's shared memory), no table of ours but the few replicas rows.
func (s *Store) DeadReplicas(ctx context.Context) ([]DeadReplica, error) {
	rows, err := s.leases.Query(ctx, `SELECT r.name, r.liveness_key FROM replicas r
		WHERE r.liveness_key IS NOT NULL AND NOT EXISTS (`+lockHeldSQL("r.liveness_key")+`)`, livenessClass)
	if err != nil {
		return nil, fmt.Errorf("dead replicas: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (DeadReplica, error) {
		var d DeadReplica
		err := r.Scan(&d.Name, &d.Key)
		return d, err
	})
}

// lockHeldWhere matches, in pg_locks l, the granted liveness lock (class $1) of key in this
// database: the two-int form of pg_advisory_lock shows as classid, objid, objsubid 2.
func lockHeldWhere(key string) string {
	return `l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
		AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND l.classid::int8 = $1 AND l.objid::int8 = ` + key
}

func lockHeldSQL(key string) string { return `SELECT 1 FROM pg_locks l WHERE ` + lockHeldWhere(key) }

func keyHeld(ctx context.Context, db DB, key int32) (bool, error) {
	var held bool
	err := db.QueryRow(ctx, `SELECT EXISTS (`+lockHeldSQL("$2")+`)`, livenessClass, key).Scan(&held)
	return held, err
}

// ReleaseDeadReplica releases everything the dead replica held: its singleton leases expire
// (and peers are told on LeasesChannel), its leased resources are due again with their
// attempts recorded as Interrupted. Only one replica does it: the key is checked and cleared
// under the row's lock, and re-checked against pg_locks (a replica that reconnected has a new
// key). It returns false when there was nothing to do.
func (s *Store) ReleaseDeadReplica(ctx context.Context, d DeadReplica, by string) (released int, done bool, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "UPDATE replicas SET liveness_key = NULL WHERE name = $1 AND liveness_key = $2", d.Name, d.Key)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		if held, err := keyHeld(ctx, tx, d.Key); err != nil || held {
			return errors.Join(err, errAlive)
		}
		done = true
		released, err = releaseOwner(ctx, tx, d.Name, by, "its database session ended (the process died or lost its connection)")
		return err
	})
	if errors.Is(err, errAlive) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("release replica %s: %w", d.Name, err)
	}
	return released, done, nil
}

var errAlive = errors.New("replica alive")

// releaseOwner expires owner's singleton leases and releases its leased resources.
func releaseOwner(ctx context.Context, tx pgx.Tx, owner, by, why string) (int, error) {
	rows, err := tx.Query(ctx, `UPDATE leases SET expires_at = now() - interval '1 millisecond'
		WHERE holder = $1 AND expires_at > now() RETURNING name`, owner)
	if err != nil {
		return 0, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	for _, n := range names {
		if _, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", LeasesChannel, n); err != nil {
			return 0, err
		}
	}
	return releaseLeased(ctx, tx, "lease_owner = $1", []any{owner}, false, by, why)
}

// releaseLeased releases the leased resources matching where (arguments from $1), recording
// each attempt whose call had started as Interrupted in history and events; the status comes
// from status.Released (a claim that never started shows what it showed). skipLocked skips rows being written right now (the reaper; they are
// looked at again next time).
func releaseLeased(ctx context.Context, tx pgx.Tx, where string, args []any, skipLocked bool, by, why string) (int, error) {
	lock := "FOR UPDATE OF r, q"
	if skipLocked {
		lock += " SKIP LOCKED"
	}
	rows, err := tx.Query(ctx, `SELECT r.id, uid::text, namespace, kind, name, source, revision, generation, observed_generation,
		  phase, conditions, deletion_timestamp IS NOT NULL, lease_owner, COALESCE(claimed_at, now()), started_at IS NOT NULL
		FROM resources r JOIN resource_queue q ON q.id = r.id WHERE `+where+` ORDER BY r.id `+lock, args...)
	if err != nil {
		return 0, err
	}
	type leased struct {
		id                            int64
		uid, ns, kind, name, src, rev string
		gen, observed                 int64
		phase                         string
		conds                         []status.Condition
		deleting                      bool
		owner                         string
		claimed                       time.Time
		started                       bool
	}
	var items []leased
	for rows.Next() {
		var l leased
		var conds []byte
		if err := rows.Scan(&l.id, &l.uid, &l.ns, &l.kind, &l.name, &l.src, &l.rev, &l.gen, &l.observed, &l.phase, &conds,
			&l.deleting, &l.owner, &l.claimed, &l.started); err != nil {
			rows.Close()
			return 0, err
		}
		if err := json.Unmarshal(conds, &l.conds); err != nil {
			rows.Close()
			return 0, err
		}
		items = append(items, l)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(items) == 0 {
		return 0, err
	}
	now := time.Now()
	n := len(items)
	ids, phases, conds := make([]int64, n), make([]string, n), make([]string, n)
	var (
		hist    []HistoryEntry
		events  []Event
		changes []Change
	)
	for i, l := range items {
		st, interrupted := status.Released(status.State{Phase: l.phase, Conditions: l.conds, ObservedGeneration: l.observed}, l.gen, l.deleting,
			l.started, l.owner, now)
		b, err := json.Marshal(st.Conditions)
		if err != nil {
			return 0, err
		}
		ids[i], phases[i], conds[i] = l.id, st.Phase, string(b)
		if !interrupted {
			// Claimed, its call never started: back to the queue, nothing was attempted.
			continue
		}
		op := "reconcile"
		if l.deleting {
			op = "delete"
		}
		msg := fmt.Sprintf("interrupted: replica %s stopped during this attempt (%s); taken over by %s", l.owner, why, by)
		hist = append(hist, HistoryEntry{UID: l.uid, Namespace: l.ns, Kind: l.kind, Name: l.name, Generation: l.gen, Revision: l.rev,
			Operation: op, Trigger: "takeover", Result: HistoryInterrupted, Message: msg, Replica: l.owner, StartedAt: l.claimed, FinishedAt: now})
		events = append(events, Event{Namespace: l.ns, Kind: l.kind, Name: l.name, Source: l.src, Type: EventWarning, Reason: HistoryInterrupted,
			Message: msg, Replica: by})
		if st.Phase != l.phase {
			changes = append(changes, Change{Object: "resource", Type: ChangeModified, Namespace: l.ns, Kind: l.kind, Name: l.name,
				Source: l.src, Phase: st.Phase, Generation: l.gen})
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE resources r SET phase = x.phase, conditions = x.conds::jsonb
		FROM unnest($1::bigint[], $2::text[], $3::text[]) AS x(id, phase, conds) WHERE r.id = x.id`, ids, phases, conds); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `UPDATE resource_queue q SET lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, claimed_at = NULL, started_at = NULL,
		  run_at = LEAST(COALESCE(q.run_at, now()), now()), dirty = false WHERE q.id = ANY($1::bigint[])`, ids); err != nil {
		return 0, err
	}
	if err := insertHistoryBatch(ctx, tx, hist); err != nil {
		return 0, err
	}
	if err := insertEvents(ctx, tx, events); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, "SELECT pg_notify($1, '')", WorkChannel); err != nil {
		return 0, err
	}
	return n, appendChanges(ctx, tx, changes)
}
