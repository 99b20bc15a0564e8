// Package liveness detects dead replicas from PostgreSQL itself (DESIGN §7, failover). Each
// replica holds a session-level advisory lock on a dedicated connection for its lifetime; the
// moment PostgreSQL ends that session (the process died, its connection was killed) the lock
// is free, and every peer sees it in pg_locks within one poll (100 ms by default). The first
// peer to see it releases the dead replica's source and maintenance leases and its leased
// resources (attempts recorded as Interrupted), and tells every replica to take them at once.
//
// A replica that is merely slow keeps its session and so its leases: only the TTL path
// (reconciler.Maintenance) takes those, for replicas cut off from the database. A replica whose
// own session ends — seen at once when the server ends it, within pingEvery+pingTimeout when
// the connection silently dropped — stops all work in flight (OnLost, which returns once the
// calls did), takes and renews no singleton lease (Held), and resumes after it holds a new
// session (OnRegained); its old leases are fenced exactly as before.
package liveness

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/trueup-dev/trueup/internal/metrics"
	"github.com/trueup-dev/trueup/internal/store"
)

// Options configure a replica's liveness.
type Options struct {
	Replica store.Replica
	// Interval is how often peers are checked (default 100ms).
	Interval time.Duration
	// OnLost is called when this replica's own session ended: stop everything in flight.
	OnLost func(err error)
	// OnRegained is called when a new session holds the lock again (and Held is true): lease
	// takers, which took nothing while it was down, should look at once.
	OnRegained func()
	// OnReleased is called after this replica released a dead peer's work (or its own
	// previous session's): lease takers should look at once.
	OnReleased func()
	Metrics    *metrics.Metrics
}

// Liveness is one replica's lock holder and peer detector.
type Liveness struct {
	opts  Options
	store *store.Store
	log   *slog.Logger

	mu   sync.Mutex
	held *store.Liveness
}

// New returns the component; call Start, then Run.
func New(st *store.Store, opts Options, logger *slog.Logger) *Liveness {
	if opts.Interval <= 0 {
		opts.Interval = 100 * time.Millisecond
	}
	for _, f := range []*func(){&opts.OnRegained, &opts.OnReleased} {
		if *f == nil {
			*f = func() {}
		}
	}
	if opts.OnLost == nil {
		opts.OnLost = func(error) {}
	}
	return &Liveness{opts: opts, store: st, log: logger.With("component", "liveness")}
}

// Start takes the replica's lock, releasing what its previous session held (after a
// reconnect; ending that session if the server still has it).
func (l *Liveness) Start(ctx context.Context) error {
	h, released, err := l.store.HoldLiveness(ctx, l.opts.Replica)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.held = h
	l.mu.Unlock()
	if released > 0 {
		l.log.Info("released what this replica's previous session held", "resources", released)
		l.opts.Metrics.Interrupted(released)
		l.opts.OnReleased()
	}
	return nil
}

// Held reports whether this replica holds its liveness session right now. Singleton lease
// takers (a source's syncer, maintenance, notifications) ask it before every attempt: a lease
// taken while the session is down is one that peers release at once (they see no session)
// and that the next session releases again, so takers churn and a source's lease can be
// held by nobody while its last holder still believes it holds it.
func (l *Liveness) Held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held != nil
}

// Run holds the session and watches peers until ctx ends; then it forgets the replica's key
// (the caller has given its work back by then) and closes the session.
func (l *Liveness) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); l.hold(ctx) }()
	go func() { defer wg.Done(); l.watch(ctx) }()
	wg.Wait()
	l.mu.Lock()
	h := l.held
	l.held = nil
	l.mu.Unlock()
	if h != nil {
		c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = l.store.Retire(c, l.opts.Replica.Name, h.Key)
		h.Close()
	}
}

// hold waits on the session; when it ends, work stops and a new session is opened.
func (l *Liveness) hold(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		l.mu.Lock()
		h := l.held
		l.mu.Unlock()
		if h != nil {
			err := h.Wait(ctx)
			if ctx.Err() != nil {
				return
			}
			l.mu.Lock()
			l.held = nil
			l.mu.Unlock()
			h.Close()
			l.log.Warn("liveness session ended: stopping work in flight; peers may take this replica's leases", "err", err)
			l.opts.OnLost(errSessionLost)
		}
		if err := l.Start(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			l.log.Warn("liveness session: reconnecting", "err", err, "in", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		l.log.Info("liveness session held again")
		l.opts.OnRegained()
	}
}

var errSessionLost = errors.New("this replica's database session ended; its leases may be taken over")

// watch polls pg_locks for peers whose session ended and releases their work.
func (l *Liveness) watch(ctx context.Context) {
	t := time.NewTicker(l.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		dead, err := l.store.DeadReplicas(ctx)
		if err != nil {
			if ctx.Err() == nil {
				l.log.Debug("look for dead replicas", "err", err)
			}
			continue
		}
		for _, d := range dead {
			if d.Name == l.opts.Replica.Name {
				continue // our own previous session: hold() handles it
			}
			n, done, err := l.store.ReleaseDeadReplica(ctx, d, l.opts.Replica.Name)
			switch {
			case err != nil:
				if ctx.Err() == nil {
					l.log.Warn("release a dead replica's work", "replica", d.Name, "err", err)
				}
			case done:
				l.log.Warn("replica's database session ended: its leases were released", "replica", d.Name, "resources", n)
				l.opts.Metrics.Failover()
				l.opts.Metrics.Interrupted(n)
				l.opts.OnReleased()
			}
		}
	}
}
