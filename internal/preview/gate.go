package preview

import (
	"context"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/policy"
	"github.com/trueup-dev/trueup/internal/previewresult"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
)

// gate decides, with the controller's policies as they are now, every change that a merge
// would reconcile (not a change of metadata alone), as the reconciler would after the merge:
// its type (create, update, delete), the pull request's spec and the applied one, the head's
// revision and its commit's author, and the plan the preview made (plans, aligned with
// changes). A change the policies hold gets its Gate. When a policy selecting the resource
// reads the plan and the preview has none where the reconciler would plan (a delete by an
// action that plans deletes, which previews do not plan; a plan skipped, failed or timed
// out), the gate is undecided: it depends on the plan made after merge. types are the
// applied types (whose actions plan). A pull request from a fork (from), whose comment
// anyone may read, is told which policy holds a change and how, not the policy's message nor
// who may approve.
func (c *Checker) gate(ctx context.Context, set *manifest.Set, types map[string]manifest.ResourceType, applied []store.AppliedResource,
	changes []Change, plans []policy.Plan, head *sources.Snapshot, from Origin) {
	if c.Policies == nil {
		return
	}
	policies := c.Policies()
	if policies == nil {
		return
	}
	desired := make(map[string]*manifest.Resource, len(set.Resources))
	for i := range set.Resources {
		r := &set.Resources[i]
		desired[identity(r.Namespace, r.Kind, r.Name)] = r
	}
	current := make(map[string]*store.AppliedResource, len(applied))
	for i := range applied {
		a := &applied[i]
		current[identity(a.Namespace, a.Kind, a.Name)] = a
	}
	now := time.Now()
	for i := range changes {
		ch := &changes[i]
		if ch.Plan != nil && ch.Plan.Summary == metadataOnly {
			continue
		}
		id := identity(ch.Namespace, ch.Kind, ch.Name)
		in := policy.Input{Resource: policy.Resource{Source: c.Source, Kind: ch.Kind, Namespace: ch.Namespace, Name: ch.Name},
			Change: policy.Change{Revision: head.Revision, Author: policy.Author(head.Author)}, Plan: plans[i], Now: now}
		a := current[id]
		if a != nil {
			in.OldSpec = a.Spec
		}
		switch r := desired[id]; {
		case ch.Op == "delete" && a != nil:
			in.Resource.APIVersion, in.Resource.Labels, in.Resource.Annotations = a.APIVersion, a.Labels, a.Annotations
			in.Spec, in.Change.Type, in.Change.Generation = a.Spec, policy.ChangeDelete, a.Generation
		case r != nil:
			in.Resource.APIVersion, in.Resource.Labels, in.Resource.Annotations = r.APIVersion, r.Labels, r.Annotations
			in.Spec, in.Change.Type, in.Change.Generation = r.Spec, policy.ChangeCreate, 1
			if a != nil {
				in.Change.Type, in.Change.Generation = policy.ChangeUpdate, a.Generation+1
			}
		default:
			continue
		}
		in.SetPaths()
		if !c.planKnown(ch, types) {
			if name := policies.PlanReader(&in.Resource); name != "" {
				ch.Gate = &Gate{Decision: previewresult.Undecided, Policy: name}
				continue
			}
		}
		ch.Gate = c.gateOf(policies.Decide(ctx, &in))
		if ch.Gate != nil && from.Fork {
			ch.Gate.Message, ch.Gate.Requires = "", nil
		}
	}
}

// planKnown reports whether the plan the preview gives ch's policies is the reconciler's
// after merge: a plan made, or none because the action does not plan (the change, or for a
// delete, deletes).
func (c *Checker) planKnown(ch *Change, types map[string]manifest.ResourceType) bool {
	if ch.Op == "delete" {
		t, ok := types[strings.ToLower(ch.Kind)]
		if !ok {
			return false
		}
		_, plans := c.Actions[t.Action.Name].(actions.DeletePlanner)
		return !plans
	}
	return ch.Plan != nil && (ch.Plan.Status == "planned" || ch.Plan.Status == "no-plan")
}

// gateOf is what the comment shows of d: nothing for Allow; the policy's message (none for a
// deny's default, which Gate.Text says) and, for requireApproval, what each policy that holds
// asks for. What the policies say is the controller's, scrubbed of its secrets all the same
// (a rule's error may quote a value).
func (c *Checker) gateOf(d policy.Decision) *Gate {
	switch d.Action {
	case policy.Deny:
		msg := strings.TrimPrefix(d.Message, "policy "+d.Policy+": ")
		if msg == "denied by policy "+d.Policy {
			msg = "" // the default message says no more than Text
		}
		return &Gate{Decision: string(policy.Deny), Policy: d.Policy, Message: c.Redact.Scrub(msg)}
	case policy.RequireApproval:
		g := &Gate{Decision: string(policy.RequireApproval), Policy: d.Policy, Message: c.Redact.Scrub(d.Message)}
		for _, r := range d.Approvals {
			g.Requires = append(g.Requires, r.String()+" (policy "+r.Policy+")")
		}
		return g
	}
	return nil
}
