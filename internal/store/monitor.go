package store

import (
	"context"
	"fmt"
	"time"
)

// LeaseState returns the names of the singleton leases a replica holds (unexpired) and how
// many replicas were seen within aliveWithin, in one statement: the metrics read it at
// every scrape.
func (s *Store) LeaseState(ctx context.Context, aliveWithin time.Duration) (held []string, alive int, err error) {
	err = s.pool.QueryRow(ctx, `SELECT
		COALESCE((SELECT array_agg(name ORDER BY name) FROM leases WHERE expires_at > now()), '{}'),
		(SELECT count(*) FROM replicas WHERE last_seen > now() - $1 * interval '1 millisecond')`, aliveWithin.Milliseconds()).Scan(&held, &alive)
	if err != nil {
		return nil, 0, fmt.Errorf("read leases: %w", err)
	}
	return held, alive, nil
}
