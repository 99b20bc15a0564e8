package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A store opened with Options.ReadURL sends the read queries behind the API, the dashboard
// and MCP (those that call reader) to a streaming standby while it keeps up, and everything
// else (writes, locks, LISTEN/NOTIFY, the queue, the watch stream's reads of changes) to the
// primary. A loop of its own measures the standby's lag once a second and moves the reads to
// the primary while the lag is over MaxReadLag or the standby does not answer (a server not
// in recovery, promoted or another one, counts as not answering).

// standbyInterval is how often the lag is measured: the lag is known to within it.
const standbyInterval = time.Second

// maxLagSamples bounds the primary positions kept while the standby is behind: at one a
// second, lags up to an hour are measured to the second; past that addSample merges
// neighbouring samples, so a longer lag is measured to within a 1/1800th of itself, never
// under it.
const maxLagSamples = 3600

// standby is the read pool of a streaming standby and what its loop last measured.
type standby struct {
	pool   *pgxpool.Pool
	name   string // host:port/database of the read url, without its credentials
	maxLag time.Duration
	log    *slog.Logger
	stop   context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	lag       time.Duration
	onPrimary bool // reads go to the primary: the standby lags or does not answer
	measured  bool // the loop measured at least once
}

// walSample is the primary's WAL position at a moment.
type walSample struct {
	at  time.Time
	lsn int64
}

// addSample appends the primary's current position. When samples is full, pairs of
// neighbouring samples merge first, each into the older one's time with the newer one's
// position: the merged sample counts as replayed only once the newer position is, so the lag
// is never under the true one (over by at most the pair's spacing), and the current position
// is always the newest sample: the lag reads 0 only once the standby reached it.
func addSample(samples []walSample, s walSample) []walSample {
	if len(samples) >= maxLagSamples {
		n := 0
		for i := 0; i < len(samples); i += 2 {
			m := samples[i]
			if i+1 < len(samples) {
				m.lsn = samples[i+1].lsn
			}
			samples[n] = m
			n++
		}
		samples = samples[:n]
	}
	return append(samples, s)
}

// replicationLag is how long ago the primary wrote the oldest position the standby has not
// replayed (zero when it replayed all of them), and the samples still unreplayed. A sample is
// replayed when replayed reaches its position.
func replicationLag(samples []walSample, replayed int64, now time.Time) (time.Duration, []walSample) {
	i := 0
	for i < len(samples) && samples[i].lsn <= replayed {
		i++
	}
	samples = samples[i:]
	if len(samples) == 0 {
		return 0, samples
	}
	return now.Sub(samples[0].at), samples
}

// readsOnPrimary decides where reads go: to the primary while the standby did not answer or
// lags more than maxLag, and once there (wasOnPrimary) until the lag is under maxLag/2, so
// that a lag hovering about maxLag does not move the reads back and forth each second.
func readsOnPrimary(lag, maxLag time.Duration, standbyErr error, wasOnPrimary bool) bool {
	if standbyErr != nil {
		return true
	}
	if wasOnPrimary {
		return lag >= maxLag/2
	}
	return lag > maxLag
}

// openStandby connects to url and starts the lag loop. Reads start on the primary until the
// first measurement. pooled (a session url is set, so url and readURL may go through a
// transaction pooler) runs the standby's statements without named prepared statements, as
// Open does for the primary's pools, unless the url chose an exec mode itself.
func (s *Store) openStandby(ctx context.Context, url string, maxConns int32, pooled bool, maxLag time.Duration, log *slog.Logger) error {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return fmt.Errorf("parse database read url: %w", redactErr(err))
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	if pooled && cfg.ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement { // pgx's default, not a choice in the url
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	}
	jitOff(cfg, pooled)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect to the read standby: %w", redactErr(err))
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	loopCtx, stop := context.WithCancel(context.Background())
	name := fmt.Sprintf("database.readURL %s:%d/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
	sb := &standby{pool: pool, name: name, maxLag: maxLag, log: log, stop: stop, done: make(chan struct{}), onPrimary: true}
	s.standby = sb
	go func() {
		defer close(sb.done)
		sb.loop(loopCtx, s.pool)
	}()
	return nil
}

// loop measures the lag every standbyInterval until ctx ends: the primary's WAL position is
// sampled, then the standby's replay position read; the lag is the age of the oldest sample
// the standby has not replayed. Both are plain functions any role may call.
func (sb *standby) loop(ctx context.Context, primary *pgxpool.Pool) {
	var samples []walSample
	t := time.NewTicker(standbyInterval)
	defer t.Stop()
	for {
		at := time.Now()
		qctx, cancel := context.WithTimeout(ctx, standbyInterval)
		var lsn int64
		err := primary.QueryRow(qctx, `SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint`).Scan(&lsn)
		if err == nil {
			samples = addSample(samples, walSample{at: at, lsn: lsn})
			var replayed int64
			var inRecovery bool
			serr := sb.pool.QueryRow(qctx, `SELECT pg_is_in_recovery(),
				COALESCE((pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint, 0)`).Scan(&inRecovery, &replayed)
			if serr == nil && !inRecovery {
				// A promoted standby, or another server: its data is not url's, however
				// current its own position is.
				serr = fmt.Errorf("%s is not in recovery (not a standby: promoted, or another server)", sb.name)
			}
			var lag time.Duration
			if serr == nil {
				lag, samples = replicationLag(samples, replayed, time.Now())
			} else if len(samples) > 0 {
				lag = time.Since(samples[0].at)
			}
			sb.record(lag, serr)
		} else if ctx.Err() == nil {
			sb.log.Debug("read standby: primary position", "error", err)
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// record keeps one measurement and logs when reads move.
func (sb *standby) record(lag time.Duration, standbyErr error) {
	sb.mu.Lock()
	// Before the first measurement the reads are on the primary for want of one, not
	// because of a lag: the plain bound applies.
	onPrimary := readsOnPrimary(lag, sb.maxLag, standbyErr, sb.measured && sb.onPrimary)
	moved := !sb.measured || onPrimary != sb.onPrimary
	sb.lag, sb.onPrimary, sb.measured = lag, onPrimary, true
	sb.mu.Unlock()
	switch {
	case !moved:
	case standbyErr != nil && !errors.Is(standbyErr, context.Canceled):
		sb.log.Warn("read standby does not answer: reads go to the primary", "error", standbyErr)
	case onPrimary:
		sb.log.Warn("read standby lags: reads go to the primary", "lag", lag.Round(time.Millisecond), "max_read_lag", sb.maxLag)
	default:
		sb.log.Info("reads go to the standby", "lag", lag.Round(time.Millisecond))
	}
}

func (sb *standby) close() {
	sb.stop()
	<-sb.done
	sb.pool.Close()
}

// ReadLag reports the standby's last measured replication lag and whether reads go to the
// primary because of it; a store without a standby reports zero and false.
func (s *Store) ReadLag() (lag time.Duration, onPrimary bool) {
	sb := s.standby
	if sb == nil {
		return 0, false
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.lag, sb.onPrimary
}

// reader is the pool for a read the standby may serve: the standby's while it keeps up,
// else the primary's.
func (s *Store) reader() *pgxpool.Pool {
	if sb := s.standby; sb != nil {
		sb.mu.Lock()
		ok := !sb.onPrimary
		sb.mu.Unlock()
		if ok {
			return sb.pool
		}
	}
	return s.pool
}

// Primary is the store without its standby: for a read that decides a write (a change
// window's check before an operator command), which must see what the write will. It shares
// s's pools: close s, never it.
func (s *Store) Primary() *Store {
	if s.standby == nil {
		return s
	}
	return &Store{pool: s.pool, leases: s.leases, url: s.url}
}
