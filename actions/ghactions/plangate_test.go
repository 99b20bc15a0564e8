package ghactions

import (
	"testing"

	"github.com/trueup-dev/trueup/actions"
)

// A plan is a CI run of its own: the host does not stop it for the resource's reconciles.
func TestPlansNotArbitrated(t *testing.T) {
	t.Parallel()
	if _, ok := any((*Action)(nil)).(actions.PlanArbitrated); ok {
		t.Fatal("ghactions plans are arbitrated: a reconcile or poll of the resource would cancel them")
	}
}
