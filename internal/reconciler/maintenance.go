package reconciler

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/trueup-dev/trueup/internal/lease"
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

// Maintenance runs the replica's housekeeping as one service per duty: the heartbeat on every
// replica, and on the one replica holding the "maintenance" lease, each on its own goroutine
// under the holding's context: releasing leases their holders stopped renewing, refreshing
// stale dependency waits, and retention of history, events and webhook deliveries. The lease
// is renewed by its holder's own goroutine, so no duty, however long, delays a renewal or a
// heartbeat.
type Maintenance struct {
	opts  MaintenanceOptions
	store *store.Store
	log   *slog.Logger
	lease *lease.Holder

	// marks is where the last retention run of the holding marksTerm got to, so that the next
	// one only trims resources with newer rows. A new holding starts from zero (every
	// resource): it cannot know what the previous holder finished. Only the retention duty
	// touches them.
	marks     store.RetentionMarks
	marksTerm int64
}

// NewMaintenance returns the services; call Run.
func NewMaintenance(st *store.Store, opts MaintenanceOptions, logger *slog.Logger) *Maintenance {
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = 15 * time.Second
	}
	if opts.Every <= 0 {
		opts.Every = time.Minute
	}
	log := logger.With("component", "maintenance")
	return &Maintenance{opts: opts, store: st, log: log,
		lease: lease.New(st, lease.Options{Name: "maintenance", Replica: opts.Replica, TTL: opts.LeaseTTL, Live: opts.Live,
			Label: "maintenance"}, log)}
}

// Wake makes the holder try to take the maintenance lease at once (it was given up or its
// holder found dead).
func (m *Maintenance) Wake() { m.lease.TryNow() }

// duty is one job of the lease holder, run every every and at once when the lease is taken.
type duty struct {
	name  string
	every time.Duration
	run   func(ctx context.Context, l store.Lease)
	wake  chan struct{}
}

// Run runs the heartbeat and the holder's duties until ctx ends, then gives the lease up.
func (m *Maintenance) Run(ctx context.Context) error {
	if err := m.lease.Start(ctx); err != nil {
		return err
	}
	duties := []*duty{
		{name: "release expired leases", every: m.opts.LeaseTTL / 3, run: m.releaseExpired},
		{name: "refresh stale waits", every: sweepEvery, run: m.sweepWaits},
		{name: "retention", every: m.opts.Every, run: m.retain},
	}
	var wg sync.WaitGroup
	for _, d := range duties {
		d.wake = make(chan struct{}, 1)
		wg.Add(1)
		go func() { defer wg.Done(); m.runDuty(ctx, d) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); m.heartbeat(ctx) }()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			m.lease.Stop()
			return nil
		case <-m.lease.Gained():
			for _, d := range duties {
				select {
				case d.wake <- struct{}{}:
				default:
				}
			}
		}
	}
}

// heartbeat records every LeaseTTL/3 that this replica is alive, with what it publishes.
func (m *Maintenance) heartbeat(ctx context.Context) {
	host, _ := os.Hostname()
	me := store.Replica{Name: m.opts.Replica, Hostname: host, PID: os.Getpid(), Version: m.opts.Version, Listen: m.opts.Listen}
	tick := time.NewTicker(m.opts.LeaseTTL / 3)
	defer tick.Stop()
	for {
		if m.opts.Sources != nil {
			me.Sources = m.opts.Sources()
		}
		if err := m.store.Heartbeat(ctx, me); err != nil && ctx.Err() == nil {
			m.log.Warn("heartbeat failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// runDuty runs d while this replica holds the lease: every d.every and when the lease is
// taken, under a context that ends with the holding.
func (m *Maintenance) runDuty(ctx context.Context, d *duty) {
	tick := time.NewTicker(d.every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-d.wake:
		}
		l, held := m.lease.Held()
		if l == nil {
			continue
		}
		dctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(held, cancel)
		d.run(dctx, *l)
		stop()
		cancel()
	}
}

// releaseExpired is the fallback for replicas cut off from the database (a dead one is found
// at once through its session): leases not renewed within their TTL are released here, on
// one replica only.
func (m *Maintenance) releaseExpired(ctx context.Context, _ store.Lease) {
	n, err := m.store.ReleaseExpiredLeases(ctx, m.opts.Replica)
	switch {
	case err != nil && ctx.Err() == nil:
		m.log.Warn("release expired leases failed", "err", err)
	case n > 0:
		m.log.Info("released expired leases; their attempts are recorded as Interrupted", "count", n)
		m.opts.Metrics.Interrupted(n)
	}
}

// sweepEvery is how often the maintenance holder looks for waits a crash left stale.
const sweepEvery = 10 * time.Second

// sweepWaits refreshes the dependency waits a refresh cut short left out of date
// (store.StaleWaits): a resource whose dependencies became Ready while the replica that wrote
// them died runs within sweepEvery.
func (m *Maintenance) sweepWaits(ctx context.Context, _ store.Lease) {
	ids, err := m.store.StaleWaits(ctx, 5000)
	if err == nil && len(ids) > 0 {
		err = m.store.RefreshDependencies(ctx, ids)
		m.log.Info("refreshed stale dependency waits", "count", len(ids))
	}
	if err != nil && ctx.Err() == nil {
		m.log.Warn("refresh stale dependency waits", "err", err)
	}
}

// retain runs one retention pass fenced by l, keeps where it got to, and logs what it did.
func (m *Maintenance) retain(ctx context.Context, l store.Lease) {
	if l.Term != m.marksTerm {
		m.marks, m.marksTerm = store.RetentionMarks{}, l.Term
	}
	removed, marks, err := m.store.Retain(ctx, store.RetentionOptions{History: m.opts.History, Events: m.opts.Events, Since: m.marks, Lease: &l})
	m.marks = marks
	var deliveries int64
	if !errors.Is(err, store.ErrLeaseLost) && ctx.Err() == nil {
		var derr error
		if deliveries, derr = m.store.TrimDeliveries(ctx, deliveriesMaxAge); derr != nil {
			err = errors.Join(err, derr)
		}
	}
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		m.lease.Drop(l.Term)
		m.log.Info("retention stopped: the maintenance lease moved on", "term", l.Term)
	case ctx.Err() != nil:
		m.log.Debug("retention interrupted", "term", l.Term, "err", err)
	case err != nil:
		m.log.Warn("retention failed", "err", err)
	}
	if removed.History+removed.Events > 0 {
		m.log.Info("retention removed old rows", "history", removed.History, "events", removed.Events)
	}
	if deliveries > 0 {
		m.log.Debug("forgot old webhook deliveries", "count", deliveries)
	}
}
