package store

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// SyncChannel is the NOTIFY channel asking the holder of a source's lease to sync now; the
// payload is the source name.
const SyncChannel = "trueup_sync"

// NotifySync asks whichever replica holds source's lease to sync at once, to commit (or
// newer) when commit is not empty. The payload is "source" or "source commit".
func (s *Store) NotifySync(ctx context.Context, source, commit string) error {
	payload := source
	if commit != "" {
		payload += " " + commit
	}
	_, err := s.pool.Exec(ctx, "SELECT pg_notify($1, $2)", SyncChannel, payload)
	return err
}

// Listen keeps one connection outside the pool (on Options.SessionURL when set) LISTENing on channels and calls fn for each
// notification, until ctx ends. After a lost connection it reconnects with backoff; fn is
// called with channel "" after every (re)connect, since notifications sent meanwhile are
// lost and the caller must look for work itself.
func (s *Store) Listen(ctx context.Context, channels []string, fn func(channel, payload string), logger *slog.Logger) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, channels, fn, func() { backoff = 100 * time.Millisecond })
		if ctx.Err() != nil {
			return
		}
		logger.Warn("listen connection lost; reconnecting", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (s *Store) listenOnce(ctx context.Context, channels []string, fn func(string, string), connected func()) error {
	conn, err := s.sessionConn(ctx, s.pool)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, ch := range channels {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return err
		}
	}
	connected()
	fn("", "")
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		fn(n.Channel, n.Payload)
	}
}
