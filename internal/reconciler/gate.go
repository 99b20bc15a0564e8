package reconciler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/policy"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
)

// The gate of policies (DESIGN §7): a change of a resource that a policy selects is planned
// (when a rule reads the plan, or an approval must bind to one), decided, and called only
// when allowed or approved, inside the arbitrated call (after the PlanGate's Want: the plan
// and the apply see the same world). A resource no policy selects pays Set.Needs, nothing
// else.

// History results of a change the gate held.
const (
	resultApprovalRequired = "ApprovalRequired"
	resultPolicyDenied     = "PolicyDenied"
	resultRejected         = "Rejected"
)

// unplannedHash is the plan hash of a change whose action cannot plan it: approvals bind to
// the generation and the operation alone.
const unplannedHash = "unplanned"

// msgRedecide says why a held change is decided again at once.
const msgRedecide = "the policies were reloaded while the change was decided: it is decided again"

// maxPlanText bounds the plan text an approval request stores, maxSummary the plan summary
// that conditions, history and the request show.
const (
	maxPlanText = 64 << 10
	maxSummary  = 512
)

// gateOutcome is what the gate decided for one call.
type gateOutcome int

const (
	gateAllowed  gateOutcome = iota + 1 // no policy holds back: called
	gateApproved                        // the approvals asked for were given: called
	gateWaiting                         // waits for approvals: not called
	gateDenied                          // a deny policy holds: not called
	gateRejected                        // an approver rejected the plan: not called
)

// metric names the outcome in trueup_policy_decisions_total.
func (o gateOutcome) metric() string {
	return [...]string{gateAllowed: "allowed", gateApproved: "approved", gateWaiting: "approval_required", gateDenied: "denied",
		gateRejected: "rejected"}[o]
}

// gate is one call's passage through the policies: what they read, and what they decided.
type gate struct {
	set   *policy.Set
	ttl   time.Duration
	reads policy.Reads
	id    int64
	in    policy.Input
	// applied is the spec the resource was last applied with, when loaded (a delete's claim
	// holds it; a change reads it only for a rule that reads oldSpec or change.paths).
	applied  []byte
	haveOld  bool
	decision policy.Decision
	// spanScrub cleans what the call's spans record (call sets it): the plan's span too.
	spanScrub func(string) string
	outcome   gateOutcome
	planned   bool // the action made a plan (ApprovedPlan is sent)
	hash      string
	plan      store.ApprovalPlan
	// approvers are the actors whose approvals let the change through; rejection the vote
	// that refused it.
	approvers []string
	rejection *store.Vote
}

// gateFor prepares the gate of c's call, or returns nil when the call is not gated: the
// trigger is not a change (a requeue of work in flight, a delete in progress), or no policy
// selects the resource. unselected reports the latter (a stale Approved condition goes).
func (r *Reconciler) gateFor(c *store.Claimed, trig string) (g *gate, unselected bool) {
	if r.opts.Policies == nil || !gatedTrigger(trig, c) {
		return nil, false
	}
	set, ttl := r.opts.Policies()
	res := policy.Resource{Source: c.Source, APIVersion: c.APIVersion, Kind: c.Kind, Namespace: c.Namespace, Name: c.Name,
		Labels: c.Labels, Annotations: c.Annotations}
	selected, reads := set.Needs(&res)
	if !selected {
		return nil, true
	}
	// change.revision is the revision that brought the change (for a delete, the one that
	// removed the manifest, not the one the delete runs at): its author is the change's.
	g = &gate{set: set, ttl: ttl, reads: reads, id: c.ID, in: policy.Input{Resource: res, Spec: c.Spec,
		Change: policy.Change{Type: changeType(c, trig), Generation: c.Generation, Revision: c.Revision}}}
	if c.Deleting {
		g.applied, g.haveOld = deleteSpec(*c), true
	}
	return g, false
}

// wasHeld reports whether c's Approved condition was False when claimed: a wait, a deny or a
// rejection stored before.
func wasHeld(c *store.Claimed) bool {
	was, ok := status.Get(c.Conditions, status.Approved)
	return ok && was.Status == status.False
}

// gatedTrigger reports whether a call with trigger trig is a change the gate decides: a
// first apply, a new spec, a delete, a retry, an operator's or a dependency's request, or a
// resync (decided once Observe found drift). A requeue of work in flight is not, nor a
// delete in progress (its last call asked to be called again).
func gatedTrigger(trig string, c *store.Claimed) bool {
	switch trig {
	case "requeue":
		return false
	case "deleted":
		rec, _ := status.Get(c.Conditions, status.Reconciling)
		return c.Attempt > 0 || rec.Reason != status.ReasonDeleting
	}
	return true
}

// mayContinue reports whether c's call may continue work the gate already let through for
// its generation (letThrough then asks history): the Approved condition is True for c's
// generation and the action keeps state (a handle of the work). A resync is a new look for
// drift, never a continuation.
func mayContinue(c *store.Claimed, trig string) bool {
	was, ok := status.Get(c.Conditions, status.Approved)
	return trig != "resync" && len(c.ActionState) > 0 && ok && was.Status == status.True && was.ObservedGeneration == c.Generation
}

// letThrough reports whether c's call continues work the gate let through for this generation
// and operation, still in flight (the last call of it that did not fail left work in
// progress): a retry of its poll, an operator's or a dependency's request, an interrupted
// delete. The approved work is not decided again.
func (r *Reconciler) letThrough(ctx context.Context, c *store.Claimed, trig string) (bool, error) {
	if !mayContinue(c, trig) {
		return false, nil
	}
	op := "reconcile"
	if c.Deleting {
		op = "delete"
	}
	return r.store.WorkInFlight(ctx, c.UID, c.Namespace, c.Kind, c.Name, c.Generation, op)
}

// changeType is change.type of c's call.
func changeType(c *store.Claimed, trig string) string {
	switch {
	case c.Deleting:
		return policy.ChangeDelete
	case trig == "resync":
		return policy.ChangeDrift
	case c.ObservedGeneration == 0 && c.AppliedRevision == "":
		return policy.ChangeCreate
	}
	return policy.ChangeUpdate
}

// decide runs the gate inside the call: plan (with KeepPlan) when a rule reads the plan or
// an approval must bind to one, decide, and for requireApproval read the votes. It reports
// whether the plugin may be called; req then carries ApprovedPlan. A plan or store error
// fails the attempt (retried with backoff).
func (r *Reconciler) decide(ctx context.Context, act actions.Action, name string, req *actions.Request, deleting bool, a *attempt) bool {
	g := a.gate
	planned := false
	makePlan := func() bool {
		planned = true
		p, err := r.plan(ctx, act, name, *req, deleting, g.spanScrub)
		switch {
		case errors.Is(err, actions.ErrNoPlan):
			g.in.Plan, g.hash = policy.NoPlan, unplannedHash
		case err != nil:
			a.err = fmt.Errorf("plan: %w", err)
			return false
		default:
			// The plan is scrubbed of the call's revealed values (and the controller's kept
			// secrets) before anything reads it: the hash derived from its text (PlanHash,
			// for a plugin that gives none) is published, and taken over the raw text it would
			// change with a secret's value and let a guess of one be checked against it.
			scrub := r.opts.Redact.KeptWith(req.Secrets)
			p.Text, p.Summary = scrub(p.Text), scrub(p.Summary)
			g.in.Plan, g.hash, g.planned = policy.PlanOf(p.Changes, p.Counted, p.Add, p.Change, p.Destroy, p.Replace, p.Summary), actions.PlanHash(p), true
			g.plan = store.ApprovalPlan{Available: true, Changes: p.Changes, Counted: p.Counted, Add: p.Add, Change: p.Change,
				Destroy: p.Destroy, Replace: p.Replace, Summary: p.Summary, Text: p.Text}
		}
		return true
	}
	if g.reads.Plan && !makePlan() {
		return false
	}
	if err := r.loadInputs(ctx, g, g.reads); err != nil {
		a.err = err
		return false
	}
	g.in.Now = time.Now()
	evalStart := time.Now()
	g.decision = g.set.Decide(ctx, &g.in)
	eval := time.Since(evalStart)
	if err := g.decision.Err; errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// The call's context ended during the decision (a shutdown, a lost lease): an attempt
		// cut short, not a deny.
		a.err = fmt.Errorf("policy %s: %w", g.decision.Policy, err)
		return false
	}
	if g.decision.Action == policy.RequireApproval && !planned && !makePlan() {
		return false
	}
	if g.hash == "" {
		g.hash = unplannedHash
	}
	defer func() {
		if g.outcome != 0 {
			r.opts.Metrics.PolicyDecided(g.outcome.metric(), eval)
		}
	}()
	switch g.decision.Action {
	case policy.Deny:
		g.outcome = gateDenied
		return false
	case policy.RequireApproval:
		// The request names the author, and notAuthor refuses the author's approval.
		if err := r.loadInputs(ctx, g, policy.Reads{Author: true}); err != nil {
			a.err = err
			return false
		}
		votes, err := r.store.Votes(ctx, g.id, g.in.Change.Generation, deleting, g.hash, time.Now().Add(-g.ttl))
		if err != nil {
			a.err = err
			return false
		}
		var approvers []policy.Approver
		for i, v := range votes {
			if !v.Approve {
				// A rejection counts from an actor the requirements in force permit.
				if g.decision.Permits(v.Approver, g.in.Change.Author) != nil {
					continue
				}
				g.outcome, g.rejection = gateRejected, &votes[i]
				return false
			}
			approvers = append(approvers, v.Approver)
		}
		if !g.decision.Approved(approvers, g.in.Change.Author) {
			g.outcome = gateWaiting
			return false
		}
		for _, v := range votes {
			if g.decision.Permits(v.Approver, g.in.Change.Author) == nil && !slices.Contains(g.approvers, v.Actor) {
				g.approvers = append(g.approvers, v.Actor)
			}
		}
		g.outcome = gateApproved
	default:
		g.outcome = gateAllowed
	}
	if g.planned {
		req.ApprovedPlan = g.hash
	}
	return true
}

// reloaded reports whether the policies in force are not the ones g decided with.
func (r *Reconciler) reloaded(g *gate) bool {
	set, _ := r.opts.Policies()
	return set != g.set
}

// result is the history result of a held change.
func (g *gate) result() string {
	switch g.outcome {
	case gateWaiting:
		return resultApprovalRequired
	case gateDenied:
		return resultPolicyDenied
	}
	return resultRejected
}

// waited reports whether a resync found nothing to do for a resource the gate held (for
// drift since gone), whether policies still select it or not: its hold ends.
func (a *attempt) waited() bool {
	return a.inSync && a.wasHeld
}

// plan asks the action for the plan of the call req (PlanDelete for a delete), keeping it
// (KeepPlan) so that the call can apply exactly it. actions.ErrNoPlan: it cannot plan. scrub
// cleans what its span records, as the call's other spans are (nil: the controller's secrets).
func (r *Reconciler) plan(ctx context.Context, act actions.Action, name string, req actions.Request, deleting bool, scrub func(string) string) (actions.Plan, error) {
	if scrub == nil {
		scrub = r.opts.Redact.Scrub
	}
	req.KeepPlan = true
	var p actions.Plan
	err := actions.ErrNoPlan
	actx, span := r.actionSpan(ctx, "plan", name, req)
	if deleting {
		if dp, ok := act.(actions.DeletePlanner); ok {
			p, err = dp.PlanDelete(actx, req)
		}
	} else if pl, ok := act.(actions.Planner); ok {
		p, err = pl.Plan(actx, req)
	}
	endAction(span, err, scrub, actions.Result{Done: err == nil})
	return p, err
}

// loadInputs reads what the rules need and the claim does not hold: the applied spec (for
// oldSpec and change.paths) and the revision's author.
func (r *Reconciler) loadInputs(ctx context.Context, g *gate, need policy.Reads) error {
	if (need.OldSpec || need.Paths) && !g.haveOld {
		spec, err := r.store.AppliedSpec(ctx, g.id)
		if err != nil {
			return err
		}
		g.applied, g.haveOld = spec, true
		g.in.OldSpec = spec
	}
	if g.haveOld && g.in.OldSpec == nil {
		g.in.OldSpec = g.applied
	}
	if need.Paths && g.in.Change.Paths == nil {
		g.in.SetPaths()
	}
	if need.Author && r.opts.Author != nil && g.in.Change.Author == (policy.Author{}) && g.in.Change.Revision != "" {
		author, err := r.opts.Author(ctx, g.in.Resource.Source, g.in.Change.Revision)
		if err != nil {
			return fmt.Errorf("author of revision %s: %w", clip.Rev(g.in.Change.Revision), err)
		}
		g.in.Change.Author = author
	}
	return nil
}

// scrub removes secrets from the plan text and summary the request stores, and bounds the
// text.
func (g *gate) scrub(scrub func(string) string) {
	g.plan.Text, g.plan.Summary = scrub(g.plan.Text), scrub(g.plan.Summary)
}

// planID names the plan: "plan 0123456789ab", or "no plan (the action cannot plan)".
func (g *gate) planID() string {
	if !g.planned {
		return "no plan (the action cannot plan)"
	}
	return "plan " + clip.Rev(g.hash)
}

// planRef is planID with the plan's summary.
func (g *gate) planRef() string {
	if g.planned && g.plan.Summary != "" {
		return g.planID() + ": " + clip.Storable(g.plan.Summary, maxSummary)
	}
	return g.planID()
}

// message is what the resource's conditions and history say of the decision.
func (g *gate) message() string {
	d := g.decision
	switch g.outcome {
	case gateWaiting:
		needs := make([]string, len(d.Approvals))
		for i, req := range d.Approvals {
			needs[i] = req.String()
		}
		return d.Message + " — " + g.planRef() + "; needs " + strings.Join(needs, " and ") + g.authorNote()
	case gateDenied:
		return d.Message
	case gateRejected:
		msg := "rejected by " + g.rejection.Actor
		if g.rejection.Reason != "" {
			msg += ": " + g.rejection.Reason
		}
		return msg
	case gateApproved:
		return "approved by " + strings.Join(g.approvers, ", ") + " (policy " + d.Policy + ", " + g.planID() + ")"
	}
	if g.planned {
		return "allowed by policies (" + g.planRef() + ")"
	}
	return "allowed by policies"
}

// msgAuthorUnknown says that notAuthor refuses nobody: the commit's author is unknown.
const msgAuthorUnknown = "the commit's author is unknown: notAuthor cannot be checked"

// authorNote is "; "+msgAuthorUnknown when a requirement asks for notAuthor and the change's
// author is unknown (a source without commits, such as a folder), else "".
func (g *gate) authorNote() string {
	if g.in.Change.Author != (policy.Author{}) {
		return ""
	}
	for _, req := range g.decision.Approvals {
		if req.Approvals.NotAuthor {
			return "; " + msgAuthorUnknown
		}
	}
	return ""
}

// record is what history and events say of a held change: the message, with the policy and
// the plan named.
func (g *gate) record() string {
	switch g.outcome {
	case gateWaiting:
		return "policy " + g.decision.Policy + ": " + g.message()
	case gateDenied:
		return "policy " + g.decision.Policy + ": " + g.decision.Message + " (" + g.planRef() + ")"
	case gateRejected:
		return g.message() + " (policy " + g.decision.Policy + ", " + g.planRef() + ")"
	}
	return g.message()
}

// request is the approval request a held change stores.
func (g *gate) request(c *store.Claimed, state string, scrub func(string) string) *store.ApprovalRequest {
	plan := g.plan
	plan.Text = clip.Storable(scrub(plan.Text), maxPlanText)
	plan.Summary = clip.Storable(scrub(plan.Summary), maxSummary)
	return &store.ApprovalRequest{Generation: c.Generation, Deleting: c.Deleting, ChangeType: g.in.Change.Type,
		Revision: g.in.Change.Revision, PlanHash: g.hash, Plan: plan, Decision: g.decision.Action, Policy: g.decision.Policy,
		Message: scrub(g.decision.Message) + g.authorNote(), Requirements: g.decision.Approvals, Author: g.in.Change.Author, State: state}
}

// held writes the outcome of a change the gate held (waiting, denied, rejected): no call
// was made. A newer generation, or a deletion, that arrived meanwhile runs at once.
func (r *Reconciler) held(c store.Claimed, a attempt, cur store.Current, u store.Update, prev status.State, ev func(typ, reason, m string) store.Event, now time.Time) store.Update {
	g := a.gate
	msg, rec := r.scrub(g.message()), r.scrub(g.record())
	u.Message, u.History.Message = msg, rec
	u.KeepActionState, u.Attempt, u.RunAt = true, c.Attempt, nil
	var st status.State
	switch g.outcome {
	case gateWaiting:
		st = status.AwaitingApproval(prev, c.Generation, c.Deleting, msg, now)
		u.History.Result = resultApprovalRequired
		u.Approval = g.request(&c, store.ApprovalPending, r.scrub)
		if was, _ := status.Get(prev.Conditions, status.Approved); was.Reason != status.ReasonApprovalRequired || was.Message != msg {
			u.Events = append(u.Events, ev(store.EventNormal, status.ReasonApprovalRequired, rec))
		}
	case gateDenied:
		st = status.Refused(prev, c.Generation, c.Deleting, status.ReasonPolicyDenied, msg, now)
		u.History.Result = resultPolicyDenied
		u.Approval = g.request(&c, store.ApprovalDenied, r.scrub)
		u.Events = append(u.Events, ev(store.EventWarning, status.ReasonPolicyDenied, rec))
	default:
		st = status.Refused(prev, c.Generation, c.Deleting, status.ReasonRejected, msg, now)
		u.History.Result = resultRejected
		u.Approval = g.request(&c, store.ApprovalRejected, r.scrub)
		u.Events = append(u.Events, ev(store.EventWarning, status.ReasonRejected, rec))
	}
	if cur.Generation != c.Generation || cur.Deleting != c.Deleting {
		// What was decided no longer applies: the newer work runs now.
		if cur.Deleting {
			st = status.DeletionRequested(st, now)
		} else {
			st = status.NewGeneration(st, cur.Generation, now)
		}
		u.Approval, u.ClearApproval = nil, true
		u.Attempt, u.RunAt = 0, ptr(now)
	} else if r.opts.Policies != nil && r.reloaded(g) {
		// The policies were reloaded while this change was decided (a reload requeues only
		// the changes with a request stored): it is decided again now, with them.
		st = status.Redecide(st, msgRedecide, now)
		u.RunAt = ptr(now)
	}
	u.Phase, u.Conditions, u.ObservedGeneration = st.Phase, st.Conditions, st.ObservedGeneration
	return u
}
