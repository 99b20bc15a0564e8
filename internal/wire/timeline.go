package wire

import "time"

// Timeline answers GET /api/v1/resources/{namespace}/{kind}/{name}/timeline (trueup why): what
// holds the resource back now, the reason expected to end last first, then what happened to
// it, oldest first.
type Timeline struct {
	Resource ResourceRef     `json:"resource"`
	Phase    string          `json:"phase"`
	Blocking []Blocker       `json:"blocking"`
	Entries  []TimelineEntry `json:"entries"`
}

// Blocker is one reason the resource waits: Reason is Suspended, Window, Dependency,
// Approval, PolicyDenied, Rejected, Backoff, Stalled, SourceSuspended or SourcePinned; Until
// is when it is expected to end (absent: not known).
type Blocker struct {
	Reason  string     `json:"reason"`
	Message string     `json:"message"`
	Since   *time.Time `json:"since,omitempty"`
	Until   *time.Time `json:"until,omitempty"`
}

// TimelineEntry is one thing that happened to the resource: Kind is attempt, commit,
// operator, drift, wait, notification or event.
type TimelineEntry struct {
	Time     time.Time `json:"time"`
	Kind     string    `json:"kind"`
	Reason   string    `json:"reason"`
	Message  string    `json:"message,omitempty"`
	Actor    string    `json:"actor,omitempty"`
	Revision string    `json:"revision,omitempty"`
	Result   string    `json:"result,omitempty"`
}
