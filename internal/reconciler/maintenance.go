package reconciler

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/trueup-dev/trueup/internal/metrics"
	"github.com/trueup-dev/trueup/internal/store"
)

// MaintenanceOptions configure the maintenance loop.
type MaintenanceOptions struct {
	Replica  string
	Version  string
	Listen   string
	LeaseTTL time.Duration // the singleton lease (default 15s)
	// Every is how often retention runs on the lease holder (default 1m).
	Every           time.Duration
	History, Events store.RetentionRule
	// Sources reports, per source whose lease this replica holds, what it knows beyond the
	// source's row (last poll, last webhook, remote head); published with the heartbeat.
	Sources func() map[string]any
	// Metrics counts released attempts (nil: none).
	Metrics *metrics.Metrics
	// Live reports whether the replica holds its liveness session (liveness.Liveness.Held);
	// while it does not, the lease is neither taken nor renewed (nil: always live). The
	// heartbeat goes on.
	Live func() bool
}

// deliveriesMaxAge: forges redeliver within hours, not weeks.
const deliveriesMaxAge = 7 * 24 * time.Hour

// Maintenance heartbeats this replica every few seconds and, on the one replica holding the
// "maintenance" lease, enforces retention of history and events.
type Maintenance struct {
	opts  MaintenanceOptions
	store *store.Store
	log   *slog.Logger

	// marks is where the last retention run of the holding marksTerm got to, so that the next
	// one only trims resources with newer rows. A new holding starts from zero (every
	// resource): it cannot know what the previous holder finished. Only Run touches them.
	marks     store.RetentionMarks
	marksTerm int64

	wake chan struct{}
}

// NewMaintenance returns the loop; call Run.
func NewMaintenance(st *store.Store, opts MaintenanceOptions, logger *slog.Logger) *Maintenance {
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = 15 * time.Second
	}
	if opts.Every <= 0 {
		opts.Every = time.Minute
	}
	return &Maintenance{opts: opts, store: st, log: logger.With("component", "maintenance"), wake: make(chan struct{}, 1)}
}

// Wake makes the loop try to take the maintenance lease at once (it was given up or its
// holder found dead).
func (m *Maintenance) Wake() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// retentionRun is a retention pass under way in its own goroutine, owned by Run.
type retentionRun struct {
	term   int64
	cancel context.CancelFunc
	done   chan retentionResult // receives exactly once
}

type retentionResult struct {
	term       int64
	removed    store.Retained
	marks      store.RetentionMarks
	deliveries int64
	err        error
	stopped    bool // by Run: shutdown or lease lost
}

// Run loops until ctx ends, then stops retention and gives the lease up. Retention runs
// beside the loop, so that heartbeats and lease renewals never wait for it: a replica busy
// deleting must not look dead and hand the lease to another.
func (m *Maintenance) Run(ctx context.Context) error {
	host, _ := os.Hostname()
	me := store.Replica{Name: m.opts.Replica, Hostname: host, PID: os.Getpid(), Version: m.opts.Version, Listen: m.opts.Listen}
	tick := time.NewTicker(m.opts.LeaseTTL / 3)
	defer tick.Stop()
	var (
		held      *store.Lease
		lastRun   time.Time
		lastSweep time.Time
		run       *retentionRun
	)
	defer func() {
		if run != nil {
			run.cancel()
			m.finishRetention(<-run.done)
		}
		if held != nil {
			c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = m.store.ReleaseLease(c, *held)
		}
	}()
	for {
		if m.opts.Sources != nil {
			me.Sources = m.opts.Sources()
		}
		if err := m.store.Heartbeat(ctx, me); err != nil && ctx.Err() == nil {
			m.log.Warn("heartbeat failed", "err", err)
		}
		var (
			l   store.Lease
			ok  bool
			err error
		)
		// Without a liveness session, peers release whatever this replica takes.
		if m.opts.Live == nil || m.opts.Live() {
			l, ok, err = m.store.AcquireLease(ctx, "maintenance", m.opts.Replica, m.opts.LeaseTTL)
		}
		switch {
		case err == nil && ok:
			if held == nil || held.Term != l.Term {
				m.log.Info("holding the maintenance lease", "term", l.Term)
			}
			held = &l
		default:
			if held != nil && ctx.Err() == nil {
				if err != nil {
					m.log.Warn("renew the maintenance lease", "term", held.Term, "err", err)
				} else {
					m.log.Info("lost the maintenance lease", "term", held.Term)
				}
			}
			held = nil
		}
		if run != nil && (held == nil || held.Term != run.term) {
			// Its fence would stop it at the next batch anyway; this spares the wait.
			run.cancel()
		}
		if held != nil {
			// The fallback for replicas cut off from the database (a dead one is found at once
			// through its session): leases not renewed within their TTL are released here,
			// on one replica only.
			if n, err := m.store.ReleaseExpiredLeases(ctx, m.opts.Replica); err != nil && ctx.Err() == nil {
				m.log.Warn("release expired leases failed", "err", err)
			} else if n > 0 {
				m.log.Info("released expired leases; their attempts are recorded as Interrupted", "count", n)
				m.opts.Metrics.Interrupted(n)
			}
		}
		if held != nil && time.Since(lastSweep) >= sweepEvery {
			lastSweep = time.Now()
			m.sweepWaits(ctx)
		}
		if held != nil && run == nil && time.Since(lastRun) >= m.opts.Every {
			lastRun = time.Now()
			run = m.startRetention(ctx, *held)
		}
	wait:
		for {
			var done <-chan retentionResult
			if run != nil {
				done = run.done
			}
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
				break wait
			case <-m.wake:
				break wait
			case r := <-done:
				m.finishRetention(r)
				run = nil
			}
		}
	}
}

// sweepEvery is how often the maintenance holder looks for waits a crash left stale.
const sweepEvery = 10 * time.Second

// sweepWaits refreshes the dependency waits a refresh cut short left out of date
// (store.StaleWaits): a resource whose dependencies became Ready while the replica that wrote
// them died runs within sweepEvery.
func (m *Maintenance) sweepWaits(ctx context.Context) {
	ids, err := m.store.StaleWaits(ctx, 5000)
	if err == nil && len(ids) > 0 {
		err = m.store.RefreshDependencies(ctx, ids)
		m.log.Info("refreshed stale dependency waits", "count", len(ids))
	}
	if err != nil && ctx.Err() == nil {
		m.log.Warn("refresh stale dependency waits", "err", err)
	}
}

// startRetention starts one retention pass fenced by l.
func (m *Maintenance) startRetention(ctx context.Context, l store.Lease) *retentionRun {
	if l.Term != m.marksTerm {
		m.marks, m.marksTerm = store.RetentionMarks{}, l.Term
	}
	ctx, cancel := context.WithCancel(ctx)
	run := &retentionRun{term: l.Term, cancel: cancel, done: make(chan retentionResult, 1)}
	opts := store.RetentionOptions{History: m.opts.History, Events: m.opts.Events, Since: m.marks, Lease: &l}
	go func() {
		defer cancel()
		r := retentionResult{term: l.Term}
		r.removed, r.marks, r.err = m.store.Retain(ctx, opts)
		if !errors.Is(r.err, store.ErrLeaseLost) && ctx.Err() == nil {
			var err error
			if r.deliveries, err = m.store.TrimDeliveries(ctx, deliveriesMaxAge); err != nil {
				r.err = errors.Join(r.err, err)
			}
		}
		r.stopped = ctx.Err() != nil
		run.done <- r
	}()
	return run
}

// finishRetention keeps the marks of a pass and logs what it did.
func (m *Maintenance) finishRetention(r retentionResult) {
	if r.term == m.marksTerm {
		m.marks = r.marks
	}
	switch {
	case errors.Is(r.err, store.ErrLeaseLost):
		m.log.Info("retention stopped: the maintenance lease moved on", "term", r.term)
	case r.stopped:
		m.log.Debug("retention interrupted", "term", r.term, "err", r.err)
	case r.err != nil:
		m.log.Warn("retention failed", "err", r.err)
	}
	if r.removed.History+r.removed.Events > 0 {
		m.log.Info("retention removed old rows", "history", r.removed.History, "events", r.removed.Events)
	}
	if r.deliveries > 0 {
		m.log.Debug("forgot old webhook deliveries", "count", r.deliveries)
	}
}
