package reconciler

import (
	"context"
	"log/slog"
	"os"
	"time"

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
}

// Maintenance heartbeats this replica every few seconds and, on the one replica holding the
// "maintenance" lease, enforces retention of history and events.
type Maintenance struct {
	opts  MaintenanceOptions
	store *store.Store
	log   *slog.Logger
}

// NewMaintenance returns the loop; call Run.
func NewMaintenance(st *store.Store, opts MaintenanceOptions, logger *slog.Logger) *Maintenance {
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = 15 * time.Second
	}
	if opts.Every <= 0 {
		opts.Every = time.Minute
	}
	return &Maintenance{opts: opts, store: st, log: logger.With("component", "maintenance")}
}

// Run loops until ctx ends, then gives the lease up.
func (m *Maintenance) Run(ctx context.Context) error {
	host, _ := os.Hostname()
	me := store.Replica{Name: m.opts.Replica, Hostname: host, PID: os.Getpid(), Version: m.opts.Version, Listen: m.opts.Listen}
	tick := time.NewTicker(m.opts.LeaseTTL / 3)
	defer tick.Stop()
	var held *store.Lease
	var lastRun time.Time
	defer func() {
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
		l, ok, err := m.store.AcquireLease(ctx, "maintenance", m.opts.Replica, m.opts.LeaseTTL)
		switch {
		case err != nil:
			held = nil
		case ok:
			if held == nil {
				m.log.Info("holding the maintenance lease", "term", l.Term)
			}
			held = &l
		default:
			held = nil
		}
		if held != nil && time.Since(lastRun) >= m.opts.Every {
			lastRun = time.Now()
			n, err := m.store.EnforceRetention(ctx, m.opts.History, m.opts.Events)
			if err != nil && ctx.Err() == nil {
				m.log.Warn("retention failed", "err", err)
			} else if n.History+n.Events > 0 {
				m.log.Info("retention removed old rows", "history", n.History, "events", n.Events)
			}
			if _, err := m.store.TrimDeliveries(ctx, 7*24*time.Hour); err != nil && ctx.Err() == nil {
				m.log.Warn("trim webhook deliveries failed", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
