package store

import (
	"context"
	"fmt"
	"time"
)

// RetentionRule bounds a table by age and by rows per resource (zero: no bound).
type RetentionRule struct {
	MaxAge         time.Duration
	MaxPerResource int
}

// Retained counts what EnforceRetention removed.
type Retained struct{ History, Events int64 }

// EnforceRetention deletes history and events past their rules.
func (s *Store) EnforceRetention(ctx context.Context, history, events RetentionRule) (Retained, error) {
	var out Retained
	var err error
	if out.History, err = s.trim(ctx, "reconcile_history", "finished_at", history); err != nil {
		return out, fmt.Errorf("history retention: %w", err)
	}
	if out.Events, err = s.trim(ctx, "events", "created_at", events); err != nil {
		return out, fmt.Errorf("events retention: %w", err)
	}
	// The watch feed only serves resumption after short disconnections.
	if _, err := s.pool.Exec(ctx, "DELETE FROM changes WHERE created_at < now() - interval '1 hour'"); err != nil {
		return out, fmt.Errorf("changes retention: %w", err)
	}
	return out, nil
}

func (s *Store) trim(ctx context.Context, table, tsCol string, r RetentionRule) (int64, error) {
	var n int64
	if r.MaxAge > 0 {
		tag, err := s.pool.Exec(ctx, "DELETE FROM "+table+" WHERE "+tsCol+" < now() - $1 * interval '1 millisecond'", r.MaxAge.Milliseconds())
		if err != nil {
			return n, err
		}
		n += tag.RowsAffected()
	}
	if r.MaxPerResource > 0 {
		tag, err := s.pool.Exec(ctx, `DELETE FROM `+table+` t USING (
			SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY namespace, lower(kind), name ORDER BY id DESC) AS rn
			                FROM `+table+` WHERE name <> '') x WHERE x.rn > $1) d
			WHERE t.id = d.id`, r.MaxPerResource)
		if err != nil {
			return n, err
		}
		n += tag.RowsAffected()
	}
	return n, nil
}
