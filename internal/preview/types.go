// Package preview previews pull requests (DESIGN §4, Previews): it fetches a pull request's
// head, validates it exactly as a push, diffs it against the source's applied desired state,
// asks each changed resource's action for a plan, and renders what it found for the forge
// (one commit status, one comment edited in place), the API, the dashboard and the CLI.
// Nothing is ever applied or reconciled from a pull request.
package preview

import "github.com/trueup-dev/trueup/internal/previewresult"

// What a preview found; the types live in the leaf package previewresult, which the server
// reads them from.
type (
	Result = previewresult.Result
	Counts = previewresult.Counts
	Change = previewresult.Change
	Plan   = previewresult.Plan
	Error  = previewresult.Error
	Gate   = previewresult.Gate
)
