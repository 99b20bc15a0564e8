package gitlab

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/forge/gitlabapi"
)

// cancelTimeout bounds the cancel of a plan pipeline nobody waits for any more.
const cancelTimeout = 10 * time.Second

// RunsPullRequestCode: the plans run the repository's CI (with.planJob) on the pull request's spec,
// asked for pull requests from forks only with preview.forkPlans.
func (a *Action) RunsPullRequestCode() bool { return true }

var _ actions.PullRequestCodePlanner = (*Action)(nil)

// Plan triggers a pipeline with TRUEUP_OPERATION=plan and the resource's spec, and waits
// within the call, until ctx ends (the preview runner's plan timeout), for it to finish; the
// plan is with.planJob's artifact trueup-outputs.json: {"changes": bool, "summary": "…",
// "plan": "…"}. A pipeline still running at the deadline is cancelled. A plan has no handle
// to keep between calls, so it neither reads nor writes State or checkpoints; its own
// TRUEUP_ID keeps it from being adopted by a reconcile, which looks only for its own: it runs
// alongside the resource's reconciles (not actions.PlanArbitrated). Without planJob the answer is actions.ErrNoPlan.
func (a *Action) Plan(ctx context.Context, req actions.Request) (actions.Plan, error) {
	ctx, end, err := a.begin(ctx)
	if err != nil {
		return actions.Plan{}, err
	}
	defer end()
	r := req.Resource
	// Request.State and Checkpoint belong to reconciles: the call does not carry them.
	c := &call{a: a, op: opPlan, req: actions.Request{Resource: r, With: req.With, Secrets: req.Secrets},
		logger: a.logger.With("operation", opPlan, "kind", r.Kind, "namespace", r.Namespace, "name", r.Name)}
	if c.w, err = parseWith(req.With, &a.settings); err != nil {
		return actions.Plan{}, err
	}
	if c.w.PlanJob == "" {
		return actions.Plan{}, actions.ErrNoPlan
	}
	c.ref = a.ref
	if c.w.Ref != "" {
		c.ref = c.w.Ref
	}
	scrub := req.Scrub()
	p, err := c.plan(ctx)
	var rl *gitlabapi.RateLimitError
	if errors.As(err, &rl) {
		return actions.Plan{}, fmt.Errorf("plan cut short: %w", rl)
	}
	if err != nil {
		return actions.Plan{}, actions.ScrubError(a.scrubErr(err), scrub)
	}
	p.Summary, p.Text = scrub(a.scrub(p.Summary)), scrub(a.scrub(p.Text))
	return p, nil
}

// plan triggers the plan pipeline, follows it and reads the plan job's artifact.
func (c *call) plan(ctx context.Context) (actions.Plan, error) {
	a := c.a
	vars, err := c.variables()
	if err != nil {
		return actions.Plan{}, err
	}
	corr := rand.Text()
	vars = append(vars, variable{Key: varID, Value: corr})
	p, err := a.trigger(ctx, c.ref, vars)
	if err != nil {
		return actions.Plan{}, fmt.Errorf("trigger plan pipeline on %s: %w", c.ref, err)
	}
	c.logger.Debug("plan pipeline triggered", "pipeline_id", p.ID, "correlation", corr)
	for {
		prog, _ := classify(p.Status)
		if prog != inProgress {
			break
		}
		if err := actions.Sleep(ctx, a.pollInterval); err != nil {
			c.cancelPlan(ctx, p.ID)
			return actions.Plan{}, fmt.Errorf("plan pipeline #%d (%s): %w", p.ID, p.WebURL, err)
		}
		next, err := a.getPipeline(ctx, p.ID)
		if err != nil {
			if ctx.Err() != nil {
				c.cancelPlan(ctx, p.ID)
			}
			return actions.Plan{}, fmt.Errorf("plan pipeline #%d: %w", p.ID, err)
		}
		if next.WebURL == "" {
			next.WebURL = p.WebURL
		}
		p = next
	}
	jobs, err := a.jobs(ctx, p.ID)
	if err != nil {
		return actions.Plan{}, fmt.Errorf("list jobs of plan pipeline #%d: %w", p.ID, err)
	}
	if prog, _ := classify(p.Status); prog != succeeded {
		return actions.Plan{}, fmt.Errorf("plan pipeline #%d %s%s: %s", p.ID, p.Status, failedJobs(jobs), p.WebURL)
	}
	var src *job
	for i := range jobs {
		if jobs[i].Name == c.w.PlanJob && (src == nil || jobs[i].ID > src.ID) {
			src = &jobs[i]
		}
	}
	if src == nil {
		return actions.Plan{}, fmt.Errorf("plan pipeline #%d has no job %q (with.planJob): %s", p.ID, c.w.PlanJob, p.WebURL)
	}
	out, err := a.artifactOutputs(ctx, *src)
	if err != nil {
		return actions.Plan{}, err
	}
	// The hash is published as it is: it must hold none of the secrets Summary and Text are
	// scrubbed of.
	scrub := c.req.Scrub()
	plan, err := actions.PlanFromOutputs(out, func(s string) string { return scrub(a.scrub(s)) })
	if err != nil {
		return actions.Plan{}, fmt.Errorf("job %s (#%d): %s: %w", src.Name, src.ID, outputsFile, err)
	}
	c.logger.Info("plan pipeline succeeded", "pipeline_id", p.ID, "changes", plan.Changes)
	return plan, nil
}

// cancelPlan asks GitLab, best effort, to cancel a plan pipeline nobody waits for any more.
func (c *call) cancelPlan(ctx context.Context, id int64) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	if _, err := c.a.cancel(cctx, id); err != nil {
		c.logger.Debug("cancel plan pipeline", "pipeline_id", id, "err", c.a.scrub(err.Error()))
	}
}

var _ actions.Planner = (*Action)(nil)
