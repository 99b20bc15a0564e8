// Package lease holds a singleton lease (a source's, "maintenance", "notifications") for one
// replica: one holder type with one failure rule, used by every component that works alone.
//
// The holder takes and renews the lease on a goroutine of its own, never on the goroutine that
// does the holder's work: a slow fetch, a long apply or a retention pass cannot delay a renewal.
// Work runs under the context Held returns, which ends when the holding does. Writes are fenced
// regardless: each passes the lease, whose term the store checks inside the writing transaction.
//
// The failure rule: a renewal that fails (the database unreachable) keeps the lease for as long
// as it is valid by this replica's clock, counted from the start of the last successful attempt,
// and retries before it runs out; a renewal answered by "someone else holds it", or no answer
// before the lease ends, drops it. A replica without its liveness session neither takes nor
// renews (its peers release what it holds).
package lease

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trueup-dev/trueup/internal/store"
)

// Store is what the holder needs of the database (*store.Store).
type Store interface {
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (store.Lease, bool, error)
	ReleaseLease(ctx context.Context, l store.Lease) error
}

// Options configure a Holder.
type Options struct {
	Name    string        // the lease's name ("source:infra", "maintenance", "notifications")
	Replica string        // this replica's name, the holder written in the lease row
	TTL     time.Duration // how long a taking or renewal holds (default 15s)
	// Live reports whether the replica holds its liveness session; while it does not, the
	// lease is neither taken nor renewed (nil: always live).
	Live func() bool
	// Label names the lease in log lines: "holding the <Label> lease" (default: Name).
	Label string
	// MinRetry spaces out attempts asked for by TryNow, so that a burst costs one query per
	// MinRetry at most (default 20ms).
	MinRetry time.Duration
}

// Holder takes, renews and gives up one lease. Start runs its loop; Stop ends it and releases
// the lease. Without Start, Attempt takes or renews it on demand.
type Holder struct {
	opts Options
	st   Store
	log  *slog.Logger

	gained chan struct{} // the lease was just taken
	try    chan struct{} // attempt now (TryNow)

	attemptMu sync.Mutex // serialises attempts (the loop's, or Attempt's without the loop)
	running   atomic.Bool

	mu     sync.Mutex
	lease  *store.Lease
	until  time.Time          // when the lease expires unless renewed
	ctx    context.Context    // ends when the holding ends
	cancel context.CancelFunc // ends ctx

	stop context.CancelFunc
	done chan struct{}
}

// New returns a holder; call Start, or Attempt for a holder without its own loop.
func New(st Store, opts Options, logger *slog.Logger) *Holder {
	if opts.TTL <= 0 {
		opts.TTL = 15 * time.Second
	}
	if opts.Label == "" {
		opts.Label = opts.Name
	}
	if opts.MinRetry <= 0 {
		opts.MinRetry = 20 * time.Millisecond
	}
	return &Holder{opts: opts, st: st, log: logger, gained: make(chan struct{}, 1), try: make(chan struct{}, 1)}
}

// TTL is the lease's time to live.
func (h *Holder) TTL() time.Duration { return h.opts.TTL }

// Start runs the holder's loop until Stop or ctx ends: the first attempt at once, then one
// every TTL/3 (sooner while a failing renewal leaves the lease about to run out). A holder
// starts once.
func (h *Holder) Start(ctx context.Context) error {
	if h.stop != nil {
		return errors.New("lease " + h.opts.Name + ": holder started twice")
	}
	ctx, h.stop = context.WithCancel(ctx)
	h.done = make(chan struct{})
	h.running.Store(true)
	go func() {
		defer close(h.done)
		h.loop(ctx)
	}()
	return nil
}

// Stop ends the loop, waits for it, and gives the lease up so that another replica takes over
// at once. Safe before Start and twice.
func (h *Holder) Stop() {
	if h.stop != nil {
		h.stop()
		<-h.done
	}
	h.running.Store(false)
	h.Release()
}

// Running reports whether the loop runs (between Start and Stop).
func (h *Holder) Running() bool { return h.running.Load() }

// Gained receives once each time the lease is taken under a new term.
func (h *Holder) Gained() <-chan struct{} { return h.gained }

// TryNow asks the loop to attempt now rather than at its next tick (a peer released its leases
// or was found dead). It never blocks, calls coalesce, and it does nothing while this replica
// holds the lease.
func (h *Holder) TryNow() {
	select {
	case h.try <- struct{}{}:
	default:
	}
}

// Held returns the lease when this replica surely holds it (nil otherwise), with the context
// that ends when the holding does.
func (h *Holder) Held() (*store.Lease, context.Context) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lease == nil || !time.Now().Before(h.until) {
		return nil, nil
	}
	l := *h.lease
	return &l, h.ctx
}

// Remaining is how long the lease held stays valid without a renewal (0: not held).
func (h *Holder) Remaining() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lease == nil {
		return 0
	}
	return max(time.Until(h.until), 0)
}

func (h *Holder) loop(ctx context.Context) {
	timer := time.NewTimer(0) // the first attempt at once
	defer timer.Stop()
	var last time.Time // the last attempt
	next := time.Now() // when the timer fires
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-h.try:
			if l, _ := h.Held(); l != nil {
				continue
			}
			if at := last.Add(h.opts.MinRetry); time.Now().Before(at) {
				if at.Before(next) {
					next = at
					timer.Reset(time.Until(at))
				}
				continue
			}
		}
		last = time.Now()
		_, wait := h.attempt(ctx)
		next = time.Now().Add(wait)
		timer.Reset(wait)
	}
}

// Attempt tries once to take or renew the lease and reports what changed. A component that
// runs without Start (a one-off sync) calls it before its work.
func (h *Holder) Attempt(ctx context.Context) Change {
	c, _ := h.attempt(ctx)
	return c
}

// attempt tries once and updates what this replica believes; it returns what changed and
// when to try next.
func (h *Holder) attempt(ctx context.Context) (Change, time.Duration) {
	h.attemptMu.Lock()
	defer h.attemptMu.Unlock()
	ttl := h.opts.TTL
	start := time.Now()
	h.mu.Lock()
	held, until := h.lease != nil, h.until
	var heldTerm int64
	if held {
		heldTerm = h.lease.Term
	}
	h.mu.Unlock()
	// A renewal answered after the lease ran out is no use: the holder must already have
	// stopped considering itself holder.
	deadline := start.Add(ttl / 3)
	if held && until.After(start) && until.Before(deadline) {
		deadline = until
	}
	// Without a liveness session the answer is "not held", without asking.
	live := h.opts.Live == nil || h.opts.Live()
	var (
		l   store.Lease
		ok  bool
		err error
	)
	if live {
		l, ok, err = h.acquire(ctx, deadline)
	}
	if ctx.Err() != nil && (!ok || err != nil) {
		return None, ttl / 3 // shutting down: Stop releases the lease
	}
	// A take or renewal the database answered as the stop came is recorded like any other:
	// Stop releases the lease after the loop ends, and must know it is held.
	now := time.Now()
	change := Next(held, heldTerm, until, now, ok, l.Term, err)
	var lostCancel context.CancelFunc
	h.mu.Lock()
	switch change {
	case Taken:
		lostCancel = h.cancel
		h.lease, h.until = &l, start.Add(ttl)
		h.ctx, h.cancel = context.WithCancel(context.Background())
	case Renewed:
		h.lease, h.until = &l, start.Add(ttl)
	case Lost:
		lostCancel = h.dropLocked()
	}
	until = h.until
	h.mu.Unlock()
	if lostCancel != nil {
		lostCancel() // ends the work in flight under the old holding, if any
	}
	logTerm := l.Term
	if change == Lost || change == Kept {
		logTerm = heldTerm
	}
	h.logChange(change, logTerm, live, err, until.Sub(now))
	if change == Taken && ctx.Err() == nil {
		select {
		case h.gained <- struct{}{}:
		default:
		}
	}
	return change, RenewDelay(ttl, change, until, now)
}

// stopGrace is how long an attempt in flight when the holder stops may still run: a take the
// database has committed and answers within it is read and then released by Stop, rather
// than left held until it expires.
const stopGrace = time.Second

// acquire asks the database for the lease by deadline. The holder's stop does not cut the
// question short at once (a driver reports a cancelled query as failed even when its
// transaction committed); it ends it stopGrace later at most.
func (h *Holder) acquire(ctx context.Context, deadline time.Time) (store.Lease, bool, error) {
	if err := ctx.Err(); err != nil {
		return store.Lease{}, false, err // stopped before asking: the grace is for a question asked
	}
	actx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	defer context.AfterFunc(ctx, func() {
		select {
		case <-time.After(stopGrace):
			cancel()
		case <-actx.Done(): // answered
		}
	})()
	return h.st.AcquireLease(actx, h.opts.Name, h.opts.Replica, h.opts.TTL)
}

func (h *Holder) logChange(c Change, term int64, live bool, err error, valid time.Duration) {
	what := "the " + h.opts.Label + " lease"
	switch c {
	case Taken:
		h.log.Info("holding "+what, "term", term)
	case Lost:
		switch {
		case !live:
			h.log.Warn("no liveness session: gave up "+what, "term", term)
		case err != nil:
			h.log.Warn(what+" expired unrenewed", "term", term, "err", err)
		default:
			h.log.Info("lost "+what+" to another replica", "term", term)
		}
	case Kept:
		h.log.Warn("renew "+what+" failed; still held", "term", term, "err", err, "valid_ms", valid.Milliseconds())
	case None:
		if err != nil {
			h.log.Warn("take "+what+" failed", "err", err)
		}
	}
}

// dropLocked forgets the lease; the caller holds h.mu and calls the returned cancel after
// unlocking.
func (h *Holder) dropLocked() context.CancelFunc {
	cancel := h.cancel
	h.lease, h.until, h.ctx, h.cancel = nil, time.Time{}, nil, nil
	return cancel
}

// Drop forgets the lease of term after the store reported it lost (a fenced write failed); the
// loop takes it again if it can.
func (h *Holder) Drop(term int64) {
	h.mu.Lock()
	var cancel context.CancelFunc
	if h.lease != nil && h.lease.Term == term {
		cancel = h.dropLocked()
	}
	h.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Release gives the lease up (clean shutdown) so that another replica takes over at once.
func (h *Holder) Release() {
	h.mu.Lock()
	l := h.lease
	cancel := h.dropLocked()
	h.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	if l == nil {
		return
	}
	ctx, stop := context.WithTimeout(context.Background(), 2*time.Second)
	defer stop()
	if err := h.st.ReleaseLease(ctx, *l); err != nil {
		h.log.Warn("release the "+h.opts.Label+" lease", "err", err)
	}
}
