package syncer

import (
	"context"
	"time"

	"github.com/trueup-dev/trueup/internal/store"
)

// The source's singleton lease is held by a loop of its own (holdLease), never by the loop
// that syncs: a slow fetch or a hung Git server cannot delay its renewal. The sync loop asks
// holding() before every sync and syncs under a context that the lease loop cancels when the
// lease is lost. Writes are fenced regardless: each one passes the lease, whose term the
// store checks inside the writing transaction.

// minRetry spaces out acquisition attempts asked for by LeasesFreed and Trigger, so that a
// burst of calls costs one query per minRetry at most.
const minRetry = 20 * time.Millisecond

// LeasesFreed asks a replica that does not hold the source's lease to try to take it now
// rather than at its next renewal tick (every LeaseTTL/3), and to sync at once if it gets it.
// Call it when a peer replica released its leases or was found dead. It never blocks, calls
// coalesce, and it does nothing while this replica holds the lease.
func (s *Syncer) LeasesFreed() {
	select {
	case s.freed <- struct{}{}:
	default:
	}
}

// holdLease takes, renews and gives up the source's lease until ctx ends.
func (s *Syncer) holdLease(ctx context.Context) {
	timer := time.NewTimer(0) // the first attempt at once
	defer timer.Stop()
	var last time.Time // the last attempt
	next := time.Now() // when the timer fires
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-s.freed:
			if l, _ := s.holding(); l != nil {
				continue
			}
			if at := last.Add(minRetry); time.Now().Before(at) {
				if at.Before(next) {
					next = at
					resetTimer(timer, time.Until(at))
				}
				continue
			}
		}
		last = time.Now()
		_, wait := s.holdOnce(ctx)
		next = time.Now().Add(wait)
		resetTimer(timer, wait)
	}
}

// holdOnce tries once to take or renew the lease and updates what this replica believes; it
// returns what changed and when to try next.
func (s *Syncer) holdOnce(ctx context.Context) (leaseChange, time.Duration) {
	s.holdMu.Lock()
	defer s.holdMu.Unlock()
	ttl := s.opts.LeaseTTL
	start := time.Now()
	s.mu.Lock()
	held, until := s.lease != nil, s.leaseUntil
	var heldTerm int64
	if held {
		heldTerm = s.lease.Term
	}
	s.mu.Unlock()
	// A renewal answered after the lease ran out is no use: the holder must already have
	// stopped considering itself holder.
	deadline := start.Add(ttl / 3)
	if held && until.After(start) && until.Before(deadline) {
		deadline = until
	}
	// Without a liveness session the answer is "not held", without asking: peers see this
	// replica dead and release what it holds, and its next session releases it too.
	live := s.opts.Live == nil || s.opts.Live()
	var (
		l   store.Lease
		ok  bool
		err error
	)
	if live {
		actx, cancel := context.WithDeadline(ctx, deadline)
		l, ok, err = s.store.AcquireLease(actx, leaseName(s.opts.Name), s.opts.Replica, ttl)
		cancel()
	}
	if ctx.Err() != nil {
		return leaseNone, ttl / 3 // shutting down: Run releases the lease
	}
	now := time.Now()
	change := nextLease(held, heldTerm, until, now, ok, l.Term, err)
	var lostCancel context.CancelFunc
	s.mu.Lock()
	switch change {
	case leaseTaken:
		lostCancel = s.holdCancel
		s.lease, s.leaseUntil = &l, start.Add(ttl)
		s.holdCtx, s.holdCancel = context.WithCancel(context.Background())
	case leaseRenewed:
		s.lease, s.leaseUntil = &l, start.Add(ttl)
	case leaseLost:
		lostCancel = s.dropLocked()
	}
	until = s.leaseUntil
	s.mu.Unlock()
	if lostCancel != nil {
		lostCancel() // interrupts the sync in flight, if any
	}
	switch change {
	case leaseTaken:
		s.log.Info("holding the source's lease", "term", l.Term)
		select {
		case s.gained <- struct{}{}:
		default:
		}
	case leaseLost:
		switch {
		case !live:
			s.log.Warn("no liveness session: gave up the source's lease; stopped syncing")
		case err != nil:
			s.log.Warn("source lease expired unrenewed; stopped syncing", "err", err)
		default:
			s.log.Info("lost the source's lease to another replica; stopped syncing")
		}
	case leaseKept:
		s.log.Warn("renew source lease failed; still held", "err", err, "valid_ms", until.Sub(now).Milliseconds())
	case leaseNone:
		if err != nil {
			s.log.Warn("take source lease failed", "err", err)
		}
	}
	return change, renewDelay(ttl, change, until, now)
}

// holding returns the lease when this replica surely holds it (nil otherwise), with the
// context that is cancelled when the holding ends.
func (s *Syncer) holding() (*store.Lease, context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lease == nil || !time.Now().Before(s.leaseUntil) {
		return nil, nil
	}
	l := *s.lease
	return &l, s.holdCtx
}

// dropLocked forgets the lease; the caller holds s.mu and calls the returned cancel after
// unlocking.
func (s *Syncer) dropLocked() context.CancelFunc {
	cancel := s.holdCancel
	s.lease, s.leaseUntil, s.holdCtx, s.holdCancel = nil, time.Time{}, nil, nil
	return cancel
}

// dropLease forgets the lease of term after the store reported it lost; the lease loop takes
// it again if it can.
func (s *Syncer) dropLease(term int64) {
	s.mu.Lock()
	var cancel context.CancelFunc
	if s.lease != nil && s.lease.Term == term {
		cancel = s.dropLocked()
	}
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// releaseLease gives the lease up (clean shutdown) so another replica takes over at once.
func (s *Syncer) releaseLease() {
	s.mu.Lock()
	l := s.lease
	cancel := s.dropLocked()
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	if l == nil {
		return
	}
	ctx, stop := context.WithTimeout(context.Background(), 2*time.Second)
	defer stop()
	if err := s.store.ReleaseLease(ctx, *l); err != nil {
		s.log.Warn("release source lease", "err", err)
	}
}

func leaseName(source string) string { return "source:" + source }
