package actiontest

import (
	"math"
	"testing"

	"github.com/trueup-dev/trueup/actions"
)

// CheckPlan fails the test when p breaks what actions.PlanDetails.SetOn enforces of an
// accepted plan: counts from 0 to MaxInt32, all 0 without changes or counting, and a hash of
// at most actions.MaxPlanHash printable ASCII characters without spaces.
func CheckPlan(t testing.TB, p actions.Plan) {
	t.Helper()
	for _, n := range []int{p.Add, p.Change, p.Destroy, p.Replace} {
		if n < 0 || n > math.MaxInt32 {
			t.Fatalf("accepted count %d of %+v", n, p)
		}
	}
	if (!p.Changes || !p.Counted) && p.Add+p.Change+p.Destroy+p.Replace != 0 {
		t.Fatalf("accepted counts without changes or counting: %+v", p)
	}
	if len(p.Hash) > actions.MaxPlanHash {
		t.Fatalf("accepted a hash of %d characters", len(p.Hash))
	}
	for i := 0; i < len(p.Hash); i++ {
		if p.Hash[i] <= ' ' || p.Hash[i] > '~' {
			t.Fatalf("accepted hash %q: character %d is not printable ASCII or is a space", p.Hash, i+1)
		}
	}
}
