package syncer

import (
	"math/rand/v2"
	"time"
)

// leaseChange is what one attempt to take or renew the source's lease did to this replica's
// holding.
type leaseChange int

const (
	leaseNone    leaseChange = iota // not held before, not held now
	leaseTaken                      // held under a new term: reload what was applied, sync at once
	leaseRenewed                    // still held, same term, valid for another TTL
	leaseKept                       // renewal failed (database unreachable) but the lease is still valid
	leaseLost                       // held before, not now: another holder, or expired unrenewed
)

func (c leaseChange) String() string {
	return [...]string{"none", "taken", "renewed", "kept", "lost"}[c]
}

// nextLease decides the outcome of one attempt: held/heldTerm/until are what this replica
// believed before it, ok/term/err what the store answered, now when it answered.
func nextLease(held bool, heldTerm int64, until, now time.Time, ok bool, term int64, err error) leaseChange {
	switch {
	case err != nil && held && now.Before(until):
		return leaseKept
	case err != nil || !ok:
		if held {
			return leaseLost
		}
		return leaseNone
	case held && term == heldTerm:
		return leaseRenewed
	}
	// Not held, or held under another term (it expired, someone else held it meanwhile, and
	// it came back): either way a new holding.
	return leaseTaken
}

// renewDelay is how long the lease loop waits before its next attempt: a third of the TTL,
// or less while a failing renewal leaves the lease about to run out (so that the holder
// notices the end of its lease when it comes).
func renewDelay(ttl time.Duration, c leaseChange, until, now time.Time) time.Duration {
	d := ttl / 3
	if c == leaseKept {
		d = min(d, max(until.Sub(now), time.Millisecond))
	}
	return d
}

// memory is what the syncer remembers of the source between syncs.
type memory struct {
	applied     string // last applied revision
	rejected    string // last revision rejected for its content (deterministic: not retried)
	lastFailure string // last failure message recorded, so that a repeated failure is written once
	held        string // revision held back because the source is suspended (not fetched again until resumed)
}

// plan is what a sync does with the head it read.
type plan int

const (
	planSkip    plan = iota // applied, or rejected already: nothing fetched, nothing written
	planRecover             // the applied revision is the head again after a failure: record the recovery, nothing fetched
	planApply               // a new revision: fetch, validate, apply
)

func (p plan) String() string { return [...]string{"skip", "recover", "apply"}[p] }

// decide plans a sync from the head just read.
func decide(head string, m memory) plan {
	switch {
	case head == m.applied && m.lastFailure != "":
		return planRecover
	case head == m.applied, head == m.rejected, head == m.held:
		return planSkip
	}
	return planApply
}

// recordFailure reports whether a failure message must be written: a repeat of the last one
// recorded is not, so a broken head costs one write, not one per poll.
func recordFailure(msg string, m memory) bool { return msg != m.lastFailure }

// jitter spreads polls of many sources and replicas: d plus up to 10%.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration(rand.Int64N(int64(d)/10+1))
}
