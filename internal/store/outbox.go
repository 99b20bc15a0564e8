package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/clip"
)

// Outbox states.
const (
	OutboxPending = "pending"
	OutboxSent    = "sent"
	OutboxDead    = "dead"
)

// OutboxEntry is one notification waiting for (or past) delivery.
type OutboxEntry struct {
	ID                            int64
	CreatedAt                     time.Time
	Event                         string
	Namespace, Kind, Name, Source string
	Revision                      string
	Labels                        map[string]string
	Phase, Message                string
	State                         string
	Attempts                      int
	NextAttemptAt                 time.Time
	LastError                     string
	Done                          []string // "rule/provider" pairs delivered
	// Deliveries maps a target to the delivery id of the message about this entry sent (or
	// tried) to it and not yet delivered (StartOutboxDelivery).
	Deliveries map[string]string
	FinishedAt *time.Time
}

// outboxItem is an event about a resource row, written with the status change: the row's
// identity, revision and labels are read from resources in the same statement.
type outboxItem struct {
	id             int64
	event          string
	phase, message string
}

// insertOutboxForResources writes one outbox row per item, reading the resource's identity
// from its row; it must run before the rows it names are deleted.
func insertOutboxForResources(ctx context.Context, tx pgx.Tx, items []outboxItem) error {
	if len(items) == 0 {
		return nil
	}
	n := len(items)
	ids, evs, phases, msgs := make([]int64, n), make([]string, n), make([]string, n), make([]string, n)
	for i, it := range items {
		ids[i], evs[i], phases[i], msgs[i] = it.id, it.event, it.phase, clip.Storable(it.message, 4000)
	}
	_, err := tx.Exec(ctx, `INSERT INTO notification_outbox (event, namespace, kind, name, source, revision, labels, phase, message)
		SELECT x.event, r.namespace, r.kind, r.name, r.source, r.revision, r.labels, x.phase, x.message
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS x(id, event, phase, message, ord)
		JOIN resources r ON r.id = x.id ORDER BY x.ord`, ids, evs, phases, msgs)
	return err
}

// insertOutbox writes outbox rows that are not about one resource row (a source's rejected
// revision, a skipped prune).
func insertOutbox(ctx context.Context, db DB, entries []OutboxEntry) error {
	if len(entries) == 0 {
		return nil
	}
	n := len(entries)
	cols := make([][]string, 9)
	for i := range cols {
		cols[i] = make([]string, n)
	}
	for i, e := range entries {
		labels, err := json.Marshal(e.Labels)
		if err != nil || e.Labels == nil {
			labels = []byte("{}")
		}
		for c, v := range []string{e.Event, e.Namespace, e.Kind, e.Name, e.Source, e.Revision, string(labels), e.Phase, clip.Storable(e.Message, 4000)} {
			cols[c][i] = v
		}
	}
	_, err := db.Exec(ctx, `INSERT INTO notification_outbox (event, namespace, kind, name, source, revision, labels, phase, message)
		SELECT a, b, c, d, e, f, g::jsonb, h, i
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
		  WITH ORDINALITY AS x(a, b, c, d, e, f, g, h, i, ord) ORDER BY ord`,
		cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7], cols[8])
	if err != nil {
		return fmt.Errorf("insert outbox: %w", err)
	}
	return nil
}

// AddOutbox records notifications outside any other transaction.
func (s *Store) AddOutbox(ctx context.Context, entries []OutboxEntry) error {
	return insertOutbox(ctx, s.pool, entries)
}

const outboxCols = `id, created_at, event, namespace, kind, name, source, revision, labels, phase, message, state, attempts,
	next_attempt_at, last_error, done, deliveries, finished_at`

func scanOutbox(r pgx.CollectableRow) (OutboxEntry, error) {
	var e OutboxEntry
	var labels, deliveries []byte
	if err := r.Scan(&e.ID, &e.CreatedAt, &e.Event, &e.Namespace, &e.Kind, &e.Name, &e.Source, &e.Revision, &labels, &e.Phase,
		&e.Message, &e.State, &e.Attempts, &e.NextAttemptAt, &e.LastError, &e.Done, &deliveries, &e.FinishedAt); err != nil {
		return e, err
	}
	if err := json.Unmarshal(deliveries, &e.Deliveries); err != nil {
		return e, err
	}
	return e, decodeStrings(labels, &e.Labels)
}

// DueOutbox returns up to n pending entries whose next attempt is due, oldest first.
func (s *Store) DueOutbox(ctx context.Context, n int) ([]OutboxEntry, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+outboxCols+` FROM notification_outbox
		WHERE state = 'pending' AND next_attempt_at <= now() ORDER BY id LIMIT $1`, n)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanOutbox)
}

// ListOutbox returns entries in state ("" for all), newest first.
func (s *Store) ListOutbox(ctx context.Context, state string, limit int) ([]OutboxEntry, error) {
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	rows, err := s.pool.Query(ctx, `SELECT `+outboxCols+` FROM notification_outbox
		WHERE $1 = '' OR state = $1 ORDER BY id DESC LIMIT $2`, state, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanOutbox)
}

// OutboxResult is the outcome of one delivery attempt of one entry, as the sender decided it.
type OutboxResult struct {
	ID          int64
	State       string // pending (retry at NextAttempt), sent or dead
	Done        []string
	Attempts    int
	NextAttempt time.Time
	Error       string
}

// FinishOutbox records delivery outcomes, in one statement. An entry's done becomes the union
// of what it holds and the result's: a target recorded meanwhile (MarkOutboxDelivered) stays.
func (s *Store) FinishOutbox(ctx context.Context, results []OutboxResult) error {
	if len(results) == 0 {
		return nil
	}
	n := len(results)
	ids, states, errs, next := make([]int64, n), make([]string, n), make([]string, n), make([]time.Time, n)
	att := make([]int32, n)
	done := make([]string, n)
	for i, r := range results {
		d, err := json.Marshal(r.Done)
		if err != nil || r.Done == nil {
			d = []byte("[]")
		}
		ids[i], states[i], errs[i], next[i], att[i], done[i] = r.ID, r.State, clip.Storable(r.Error, 2000), r.NextAttempt, int32(r.Attempts), string(d)
	}
	_, err := s.pool.Exec(ctx, `UPDATE notification_outbox o SET state = x.state, last_error = x.err, next_attempt_at = x.next,
			attempts = x.att,
			done = ARRAY(SELECT DISTINCT d FROM unnest(o.done || ARRAY(SELECT jsonb_array_elements_text(x.done::jsonb))) AS d ORDER BY d),
			finished_at = CASE WHEN x.state = 'pending' THEN NULL ELSE now() END
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::timestamptz[], $5::int[], $6::text[]) AS x(id, state, err, next, att, done)
		WHERE o.id = x.id AND o.state = 'pending'`, ids, states, errs, next, att, done)
	if err != nil {
		return fmt.Errorf("finish outbox: %w", err)
	}
	return nil
}

// MarkOutboxDelivered records at once that the message to target about the entries ids was
// accepted by its provider (their done gains target; state and attempts are left to
// FinishOutbox). Written per message, as soon as the provider answers, it bounds what a
// replica that dies mid-run sends again to the one message in flight.
func (s *Store) MarkOutboxDelivered(ctx context.Context, ids []int64, target string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `UPDATE notification_outbox SET done = array_append(done, $2)
		WHERE id = ANY($1) AND state = 'pending' AND NOT ($2 = ANY(done))`, ids, target)
	if err != nil {
		return fmt.Errorf("mark outbox delivered: %w", err)
	}
	return nil
}

// StartOutboxDelivery records, before a message's first send, its delivery id on the entries
// ids for target: every retry of the message, by this replica or the next lease holder,
// rebuilds it from exactly these entries under this id (notify.Plan), so that receivers can
// drop the repeat. An entry that has an id for target keeps it.
func (s *Store) StartOutboxDelivery(ctx context.Context, ids []int64, target, deliveryID string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `UPDATE notification_outbox SET deliveries = deliveries || jsonb_build_object($2::text, $3::text)
		WHERE id = ANY($1) AND state = 'pending' AND NOT (deliveries ? $2)`, ids, target, deliveryID)
	if err != nil {
		return fmt.Errorf("record a notification's delivery id: %w", err)
	}
	return nil
}

// CountOutbox counts the entries in state.
func (s *Store) CountOutbox(ctx context.Context, state string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM notification_outbox WHERE state = $1`, state).Scan(&n)
	return n, err
}

// TrimOutbox deletes sent entries finished more than sent ago and dead ones more than dead
// ago, at most limit rows per call (the caller repeats while it returns limit).
func (s *Store) TrimOutbox(ctx context.Context, sent, dead time.Duration, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM notification_outbox WHERE id IN (
		SELECT id FROM notification_outbox
		WHERE (state = 'sent' AND finished_at < now() - $1 * interval '1 millisecond')
		   OR (state = 'dead' AND finished_at < now() - $2 * interval '1 millisecond')
		ORDER BY id LIMIT $3)`, sent.Milliseconds(), dead.Milliseconds(), limit)
	if err != nil {
		return 0, fmt.Errorf("trim outbox: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
