package status

import (
	"fmt"
	"time"

	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/plural"
)

// Condition types of a source besides Ready.
const (
	// PruneSkipped=True: the prune guard refused the deletions of the applied revision (its
	// reason names the guard, its message gives the numbers); the next revision applied
	// without a refusal removes it.
	PruneSkipped = "PruneSkipped"
	// Pruned=True records the last revision that deleted something.
	Pruned = "Pruned"
)

// SourceApply is what applying one revision to a source did, as its conditions tell it.
type SourceApply struct {
	Revision         string
	Types, Resources int // in the revision
	// PruneSkipped names the guard that refused the deletions ("" when none did), with its
	// message.
	PruneSkipped, PruneMessage string
	Deleted                    int // resources marked for deletion
}

// SourceApplied returns a source's conditions after a revision was applied: Ready=True, and
// the prune conditions (SourcePrune).
func SourceApplied(conds []Condition, a SourceApply, now time.Time) []Condition {
	msg := fmt.Sprintf("applied revision %s: %s, %s", clip.Rev(a.Revision), plural.Count(a.Types, "type", "types"), plural.Count(a.Resources, "resource", "resources"))
	conds = Set(conds, Condition{Type: Ready, Status: True, Reason: "Succeeded", Message: msg}, now)
	return sourcePrune(conds, a, now)
}

// sourcePrune: a guard that stopped the deletions sets PruneSkipped=True (its reason, the
// numbers in its message); a revision applied without one removes PruneSkipped, and
// Pruned=True records the last revision that deleted something.
func sourcePrune(conds []Condition, a SourceApply, now time.Time) []Condition {
	// Pruned=False was what a refusal set before PruneSkipped existed.
	if c, ok := Get(conds, Pruned); ok && c.Status == False {
		conds = Remove(conds, Pruned)
	}
	if a.PruneSkipped != "" {
		return Set(conds, Condition{Type: PruneSkipped, Status: True, Reason: a.PruneSkipped, Message: a.PruneMessage}, now)
	}
	conds = Remove(conds, PruneSkipped)
	if a.Deleted > 0 {
		conds = Set(conds, Condition{Type: Pruned, Status: True, Reason: "Pruned",
			Message: fmt.Sprintf("revision %s deleted %s", clip.Rev(a.Revision), plural.Count(a.Deleted, "resource", "resources"))}, now)
	}
	return conds
}

// SourceFailed returns a source's conditions after a sync failed: Ready=False with the
// failure's reason (CamelCase: FetchFailed, ValidationFailed, …) and message.
func SourceFailed(conds []Condition, reason, message string, now time.Time) []Condition {
	return Set(conds, Condition{Type: Ready, Status: False, Reason: reason, Message: message}, now)
}

// NewSourceFailure reports whether a failure (message, at revision attempted) is not the one
// the source already shows (its conditions before, its last attempted revision): a failure is
// told once, not once per poll.
func NewSourceFailure(before []Condition, lastAttempted, message, attempted string) bool {
	c, ok := Get(before, Ready)
	return !ok || c.Status != False || c.Message != message || lastAttempted != attempted
}

// SourceRecovered returns a source's conditions when its applied revision is the head again
// after a failure, and whether they changed (not when it shows Ready=True already).
func SourceRecovered(conds []Condition, revision string, now time.Time) ([]Condition, bool) {
	if c, ok := Get(conds, Ready); ok && c.Status == True {
		return conds, false
	}
	return Set(conds, Condition{Type: Ready, Status: True, Reason: "Succeeded",
		Message: "revision " + clip.Rev(revision) + " is applied and is the source's head again"}, now), true
}
