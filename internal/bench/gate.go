package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/noop"
	"github.com/trueup-dev/trueup/internal/policy"
)

// idlePolicies are ten policies of the issue's shape that select none of the bench's
// resources (other namespaces, kinds and labels): each resource costs their match only.
func idlePolicies() []policy.Policy {
	var ps []policy.Policy
	for i := range 10 {
		ps = append(ps, policy.Policy{Name: fmt.Sprintf("idle-%d", i),
			Match: policy.Match{Namespaces: []string{fmt.Sprintf("team-%d", i)}, Kinds: []string{"Database"}, Selector: "tier=critical"},
			When:  "plan.destroy > 0 || plan.replace > 0 || change.type == 'delete'", Action: policy.RequireApproval,
			Approvals: &policy.Approvals{From: []policy.Principal{{Group: "dba"}}}})
	}
	return ps
}

// gatePolicy selects every Widget and reads its plan: after the noop's plan (no changes) it
// allows, so each resource is planned, decided and applied.
var gatePolicy = policy.Policy{Name: "widget-destroy-needs-ops", Match: policy.Match{Kinds: []string{"Widget"}},
	When: "plan.destroy > 0 || plan.replace > 0", Action: policy.RequireApproval,
	Approvals: &policy.Approvals{From: []policy.Principal{{Group: "ops"}, {Token: "release-bot"}}, NotAuthor: true}}

// gateThroughput is reconcile_throughput_policies10 (20,000 resources, as
// reconcile_throughput, with ten policies selecting none) and reconcile_throughput_gated
// (10,000 resources a policy selects, planned by the noop before each apply); with baseline,
// reconcile_throughput first, to compare within one run.
func (b *bench) gateThroughput(ctx context.Context, baseline bool) error {
	type gateCase struct {
		name     string
		n        int
		policies []policy.Policy
		planned  bool // the policies select every resource and read its plan
		target   float64
	}
	cases := []gateCase{
		{"reconcile_throughput_policies10", 20000, idlePolicies(), false, 5000},
		{"reconcile_throughput_gated", 10000, append(idlePolicies(), gatePolicy), true, 2000},
	}
	if baseline {
		cases = append([]gateCase{{"reconcile_throughput", 20000, nil, false, 5000}}, cases...)
	}
	for _, c := range cases {
		var set *policy.Set
		if c.policies != nil {
			var err error
			if set, err = policy.Compile(c.policies); err != nil {
				return err
			}
		}
		act, _ := noop.New(nil, actions.Env{Name: "act", Logger: b.log})
		counted := &countingPlanner{Action: act.(*noop.Action)}
		rate, err := b.gatedRate(ctx, c.n, set, counted)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		// The figure is the gate's only if each resource was planned (and none without it).
		want := int64(0)
		if c.planned {
			want = int64(c.n)
		}
		if got := counted.plans.Load(); got != want {
			return fmt.Errorf("%s: %d plans, want %d", c.name, got, want)
		}
		record(c.name, rate, "1/s", fmt.Sprintf("≥ %.0f", c.target), atLeast(c.target))
	}
	return nil
}

// countingPlanner is the noop action counting its plans.
type countingPlanner struct {
	*noop.Action
	plans atomic.Int64
}

func (c *countingPlanner) Plan(ctx context.Context, req actions.Request) (actions.Plan, error) {
	c.plans.Add(1)
	return c.Action.Plan(ctx, req)
}

// gatedRate drains n seeded resources with act on one replica whose reconciler reads set.
func (b *bench) gatedRate(ctx context.Context, n int, set *policy.Set, act actions.Action) (float64, error) {
	st, url, err := b.freshStore(ctx, 4)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	if err := b.seed(ctx, st, n); err != nil {
		return 0, err
	}
	b.policies = set
	defer func() { b.policies = nil }()
	return b.drainRate(ctx, url, st, n, 1, act)
}

// policyEval is policy_eval_per_resource: Set.Decide of a resource that the issue's policy
// and one other select, among ten idle ones (their rules read the plan, the change and the
// specs); policy_eval_plan_rule_per_resource: the same with the issue's policy alone
// selecting it (its rule reads the plan and the change, no spec is decoded); and
// policy_match_none_per_resource: the same resource's decision when only the ten idle
// policies are configured.
func policyEval(ctx context.Context) error {
	dba := &policy.Approvals{Count: 1, From: []policy.Principal{{Group: "dba"}, {Token: "release-bot"}}, NotAuthor: true}
	issue := policy.Policy{Name: "prod-destroy-needs-dba",
		Match: policy.Match{Sources: []string{"infra"}, Namespaces: []string{"production"}, Kinds: []string{"Database"}, Selector: "tier=critical"},
		When:  "plan.destroy > 0 || plan.replace > 0 || change.type == 'delete'", Action: policy.RequireApproval, Approvals: dba}
	selecting := append(idlePolicies(), issue,
		policy.Policy{Name: "no-shrink", Match: policy.Match{Namespaces: []string{"prod*"}},
			When: "oldSpec != null && spec.storageGB < oldSpec.storageGB", Action: policy.Deny, Message: "storage never shrinks"})
	in := &policy.Input{
		Resource: policy.Resource{Source: "infra", APIVersion: "db.example.com/v1", Kind: "Database", Namespace: "production", Name: "orders",
			Labels: map[string]string{"tier": "critical", "team": "checkout"}, Annotations: map[string]string{"owner": "dba"}},
		Spec:    json.RawMessage(`{"engine": "postgres", "version": "16", "storageGB": 200, "replicas": 3, "backup": {"schedule": "daily", "retentionDays": 14}}`),
		OldSpec: json.RawMessage(`{"engine": "postgres", "version": "15", "storageGB": 200, "replicas": 3, "backup": {"schedule": "daily", "retentionDays": 14}}`),
		Change: policy.Change{Type: policy.ChangeUpdate, Generation: 4, Revision: "4e5f6a7b8c9d0e1f2a3b", Author: policy.Author{Name: "Ada", Email: "ada@example.com"},
			Paths: []string{"spec.version"}},
		Plan: policy.Plan{Available: true, Changes: true, Replace: 1, Summary: "1 to add, 0 to change, 1 to destroy"},
		Now:  time.Now(),
	}
	for _, c := range []struct {
		name     string
		policies []policy.Policy
		want     policy.Effect
	}{
		{"policy_eval_per_resource", selecting, policy.RequireApproval},
		{"policy_eval_plan_rule_per_resource", append(idlePolicies(), issue), policy.RequireApproval},
		{"policy_match_none_per_resource", idlePolicies(), policy.Allow},
	} {
		set, err := policy.Compile(c.policies)
		if err != nil {
			return err
		}
		const rounds = 200000
		start := time.Now()
		for range rounds {
			if d := set.Decide(ctx, in); d.Action != c.want {
				return fmt.Errorf("%s: decided %+v, want %s", c.name, d, c.want)
			}
		}
		record(c.name, float64(time.Since(start).Nanoseconds())/rounds, "ns", "", nil)
	}
	return nil
}
