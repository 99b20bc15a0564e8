// Package status owns trueup's status model (DESIGN §8): phases, Kubernetes-style conditions,
// and the rules that keep them consistent (lastTransitionTime moves only when status flips;
// Ready is always present; Stalled=True ⇒ Ready=False; never Reconciling and Stalled together;
// observedGeneration < generation ⇒ Ready≠True).
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

// Outcome is what one reconcile attempt came to, from which phase and conditions follow.
type Outcome struct {
	// Generation the attempt worked on, and the resource's current generation.
	Generation, CurrentGeneration int64
	Done                          bool   // the action reports the spec reached
	InProgress                    bool   // the action started work and asked to be called again
	Err                           string // a failed attempt (retried)
	Terminal                      bool   // Err cannot succeed until the spec changes
	Message                       string
	Reason                        string // optional reason override for the Ready condition
}

// Apply derives phase and conditions from an outcome, keeping transition times from prev.
// It returns the new phase, conditions and observed generation.
func Apply(prev []Condition, prevObserved int64, o Outcome, now time.Time) (phase string, conds []Condition, observed int64) {
	conds = append([]Condition(nil), prev...)
	observed = prevObserved
	gen := o.Generation
	switch {
	case o.Err != "" && o.Terminal:
		phase = PhaseFailed
		observed = gen
		conds = Set(conds, Condition{Type: Stalled, Status: True, Reason: "ActionRejected", Message: o.Err, ObservedGeneration: gen}, now)
		conds = Remove(conds, Reconciling)
		conds = Set(conds, Condition{Type: Ready, Status: False, Reason: "Stalled", Message: o.Err, ObservedGeneration: gen}, now)
		conds = Set(conds, Condition{Type: Synced, Status: False, Reason: "ActionFailed", Message: o.Err, ObservedGeneration: gen}, now)
	case o.Err != "":
		phase = PhaseFailed
		conds = Remove(conds, Stalled)
		conds = Set(conds, Condition{Type: Reconciling, Status: True, Reason: "RetryingAfterFailure", Message: o.Err, ObservedGeneration: gen}, now)
		conds = Set(conds, Condition{Type: Ready, Status: False, Reason: "ActionFailed", Message: o.Err, ObservedGeneration: gen}, now)
		conds = Set(conds, Condition{Type: Synced, Status: False, Reason: "ActionFailed", Message: o.Err, ObservedGeneration: gen}, now)
	case o.InProgress:
		phase = PhaseReconciling
		msg := o.Message
		if msg == "" {
			msg = "action in progress"
		}
		conds = Remove(conds, Stalled)
		conds = Set(conds, Condition{Type: Reconciling, Status: True, Reason: "Progressing", Message: msg, ObservedGeneration: gen}, now)
		conds = Set(conds, Condition{Type: Ready, Status: Unknown, Reason: "Progressing", Message: msg, ObservedGeneration: gen}, now)
		conds = Set(conds, Condition{Type: Synced, Status: True, Reason: "ActionSucceeded", ObservedGeneration: gen}, now)
	default: // done
		phase = PhaseReady
		observed = gen
		reason := o.Reason
		if reason == "" {
			reason = "Reconciled"
		}
		msg := o.Message
		conds = Remove(conds, Stalled)
		conds = Remove(conds, Reconciling)
		conds = Set(conds, Condition{Type: Ready, Status: True, Reason: reason, Message: msg, ObservedGeneration: gen}, now)
		conds = Set(conds, Condition{Type: Synced, Status: True, Reason: "ActionSucceeded", ObservedGeneration: gen}, now)
	}
	if o.CurrentGeneration > gen {
		// A newer generation arrived while this attempt ran: whatever it achieved, the
		// resource is not Ready for its current spec.
		phase = PhaseReconciling
		conds = Remove(conds, Stalled)
		conds = Set(conds, Condition{Type: Reconciling, Status: True, Reason: "NewGeneration", Message: "a newer generation is waiting to be reconciled", ObservedGeneration: observed}, now)
		if c, _ := Get(conds, Ready); c.Status == True {
			conds = Set(conds, Condition{Type: Ready, Status: Unknown, Reason: "NewGeneration", Message: "a newer generation is waiting to be reconciled", ObservedGeneration: observed}, now)
		}
	}
	return phase, conds, observed
}

// Initial returns the conditions of a resource that has not been reconciled yet.
func Initial(now time.Time) []Condition {
	return []Condition{{Type: Ready, Status: Unknown, Reason: "Pending", Message: "waiting for the first reconcile", LastTransitionTime: now}}
}
