package syncer

import (
	"testing"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/store"
)

// A revision's conflicts with other sources are counted in words.
func TestLoadFailureConflicts(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{1: "1 conflict with other sources", 2: "2 conflicts with other sources"} {
		err := &store.ConflictError{Errors: make(manifest.Errors, n)}
		if got := loadFailure(err); got != want {
			t.Errorf("loadFailure(%d conflicts) = %q, want %q", n, got, want)
		}
	}
}
