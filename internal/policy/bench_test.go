package policy

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkDecideNoMatch: ten policies select other namespaces, kinds and labels; a resource
// none selects costs their match only.
func BenchmarkDecideNoMatch(b *testing.B) {
	var ps []Policy
	for i := range 10 {
		ps = append(ps, Policy{Name: fmt.Sprintf("p%d", i), Match: Match{Namespaces: []string{fmt.Sprintf("team-%d", i)},
			Kinds: []string{"Database"}, Selector: "tier=critical"}, When: "plan.destroy > 0", Action: Deny})
	}
	benchDecide(b, mustCompile(b, ps...), Allow)
}

// BenchmarkDecideMatch: the policy selects the resource and its rule runs.
func BenchmarkDecideMatch(b *testing.B) {
	benchDecide(b, mustCompile(b, Policy{Name: "prod-destroy-needs-dba",
		Match:     Match{Sources: []string{"infra"}, Namespaces: []string{"production"}, Kinds: []string{"Database"}, Selector: "tier=critical"},
		When:      "plan.destroy > 0 || plan.replace > 0 || change.type == 'delete'",
		Action:    RequireApproval,
		Approvals: &Approvals{Count: 1, From: []Principal{{Group: "dba"}, {Token: "release-bot"}}, NotAuthor: true}}), RequireApproval)
}

func benchDecide(b *testing.B, s *Set, want Effect) {
	in := input()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if d := s.Decide(ctx, in); d.Action != want {
			b.Fatal(d)
		}
	}
}
