package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/internal/plural"
)

// Input is what policies are decided on: one resource's change, as rules read it.
type Input struct {
	Resource Resource
	// Spec is the spec to apply (on delete, the spec being deleted) and OldSpec the applied
	// one, as JSON; empty (null in a rule) before the first apply. They are decoded only for
	// a rule that reads them, numbers as doubles (which compare with ints by value).
	Spec, OldSpec json.RawMessage
	Change        Change
	Plan          Plan
	Now           time.Time // the caller's clock
}

// SetPaths sets Change.Paths (change.paths) from OldSpec and Spec: ChangedPaths, an empty
// list when they do not differ, for every type of change (a create's are the top-level keys
// of its spec). The reconciler and the preview both fill change.paths with it, so that a
// preview forecasts what the gate decides after merge.
func (in *Input) SetPaths() {
	in.Change.Paths = ChangedPaths(in.OldSpec, in.Spec)
	if in.Change.Paths == nil {
		in.Change.Paths = []string{}
	}
}

// Decision is what the policies decide for one change.
type Decision struct {
	// Action is Allow (also when no policy holds), Deny or RequireApproval.
	Action Effect
	// Policy names the deciding policy: the deny, or the first requireApproval; "" for Allow.
	Policy string
	// Message is the deciding policy's message; for a rule that could not be evaluated, the
	// error.
	Message string
	// Approvals are the requirements of every requireApproval policy that holds, in order;
	// each must be satisfied (Approved). Empty unless Action is RequireApproval.
	Approvals []Requirement
	// Err is set when the decision is a deny because a rule could not be evaluated (over its
	// cost limit, cancelled, a missing key, not a bool); when the caller's context ended, it
	// wraps the context's error (context.Canceled, context.DeadlineExceeded).
	Err error
}

// Requirement is the approvals one requireApproval policy asks for.
type Requirement struct {
	Policy string
	Approvals
}

// Applies reports whether a policy selects r (by its match alone), and whether one of those
// reads plan in its rule: only a selected resource needs deciding, and only the second needs
// a plan for it.
func (s *Set) Applies(r *Resource) (selected, needsPlan bool) {
	selected, reads := s.Needs(r)
	return selected, reads.Plan
}

// Reads says which inputs of a change that cost the caller something to give (a plan, a
// read of the store) the rules of the policies selecting a resource read.
type Reads struct {
	Plan    bool // plan
	OldSpec bool // oldSpec
	Author  bool // change.author
	Paths   bool // change.paths (computed from oldSpec and spec)
}

// Needs is Applies with what the rules of the selecting policies read: the caller of Decide
// gives only those (the rest may stay zero).
func (s *Set) Needs(r *Resource) (selected bool, reads Reads) {
	if s == nil {
		return false, Reads{}
	}
	for i := range s.policies {
		if c := &s.policies[i]; c.selects(r) {
			selected = true
			reads.Plan = reads.Plan || c.reads.Plan
			reads.OldSpec = reads.OldSpec || c.reads.OldSpec
			reads.Author = reads.Author || c.reads.Author
			reads.Paths = reads.Paths || c.reads.Paths
		}
	}
	return selected, reads
}

// PlanReader names the first policy that selects r and whose rule reads plan ("" for none).
func (s *Set) PlanReader(r *Resource) string {
	if s == nil {
		return ""
	}
	for i := range s.policies {
		if c := &s.policies[i]; c.reads.Plan && c.selects(r) {
			return c.Name
		}
	}
	return ""
}

func (c *compiled) selects(r *Resource) bool { return c.Selects(r) }

// Decide reads the policies in order: the first deny that holds wins; otherwise, when
// requireApproval policies hold, the change needs the approvals of each; otherwise it is
// allowed. A resource no policy selects is allowed without evaluating a rule. A rule that
// cannot be evaluated (over CostLimit, ctx ended, an error, not a bool) counts as a deny of
// its policy at its place, with the error as the message and in Err: a policy that cannot
// say whether it holds does not let the change through.
func (s *Set) Decide(ctx context.Context, in *Input) Decision {
	var d Decision
	if s == nil {
		return Decision{Action: Allow}
	}
	var act *activation // made for the first rule that runs; it decodes the specs once
	for i := range s.policies {
		c := &s.policies[i]
		if !c.selects(&in.Resource) {
			continue
		}
		if c.prg != nil {
			if act == nil {
				act = &activation{in: in}
			}
			holds, err := c.eval(ctx, act)
			if err != nil {
				err = fmt.Errorf("policy %s: %w", c.Name, err)
				return Decision{Action: Deny, Policy: c.Name, Message: err.Error(), Err: err}
			}
			if !holds {
				continue
			}
		}
		switch c.Action {
		case Deny:
			return Decision{Action: Deny, Policy: c.Name, Message: c.message()}
		case RequireApproval:
			if d.Action == "" {
				d = Decision{Action: RequireApproval, Policy: c.Name, Message: c.message()}
			}
			d.Approvals = append(d.Approvals, Requirement{Policy: c.Name, Approvals: *c.Approvals})
		}
	}
	if d.Action == "" {
		d.Action = Allow
	}
	return d
}

// message is the policy's message, or one naming it.
func (c *compiled) message() string {
	switch {
	case c.Message != "":
		return c.Message
	case c.Action == Deny:
		return "denied by policy " + c.Name
	}
	return "policy " + c.Name + " needs " + Requirement{Policy: c.Name, Approvals: *c.Approvals}.String()
}

// String says what r asks for: "1 approval from group dba or token release-bot, not by the
// commit's author".
func (r Requirement) String() string {
	var from []string
	for _, p := range r.From {
		if p.Group != "" {
			from = append(from, "group "+p.Group)
		} else {
			from = append(from, "token "+p.Token)
		}
	}
	s := plural.Count(r.Count, "approval", "approvals") + " from " + strings.Join(from, " or ")
	if r.NotAuthor {
		s += ", not by the commit's author"
	}
	return s
}

// NoPlan is the plan of a change whose action cannot plan it (plan.available is false).
var NoPlan = Plan{}

// PlanOf is what rules read of a plan an action made, from the fields of actions.Plan (this
// package does not import the plugin contract: the API server, which links it through the
// store, must not link the plugins).
func PlanOf(changes, counted bool, add, change, destroy, replace int, summary string) Plan {
	return Plan{Available: true, Changes: changes, Counted: counted, Add: int64(add), Change: int64(change), Destroy: int64(destroy),
		Replace: int64(replace), Summary: summary}
}
