package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/trueup-dev/trueup/internal/status"
)

// RequeueWindowed makes due now every resource a change window holds (Reconciling reason
// WindowClosed): after a reload of the windows, each is checked again against the windows in
// force (a hold with no known end waits for exactly this). It returns how many.
func (s *Store) RequeueWindowed(ctx context.Context) (int, error) {
	n, err := s.requeueWhere(ctx, "conditions @> jsonb_build_array(jsonb_build_object('type', $1::text, 'reason', $2::text))",
		status.Reconciling, status.ReasonWindowClosed)
	if err != nil {
		return 0, fmt.Errorf("requeue resources held by change windows: %w", err)
	}
	return n, nil
}

// requeueWhere makes due now the resources that are not suspended and that where (SQL over
// resources, with args) selects, and wakes the claimers; it returns how many.
func (s *Store) requeueWhere(ctx context.Context, where string, args ...any) (int, error) {
	var n int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE resource_queue SET run_at = now(), dirty = dirty OR lease_owner IS NOT NULL
			WHERE id IN (SELECT id FROM resources WHERE `+where+`) AND NOT suspended`, args...)
		if err != nil {
			return err
		}
		if n = tag.RowsAffected(); n > 0 {
			_, err = tx.Exec(ctx, "SELECT pg_notify($1, '')", WorkChannel)
		}
		return err
	})
	return int(n), err
}
