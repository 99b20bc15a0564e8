package wire

import (
	"time"

	"github.com/trueup-dev/trueup/internal/status"
)

// Source is a source: GET /api/v1/sources lists them.
type Source struct {
	Name                  string             `json:"name"`
	URL                   string             `json:"url"`
	Branch                string             `json:"branch"`
	Path                  string             `json:"path"`
	Revision              string             `json:"revision"`
	LastAttemptedRevision string             `json:"lastAttemptedRevision"`
	LastSyncTime          *time.Time         `json:"lastSyncTime"`
	Conditions            []status.Condition `json:"conditions"`
	Errors                []SourceError      `json:"errors"`
	// From the replica holding the source's lease (absent when none holds it).
	Holder       string     `json:"holder,omitempty"`
	LastPollTime *time.Time `json:"lastPollTime,omitempty"`
	// LastCompletedSyncTime is when the last completed sync began: a sync requested before it
	// has applied (or held back, rejected, failed to read) the head, or found nothing new.
	LastCompletedSyncTime *time.Time `json:"lastCompletedSyncTime,omitempty"`
	LastWebhookTime       *time.Time `json:"lastWebhookTime,omitempty"`
	HeadRevision          string     `json:"headRevision,omitempty"` // the remote's head at the last poll
	// LagSeconds is how long the remote head has been ahead of the applied revision (0 when
	// they are equal).
	LagSeconds float64 `json:"lagSeconds"`
	// Suspended: an operator suspended the source; it polls but applies nothing.
	// PendingRevision is the head it holds back: suspended, the one it would apply; pinned,
	// the head that is not the pinned revision.
	Suspended       bool   `json:"suspended,omitempty"`
	PendingRevision string `json:"pendingRevision,omitempty"`
	// Prune is the source's prune settings, as the config running says.
	Prune SourcePrune `json:"prune"`
	// Pinned is the revision an operator pinned the source at (absent when not pinned):
	// it applies that revision, and every other head is its pendingRevision.
	Pinned *SourcePin `json:"pinned,omitempty"`
}

// SourcePin is who pinned a source at which revision, when and why: the answer of POST
// /api/v1/sources/{name}/pin.
type SourcePin struct {
	Revision string    `json:"revision"`
	Actor    string    `json:"actor"`
	Reason   string    `json:"reason"`
	At       time.Time `json:"at"`
}

// SourceRevision is one revision a source applied: GET /api/v1/sources/{name}/revisions
// lists them, the last applied first.
type SourceRevision struct {
	Revision    string    `json:"revision"`
	AuthorName  string    `json:"authorName,omitempty"`
	AuthorEmail string    `json:"authorEmail,omitempty"`
	AppliedAt   time.Time `json:"appliedAt"`
	Current     bool      `json:"current"` // the source's applied revision
	Pinned      bool      `json:"pinned"`  // the revision the source is pinned at
}

// SourceError is one validation error of a source's last attempted revision.
type SourceError struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
	// Origin names the input the error comes from: a ResourceSet's member or a render.
	Origin string `json:"origin,omitempty"`
}

// SourcePrune is a source's prune: block with the defaults applied.
type SourcePrune struct {
	Enabled     bool    `json:"enabled"`
	MaxFraction float64 `json:"maxFraction"` // 1: the share guard is off
	AllowEmpty  bool    `json:"allowEmpty"`
}

// SourceDetail is a source as GET /api/v1/sources/{name}?counts=true shows it: with its
// resources counted in the namespaces the caller may read.
type SourceDetail struct {
	Source
	Resources *SourceCounts `json:"resources,omitempty"`
}

// SourceCounts counts a source's resources: all of them, by phase, those being deleted, and
// those whose manifests are gone but which pruning kept.
type SourceCounts struct {
	Total    int            `json:"total"`
	Phases   map[string]int `json:"phases"`
	Deleting int            `json:"deleting"`
	Orphaned int            `json:"orphaned"`
}
