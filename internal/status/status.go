// Package status owns trueup's status model (DESIGN §8), in one place: phases,
// Kubernetes-style conditions, and every transition between them as pure functions of plain
// values (transitions.go: Created, NewGeneration, CallStarted/Start, Result, InSync,
// Interrupted, Released), which the syncer, the start writer, the result writer and the lease
// releases only store (a claim stores none: Reconciling/Progressing means a call runs), and
// a source's conditions (source.go: SourceApplied, SourceFailed, SourceRecovered), and the
// states the gate of policies leaves a change in (approval.go: AwaitingApproval, Refused,
// Allowed; condition Approved), and the hold of a change window (windowheld.go: WindowHeld,
// WindowPassed).
// Invariants (Check): Ready is always
// present and never True before a first success or while observedGeneration < generation;
// lastTransitionTime moves only when a status flips; conditions are unique per type;
// Stalled=True ⇒ Ready=False; never Reconciling and Stalled together; Reconciling=True
// whenever work is pending or running.
package status

import (
	"sort"
	"time"
)

// Phases.
const (
	PhasePending     = "Pending"
	PhaseReconciling = "Reconciling"
	PhaseReady       = "Ready"
	PhaseFailed      = "Failed"
	PhaseDeleting    = "Deleting"
)

// Standard condition types.
const (
	Ready       = "Ready"
	Reconciling = "Reconciling"
	Stalled     = "Stalled"
	Synced      = "Synced"
)

// Condition values.
const (
	True    = "True"
	False   = "False"
	Unknown = "Unknown"
)

// Condition is one Kubernetes-style condition.
type Condition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
	LastTransitionTime time.Time `json:"lastTransitionTime"`
	ObservedGeneration int64     `json:"observedGeneration,omitempty"`
}

// Set returns conds with c set: a condition of the same type is replaced, keeping its
// LastTransitionTime unless Status changed. The result is sorted with the standard types first.
func Set(conds []Condition, c Condition, now time.Time) []Condition {
	out := make([]Condition, 0, len(conds)+1)
	found := false
	for _, old := range conds {
		if old.Type != c.Type {
			out = append(out, old)
			continue
		}
		found = true
		if old.Status == c.Status && !old.LastTransitionTime.IsZero() {
			c.LastTransitionTime = old.LastTransitionTime
		} else {
			c.LastTransitionTime = now
		}
		out = append(out, c)
	}
	if !found {
		c.LastTransitionTime = now
		out = append(out, c)
	}
	sortConditions(out)
	return out
}

// Remove returns conds without the condition of type t.
func Remove(conds []Condition, t string) []Condition {
	out := conds[:0:0]
	for _, c := range conds {
		if c.Type != t {
			out = append(out, c)
		}
	}
	return out
}

// Get returns the condition of type t, if present.
func Get(conds []Condition, t string) (Condition, bool) {
	for _, c := range conds {
		if c.Type == t {
			return c, true
		}
	}
	return Condition{}, false
}

var order = map[string]int{Ready: 0, Reconciling: 1, Stalled: 2, Synced: 3}

func sortConditions(cs []Condition) {
	sort.SliceStable(cs, func(i, j int) bool {
		oi, iok := order[cs[i].Type]
		oj, jok := order[cs[j].Type]
		switch {
		case iok && jok:
			return oi < oj
		case iok != jok:
			return iok
		default:
			return cs[i].Type < cs[j].Type
		}
	})
}
