package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/status"
)

// Claimed is one resource leased to a worker, with what the worker needs from its type.
type Claimed struct {
	ID                 int64
	UID                string
	Namespace          string
	Kind               string
	Name               string
	APIVersion         string
	Source             string
	Revision           string
	Labels             map[string]string
	Annotations        map[string]string
	Spec               json.RawMessage
	Generation         int64
	ObservedGeneration int64
	Phase              string
	Conditions         []status.Condition
	ActionState        json.RawMessage
	Attempt            int
	Deleting           bool
	LeaseToken         string

	TypeKnown        bool
	ActionName       string
	ActionWith       json.RawMessage
	ResyncIntervalMs *int64
}

// Claim leases up to n due resources to owner for ttl. Rows locked by another claimer are
// skipped, so replicas never wait on each other.
func (s *Store) Claim(ctx context.Context, owner string, n int, ttl time.Duration) ([]Claimed, error) {
	rows, err := s.pool.Query(ctx, `
		WITH c AS (
		  UPDATE resources r SET lease_owner = $1, lease_token = gen_random_uuid(),
		    lease_expires_at = now() + $2 * interval '1 millisecond', dirty = false,
		    phase = CASE WHEN r.deletion_timestamp IS NOT NULL THEN 'Deleting'
		                 WHEN r.observed_generation < r.generation AND r.phase <> 'Failed' THEN 'Reconciling'
		                 ELSE r.phase END
		  WHERE r.id IN (SELECT id FROM resources WHERE run_at <= now() AND lease_owner IS NULL
		                 ORDER BY run_at LIMIT $3 FOR UPDATE SKIP LOCKED)
		  RETURNING r.id, r.uid::text, r.namespace, r.kind, r.name, r.api_version, r.source, r.revision, r.labels,
		    r.annotations, r.spec, r.generation, r.observed_generation, r.phase, r.conditions, r.action_state, r.attempt,
		    r.deletion_timestamp IS NOT NULL AS deleting, r.lease_token::text
		)
		SELECT c.*, t.name IS NOT NULL, COALESCE(t.action_name, ''), t.action_with, t.resync_interval_ms
		FROM c LEFT JOIN resource_types t ON lower(t.name) = lower(c.kind)`,
		owner, ttl.Milliseconds(), n)
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Claimed, error) {
		var c Claimed
		var labels, ann, conds []byte
		err := r.Scan(&c.ID, &c.UID, &c.Namespace, &c.Kind, &c.Name, &c.APIVersion, &c.Source, &c.Revision, &labels,
			&ann, &c.Spec, &c.Generation, &c.ObservedGeneration, &c.Phase, &conds, &c.ActionState, &c.Attempt,
			&c.Deleting, &c.LeaseToken, &c.TypeKnown, &c.ActionName, &c.ActionWith, &c.ResyncIntervalMs)
		if err != nil {
			return c, err
		}
		if err := json.Unmarshal(labels, &c.Labels); err != nil {
			return c, err
		}
		if err := json.Unmarshal(ann, &c.Annotations); err != nil {
			return c, err
		}
		return c, json.Unmarshal(conds, &c.Conditions)
	})
}

// Current is the row as it is when a worker completes, which may differ from what it claimed
// (the syncer may have changed the spec or asked for deletion meanwhile).
type Current struct {
	Generation         int64
	ObservedGeneration int64
	Conditions         []status.Condition
	Deleting           bool
	Dirty              bool
}

// Update is what a worker writes when it completes.
type Update struct {
	Phase              string
	ObservedGeneration int64
	Conditions         []status.Condition
	Outputs            map[string]any // nil keeps the stored outputs
	ActionState        json.RawMessage
	KeepActionState    bool // leave action_state as stored (a failed call may have checkpointed an intent)
	Message            string
	Attempt            int
	RunAt              *time.Time // nil: nothing due (resync off)
	Remove             bool       // deletion finished: the row goes (history and events stay)
	History            *HistoryEntry
	Events             []Event
}

// Complete writes a worker's result in one transaction fenced by the lease token: if the
// lease moved on (expired and retaken), nothing is written and ErrLeaseLost is returned. fn
// computes the update from the row as it is now.
func (s *Store) Complete(ctx context.Context, id int64, token string, fn func(Current) Update) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var cur Current
		var conds []byte
		err := tx.QueryRow(ctx, `SELECT generation, observed_generation, conditions, deletion_timestamp IS NOT NULL, dirty
			FROM resources WHERE id = $1 AND lease_token = $2 FOR UPDATE`, id, token).
			Scan(&cur.Generation, &cur.ObservedGeneration, &conds, &cur.Deleting, &cur.Dirty)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrLeaseLost
		}
		if err != nil {
			return err
		}
		if err := json.Unmarshal(conds, &cur.Conditions); err != nil {
			return err
		}
		u := fn(cur)
		if u.History != nil {
			if err := insertHistory(ctx, tx, *u.History); err != nil {
				return fmt.Errorf("insert history: %w", err)
			}
		}
		if err := insertEvents(ctx, tx, u.Events); err != nil {
			return fmt.Errorf("insert events: %w", err)
		}
		if u.Remove {
			_, err := tx.Exec(ctx, "DELETE FROM resources WHERE id = $1", id)
			return err
		}
		cj, err := json.Marshal(u.Conditions)
		if err != nil {
			return err
		}
		var outputs any
		if u.Outputs != nil {
			b, err := json.Marshal(u.Outputs)
			if err != nil {
				return fmt.Errorf("encode outputs: %w", err)
			}
			outputs = string(b)
		}
		var state any
		if len(u.ActionState) > 0 {
			state = string(u.ActionState)
		}
		_, err = tx.Exec(ctx, `UPDATE resources SET phase = $2, observed_generation = $3, conditions = $4::jsonb,
			outputs = COALESCE($5::jsonb, outputs), action_state = CASE WHEN $10 THEN action_state ELSE $6::jsonb END,
			message = $7, attempt = $8,
			run_at = CASE WHEN dirty THEN now() ELSE $9 END, last_reconcile_time = now(), status_updated_at = now(),
			lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, dirty = false
			WHERE id = $1`,
			id, u.Phase, u.ObservedGeneration, string(cj), outputs, state, truncate(u.Message, 8000), u.Attempt, u.RunAt, u.KeepActionState)
		return err
	})
}

// RenewLeases extends owner's leases on the given tokens in one statement.
func (s *Store) RenewLeases(ctx context.Context, owner string, tokens []string, ttl time.Duration) (int, error) {
	if len(tokens) == 0 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, `UPDATE resources SET lease_expires_at = now() + $3 * interval '1 millisecond'
		WHERE lease_owner = $1 AND lease_token = ANY($2::uuid[])`, owner, tokens, ttl.Milliseconds())
	if err != nil {
		return 0, fmt.Errorf("renew leases: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// ReleaseExpiredLeases frees leases whose holder stopped renewing (a dead replica), so the
// work is claimed again; the old holder's writes fail on the token fence.
func (s *Store) ReleaseExpiredLeases(ctx context.Context) (int, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE resources SET lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL,
		run_at = LEAST(COALESCE(run_at, now()), now()), dirty = false
		WHERE lease_owner IS NOT NULL AND lease_expires_at < now()`)
	if err != nil {
		return 0, fmt.Errorf("release expired leases: %w", err)
	}
	if n := tag.RowsAffected(); n > 0 {
		_, _ = s.pool.Exec(ctx, "SELECT pg_notify($1, '')", WorkChannel)
		return int(n), nil
	}
	return 0, nil
}

// NextDue returns when the earliest unleased work is due (nil when nothing is scheduled).
func (s *Store) NextDue(ctx context.Context) (*time.Time, error) {
	var t *time.Time
	err := s.pool.QueryRow(ctx, "SELECT min(run_at) FROM resources WHERE lease_owner IS NULL AND run_at IS NOT NULL").Scan(&t)
	return t, err
}

// Release gives a lease back without a result (shutdown): the item is due again at once.
func (s *Store) Release(ctx context.Context, id int64, token string) error {
	_, err := s.pool.Exec(ctx, `UPDATE resources SET lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL,
		run_at = now(), dirty = false WHERE id = $1 AND lease_token = $2`, id, token)
	return err
}

// SaveActionState commits a plugin's checkpoint (its intent, before an external side effect),
// fenced by the lease token: it fails with ErrLeaseLost when the lease moved on.
func (s *Store) SaveActionState(ctx context.Context, id int64, token string, state json.RawMessage) error {
	var v any
	if len(state) > 0 {
		v = string(state)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE resources SET action_state = $3::jsonb WHERE id = $1 AND lease_token = $2`, id, token, v)
	if err != nil {
		return fmt.Errorf("save action state: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrLeaseLost
	}
	return nil
}
