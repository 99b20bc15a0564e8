package lease

import "time"

// Change is what one attempt to take or renew the lease did to this replica's holding.
type Change int

const (
	None    Change = iota // not held before, not held now
	Taken                 // held under a new term: whatever was known of the last holding is stale
	Renewed               // still held, same term, valid for another TTL
	Kept                  // renewal failed (database unreachable) but the lease is still valid
	Lost                  // held before, not now: another holder, or expired unrenewed
)

func (c Change) String() string {
	return [...]string{"none", "taken", "renewed", "kept", "lost"}[c]
}

// Next decides the outcome of one attempt: held/heldTerm/until are what this replica believed
// before it, ok/term/err what the store answered, now when the answer came.
func Next(held bool, heldTerm int64, until, now time.Time, ok bool, term int64, err error) Change {
	switch {
	case err != nil && held && now.Before(until):
		return Kept
	case err != nil || !ok:
		if held {
			return Lost
		}
		return None
	case held && term == heldTerm:
		return Renewed
	}
	// Not held, or held under another term (it expired, someone else held it meanwhile, and
	// it came back): either way a new holding.
	return Taken
}

// RenewDelay is how long the loop waits before its next attempt: a third of the TTL, or less
// while a failing renewal leaves the lease about to run out (so that the holder notices the
// end of its lease when it comes).
func RenewDelay(ttl time.Duration, c Change, until, now time.Time) time.Duration {
	d := ttl / 3
	if c == Kept {
		d = min(d, max(until.Sub(now), time.Millisecond))
	}
	return d
}
