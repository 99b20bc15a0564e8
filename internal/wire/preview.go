package wire

import (
	"time"

	"github.com/trueup-dev/trueup/internal/previewresult"
)

// Preview is a pull request's preview: GET /api/v1/sources/{name}/previews lists them.
type Preview struct {
	Source       string    `json:"source"`
	Number       int       `json:"number"`
	Provider     string    `json:"provider"`
	Title        string    `json:"title"`
	URL          string    `json:"url"`
	HeadSHA      string    `json:"headSha"`
	BaseRevision string    `json:"baseRevision"`
	State        string    `json:"state"`
	Message      string    `json:"message"`
	CommentURL   string    `json:"commentUrl"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
	// Counts is absent until the preview has a result.
	Counts *previewresult.Counts `json:"counts,omitempty"`
	// Result is served by the single GET only, once there is one.
	Result *previewresult.Result `json:"result,omitempty"`
	// HiddenChanges counts the changes in namespaces the caller does not see.
	HiddenChanges int `json:"hiddenChanges,omitempty"`
	// HiddenWarnings counts the warnings about resources in namespaces the caller does not
	// see (they name those resources).
	HiddenWarnings int `json:"hiddenWarnings,omitempty"`
}
