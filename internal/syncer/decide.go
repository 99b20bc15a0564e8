package syncer

import (
	"math/rand/v2"
	"time"
)

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
