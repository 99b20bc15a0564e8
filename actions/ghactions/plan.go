package ghactions

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/forge/githubapi"
)

// cancelTimeout bounds the cancel of a plan run nobody waits for any more.
const cancelTimeout = 10 * time.Second

// RunsPullRequestCode: the plans run the repository's CI (with.planWorkflow) on the pull request's spec,
// asked for pull requests from forks only with preview.forkPlans.
func (a *Action) RunsPullRequestCode() bool { return true }

var _ actions.PullRequestCodePlanner = (*Action)(nil)

// Plan dispatches with.planWorkflow with operation=plan and waits within the call, until
// ctx ends (the preview runner's plan timeout), for its run; the plan is the run's
// trueup-outputs artifact: {"changes": bool, "summary": "…", "plan": "…"}. A plan has no
// handle to keep between calls (a preview is one call), so it neither reads nor writes
// State or checkpoints; its fresh trueup_id keeps it apart from the resource's reconcile
// runs, which are only ever found by their own: it runs alongside them (not
// actions.PlanArbitrated). Without planWorkflow the answer is actions.ErrNoPlan.
func (a *Action) Plan(ctx context.Context, req actions.Request) (actions.Plan, error) {
	ctx, end, err := a.begin(ctx)
	if err != nil {
		return actions.Plan{}, err
	}
	defer end()
	w, err := parseWith(req.With, &a.settings)
	if err != nil {
		return actions.Plan{}, err
	}
	if w.PlanWorkflow == "" {
		return actions.Plan{}, actions.ErrNoPlan
	}
	if until, ok := a.pause.Until(a.now()); ok {
		return actions.Plan{}, errors.New("plan skipped: " + rateLimitMessage(until))
	}
	// Request.State and Checkpoint belong to reconciles: the call does not carry them.
	c := &call{a: a, req: actions.Request{Resource: req.Resource, With: req.With, Secrets: req.Secrets}, with: w, op: opPlan,
		log: a.logger.With("operation", opPlan, "kind", req.Resource.Kind, "namespace", req.Resource.Namespace, "name", req.Resource.Name)}
	p, err := c.plan(ctx)
	if until, ok := githubapi.RateLimitUntil(err, a.now()); ok {
		a.pause.Extend(until)
		c.log.WarnContext(ctx, "github rate limit during a plan", "until", until)
		return actions.Plan{}, errors.New("plan cut short: " + rateLimitMessage(until))
	}
	if err != nil {
		return actions.Plan{}, a.secrets.scrubErr(actions.ScrubError(err, req.Scrub()))
	}
	scrub := req.Scrub()
	p.Summary, p.Text = scrub(a.secrets.scrub(p.Summary)), scrub(a.secrets.scrub(p.Text))
	return p, nil
}

// plan dispatches the plan workflow and reads its run's plan.
func (c *call) plan(ctx context.Context) (actions.Plan, error) {
	a := c.a
	wf := c.workflow()
	corr := newCorrelation()
	inputs, err := c.inputs(corr)
	if err != nil {
		return actions.Plan{}, err
	}
	since := a.now()
	details, err := a.dispatch(ctx, wf, c.ref(), inputs)
	if err != nil {
		return actions.Plan{}, fmt.Errorf("dispatch plan workflow %s: %w", wf, err)
	}
	var runID int64
	var runURL string
	if details != nil {
		runID, runURL = details.WorkflowRunID, details.HTMLURL
	}
	c.log.DebugContext(ctx, "plan workflow dispatched", "workflow", wf, "trueup_id", corr, "run_id", runID)
	run, runID, runURL, err := a.awaitRun(ctx, wf, corr, since, runID, runURL)
	if err != nil {
		if runID != 0 && ctx.Err() != nil {
			// Best effort: a plan nobody waits for should not hold a runner.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
			_ = a.cancelRun(cctx, runID)
			cancel()
		}
		return actions.Plan{}, fmt.Errorf("plan workflow %s (trueup_id %s): %w", wf, corr, err)
	}
	if !succeeded(run.GetConclusion()) {
		msg, err := a.failureMessage(ctx, run, runURL, "plan run")
		if err != nil {
			return actions.Plan{}, err
		}
		return actions.Plan{}, errors.New(msg)
	}
	arts, err := a.listArtifacts(ctx, runID)
	if err != nil {
		return actions.Plan{}, err
	}
	out, found, err := a.readOutputsArtifact(ctx, runID, arts)
	if err != nil {
		return actions.Plan{}, err
	}
	if !found {
		return actions.Plan{}, fmt.Errorf("plan run %d succeeded but published no %s artifact: %s", runID, outputsArtifact, runURL)
	}
	// The hash is published as it is: it must hold none of the secrets Summary and Text are
	// scrubbed of.
	scrub := c.req.Scrub()
	p, err := actions.PlanFromOutputs(out, func(s string) string { return scrub(a.secrets.scrub(s)) })
	if err != nil {
		return actions.Plan{}, fmt.Errorf("artifact %s of plan run %d: %w", outputsArtifact, runID, err)
	}
	c.log.InfoContext(ctx, "plan run succeeded", "run_id", runID, "changes", p.Changes)
	return p, nil
}

var _ actions.Planner = (*Action)(nil)
