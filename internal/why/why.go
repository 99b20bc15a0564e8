// Package why decides what holds a resource back now (trueup why, the timeline's blocking
// reasons): a pure function of the resource's row, the change windows' verdicts on it and on
// its dependencies, and its source's state.
package why

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/trueup-dev/trueup/internal/changewindow"
	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/status"
)

// Blocking reasons.
const (
	Suspended       = "Suspended"
	Window          = "Window"
	Dependency      = "Dependency"
	Approval        = "Approval"
	PolicyDenied    = "PolicyDenied"
	Rejected        = "Rejected"
	Backoff         = "Backoff"
	Stalled         = "Stalled"
	SourceSuspended = "SourceSuspended"
	SourcePinned    = "SourcePinned"
)

// Blocker is one thing that holds the resource back: Since when (zero: unknown), Until when
// it is expected to end (zero: not known).
type Blocker struct {
	Reason  string
	Message string
	Since   time.Time
	Until   time.Time
}

// Input is what Blocking reads.
type Input struct {
	Now        time.Time
	Suspended  bool
	Conditions []status.Condition
	RunAt      *time.Time
	Attempt    int
	// Window is the windows' verdict on the resource at Now.
	Window changewindow.Verdict
	// Dependencies are those not Ready.
	Dependencies []Dep
	// Source is the resource's source, SourceSuspended its flag, Pin its pin (nil: none).
	Source          string
	SourceSuspended bool
	Pin             *Pin
}

// Dep is a dependency that is not Ready, with the windows' verdict on it. A Hidden one is in
// a namespace the reader may not see: only its name is told (Exists, Phase and Window are
// not read).
type Dep struct {
	Name   string // NAMESPACE/KIND/NAME
	Exists bool
	Phase  string
	Window changewindow.Verdict
	Hidden bool
}

// Pin is the pin of the resource's source.
type Pin struct {
	Revision, Actor, Reason string
	At                      time.Time
}

// Blocking returns what holds the resource back, ordered by Until, latest first, those
// without Until after them (in the order of the reasons above).
func Blocking(in Input) []Blocker {
	var out []Blocker
	cond := func(t string) (status.Condition, bool) { return status.Get(in.Conditions, t) }
	rec, recOK := cond(status.Reconciling)
	// pending: a change waits (work in flight, Progressing or Deleting, is never held by a
	// window and waits for nothing).
	pending := recOK && rec.Status == status.True && rec.Reason != status.ReasonProgressing && rec.Reason != status.ReasonDeleting
	since := func(reason string) time.Time {
		if recOK && rec.Reason == reason {
			return rec.LastTransitionTime
		}
		return time.Time{}
	}
	if in.Suspended {
		b := Blocker{Reason: Suspended, Message: "suspended by an operator"}
		if c, ok := cond(status.Suspended); ok {
			b.Message, b.Since = c.Message, c.LastTransitionTime
		}
		out = append(out, b)
	}
	if in.Window.Closed && pending {
		b := Blocker{Reason: Window, Message: in.Window.Message(), Since: since(status.ReasonWindowClosed)}
		if !in.Window.Forever {
			b.Until = in.Window.Until
		}
		out = append(out, b)
	}
	for _, d := range in.Dependencies {
		if !pending { // a dependency holds back only a change waiting to be made
			break
		}
		b := Blocker{Reason: Dependency, Since: since(status.ReasonWaitingForDependency)}
		switch {
		case d.Hidden:
			b.Message = "waits for dependency " + d.Name + " to be Ready"
			out = append(out, b)
			continue
		case !d.Exists:
			b.Message = "waits for dependency " + d.Name + ", which does not exist"
		case d.Phase == "":
			b.Message = "waits for dependency " + d.Name + " to be Ready"
		default:
			b.Message = "waits for dependency " + d.Name + " to be Ready (it is " + d.Phase + ")"
		}
		if w := d.Window; w.Closed {
			until := "with no opening within a year"
			if !w.Forever {
				until, b.Until = "until "+w.Until.Format(time.RFC3339), w.Until
			}
			b.Message += fmt.Sprintf("; change window %s (%s) holds it %s", w.Window, w.Kind, until)
		}
		out = append(out, b)
	}
	if c, ok := cond(status.Approved); ok && c.Status == status.False {
		switch c.Reason {
		case status.ReasonApprovalRequired:
			out = append(out, Blocker{Reason: Approval, Message: c.Message, Since: c.LastTransitionTime})
		case status.ReasonPolicyDenied:
			out = append(out, Blocker{Reason: PolicyDenied, Message: c.Message, Since: c.LastTransitionTime})
		case status.ReasonRejected:
			out = append(out, Blocker{Reason: Rejected, Message: c.Message, Since: c.LastTransitionTime})
		}
	}
	stalled, stalledOK := cond(status.Stalled)
	isStalled := stalledOK && stalled.Status == status.True
	if isStalled && stalled.Reason != status.ReasonPolicyDenied && stalled.Reason != status.ReasonRejected {
		out = append(out, Blocker{Reason: Stalled, Message: stalled.Message, Since: stalled.LastTransitionTime})
	}
	// A retry is what Reconciling says it is: a change a window holds keeps its attempt count
	// and is due when the window opens, which is no backoff.
	retrying := pending && rec.Reason == status.ReasonRetrying
	if !isStalled && retrying && in.Attempt > 0 && in.RunAt != nil && in.RunAt.After(in.Now) {
		msg := fmt.Sprintf("retry %d after a failure", in.Attempt)
		if rec.Message != "" {
			msg += ": " + rec.Message
		}
		out = append(out, Blocker{Reason: Backoff, Message: msg, Since: rec.LastTransitionTime, Until: *in.RunAt})
	}
	if in.SourceSuspended {
		out = append(out, Blocker{Reason: SourceSuspended, Message: "source " + in.Source + " is suspended: no revision is applied"})
	}
	if in.Pin != nil {
		msg := "source " + in.Source + " is pinned at " + clip.Rev(in.Pin.Revision) + " by " + in.Pin.Actor
		if in.Pin.Reason != "" {
			msg += ": " + in.Pin.Reason
		}
		out = append(out, Blocker{Reason: SourcePinned, Message: msg, Since: in.Pin.At})
	}
	slices.SortStableFunc(out, func(a, b Blocker) int {
		switch {
		case a.Until.IsZero() && b.Until.IsZero():
			return 0
		case a.Until.IsZero():
			return 1
		case b.Until.IsZero():
			return -1
		}
		return cmp.Compare(b.Until.UnixNano(), a.Until.UnixNano())
	})
	return out
}
