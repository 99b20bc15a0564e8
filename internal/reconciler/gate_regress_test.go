package reconciler

import (
	"testing"

	"github.com/trueup-dev/trueup/internal/status"
)

// An approval of a create (the action cannot plan: hash "unplanned") does not let the delete
// of the same generation through: a delete does not raise the generation, and votes are
// bound to the operation too.
func TestGateCreateApprovalNotDelete(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	f := newGateFixture(t, callsOnly{rec}, needsDBA(""))
	f.waitApproved("db", status.False, status.ReasonApprovalRequired)
	f.vote(true, "dba", unplannedHash, "create ok", 0)
	f.waitApproved("db", status.True, status.ReasonApproved)
	f.waitPhase("db", status.PhaseReady)
	f.apply(gateManifests(1, false))
	waitFor(t, "delete decided", func() (bool, string) {
		res, err := f.st.GetResource(f.ctx, "default", "Widget", "db")
		if err != nil {
			return true, "gone"
		}
		c, _ := status.Get(res.Status.Conditions, status.Approved)
		return res.Status.Phase == status.PhaseDeleting && c.Status == status.False, shows(res)
	})
	if n := rec.count("delete db"); n != 0 {
		t.Fatalf("the delete ran without any approval of it (the create's approval counted): %q", rec.log())
	}
	// An approval of the delete lets it through.
	f.vote(true, "dba", unplannedHash, "delete ok", 0)
	waitFor(t, "db deleted", func() (bool, string) {
		res, err := f.st.GetResource(f.ctx, "default", "Widget", "db")
		return err != nil, shows(res)
	})
}
