package store

import (
	"context"
	"fmt"
	"time"
)

// RecordDelivery remembers a webhook delivery of source and reports whether it is the first
// time that delivery id arrives; a redelivery (the forge's retry or its "Redeliver" button)
// reports false and must not trigger again.
func (s *Store) RecordDelivery(ctx context.Context, source, deliveryID string) (firstTime bool, err error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO webhook_deliveries (source, delivery_id) VALUES ($1, $2)
		ON CONFLICT (source, delivery_id) DO NOTHING`, source, deliveryID)
	if err != nil {
		return false, fmt.Errorf("record webhook delivery of %s: %w", source, err)
	}
	return tag.RowsAffected() == 1, nil
}

// ForgetDelivery removes a recorded delivery whose handling failed after it was recorded,
// so that the forge's redelivery of it is acted on rather than answered as a duplicate.
func (s *Store) ForgetDelivery(ctx context.Context, source, deliveryID string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM webhook_deliveries WHERE source = $1 AND delivery_id = $2`, source, deliveryID); err != nil {
		return fmt.Errorf("forget webhook delivery of %s: %w", source, err)
	}
	return nil
}

// TrimDeliveries forgets deliveries older than maxAge (forges redeliver within hours, not
// weeks) and returns how many it removed; maxAge ≤ 0 removes nothing.
func (s *Store) TrimDeliveries(ctx context.Context, maxAge time.Duration) (int64, error) {
	if maxAge <= 0 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM webhook_deliveries WHERE received_at < now() - $1 * interval '1 millisecond'`,
		maxAge.Milliseconds())
	if err != nil {
		return 0, fmt.Errorf("trim webhook deliveries: %w", err)
	}
	return tag.RowsAffected(), nil
}
