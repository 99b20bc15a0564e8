package actions_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/actiontest"
)

// FuzzPlanDetails sets arbitrary details on a plan. It must not panic; an accepted plan has
// counts from 0 to MaxInt32, all 0 without changes or counting, and a hash of at most
// MaxPlanHash printable ASCII characters without spaces that holds no secret; the refusal of
// a count does not quote it.
func FuzzPlanDetails(f *testing.F) {
	f.Add(true, `{"add": 1, "change": 0, "destroy": 2, "replace": 0, "hash": "sha256:ab"}`, "")
	f.Add(false, `{"add": 0, "hash": ""}`, "")
	f.Add(false, `{"destroy": 1}`, "")
	f.Add(true, `{"add": -1, "hash": " "}`, "")
	f.Add(true, `{"add": 1e3, "change": 2147483648, "replace": "1"}`, "")
	f.Add(true, `{"hash": "plan-tok-0123-x"}`, "tok-0123")
	f.Add(true, `{"hash": "plan-a%2Fb"}`, "a/b")
	f.Fuzz(func(t *testing.T, changes bool, details, secret string) {
		var d actions.PlanDetails
		if json.Unmarshal([]byte(details), &d) != nil {
			return
		}
		var scrub func(string) string
		if secret != "" {
			scrub = actions.Scrubber([]string{secret})
		}
		p := actions.Plan{Changes: changes}
		if err := d.SetOn(&p, scrub); err != nil {
			if !strings.Contains(err.Error(), "want a non-negative integer") {
				return
			}
			for _, raw := range []json.RawMessage{d.Add, d.Change, d.Destroy, d.Replace} {
				if s := strings.TrimSpace(string(raw)); len(s) > 3 && strings.Contains(err.Error(), s) {
					t.Fatalf("refusal %q quotes %s", err, s)
				}
			}
			return
		}
		actiontest.CheckPlan(t, p)
		if secret != "" && strings.Contains(p.Hash, secret) {
			t.Fatalf("accepted hash %q holding the secret %q", p.Hash, secret)
		}
	})
}
