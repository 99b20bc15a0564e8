package ghactions

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/forge/githubapi"
)

// errCheckTimeout is the cause of a check cut short by checkTimeout.
var errCheckTimeout = errors.New("check timeout")

// Observe runs the checkWorkflow (operation=check) and waits for it within the call, at
// most checkTimeout: Observation carries no State to keep a run handle in, and a check that
// a later call picks up would report drift one resync interval late, possibly on another
// replica. Success means in sync; a "failure" conclusion means drift, and the Reconcile
// that follows dispatches the workflow again even though its generation already
// succeeded. Without checkWorkflow, or while a run is in flight, the resource is in sync.
// A rate limit skips the check (in sync, with a message) rather than failing the resource.
func (a *Action) Observe(ctx context.Context, req actions.Request) (actions.Observation, error) {
	ctx, end, err := a.begin(ctx)
	if err != nil {
		return actions.Observation{}, err
	}
	defer end()
	w, err := parseWith(req.With, &a.settings)
	if err != nil {
		return actions.Observation{}, actions.Terminal(err)
	}
	if w.CheckWorkflow == "" {
		return actions.Observation{InSync: true}, nil
	}
	st, err := decodeState(req.State)
	if err != nil {
		return actions.Observation{}, actions.Terminalf("decode action state: %w", err)
	}
	if st.inFlight() {
		return actions.Observation{InSync: true, Message: "a workflow run is in flight; drift check skipped"}, nil
	}
	if until, ok := a.pause.Until(a.now()); ok {
		return actions.Observation{InSync: true, Message: "drift check skipped: " + rateLimitMessage(until)}, nil
	}
	c := &call{a: a, req: req, with: w, op: opCheck, log: a.logger.With(
		"operation", opCheck, "kind", req.Resource.Kind, "namespace", req.Resource.Namespace,
		"name", req.Resource.Name, "generation", req.Resource.Generation)}
	obs, err := c.check(ctx)
	if until, ok := githubapi.RateLimitUntil(err, a.now()); ok {
		a.pause.Extend(until)
		c.log.WarnContext(ctx, "github rate limit during the drift check", "until", until)
		return actions.Observation{InSync: true, Message: "drift check skipped: " + rateLimitMessage(until)}, nil
	}
	if err != nil {
		return actions.Observation{}, a.secrets.scrubErr(err)
	}
	obs.Message = a.secrets.scrub(obs.Message)
	return obs, nil
}

// check dispatches the check workflow and polls its run to completion.
func (c *call) check(parent context.Context) (actions.Observation, error) {
	a := c.a
	ctx, cancel := context.WithTimeoutCause(parent, a.checkTimeout, errCheckTimeout)
	defer cancel()
	wf := c.workflow()
	corr := newCorrelation()
	inputs, err := c.inputs(corr)
	if err != nil {
		return actions.Observation{}, err
	}
	since := a.now()
	details, err := a.dispatch(ctx, wf, c.ref(), inputs)
	if err != nil {
		return actions.Observation{}, fmt.Errorf("dispatch check workflow %s: %w", wf, err)
	}
	var runID int64
	var runURL string
	if details != nil {
		runID, runURL = details.WorkflowRunID, details.HTMLURL
	}
	c.log.DebugContext(ctx, "check workflow dispatched", "workflow", wf, "trueup_id", corr, "run_id", runID)
	run, runID, runURL, err := a.awaitRun(ctx, wf, corr, since, runID, runURL)
	if err != nil {
		if context.Cause(ctx) == errCheckTimeout && parent.Err() == nil {
			if runID != 0 {
				// Best effort: a check nobody waits for should not hold a runner.
				_ = a.cancelRun(parent, runID)
			}
			return actions.Observation{}, fmt.Errorf("check workflow %s (trueup_id %s): no result within %s", wf, corr, a.checkTimeout)
		}
		return actions.Observation{}, fmt.Errorf("check workflow %s: %w", wf, err)
	}
	switch conclusion := run.GetConclusion(); {
	case succeeded(conclusion):
		a.setDrift(c.req.Resource, false)
		return actions.Observation{InSync: true, Message: fmt.Sprintf("check run %d %s: %s", runID, conclusion, runURL)}, nil
	case conclusion == "failure":
		msg, err := a.failureMessage(ctx, run, runURL, "check run")
		if err != nil {
			return actions.Observation{}, err
		}
		a.setDrift(c.req.Resource, true)
		c.log.InfoContext(ctx, "check workflow reports drift", "run_id", runID)
		return actions.Observation{InSync: false, Message: "drift: " + msg}, nil
	default:
		msg, err := a.failureMessage(ctx, run, runURL, "check run")
		if err != nil {
			return actions.Observation{}, err
		}
		return actions.Observation{}, errors.New(msg)
	}
}

// awaitRun polls the run a dispatch started (found by correlation when runID is 0) until it
// completes or ctx ends; it returns the run id known so far either way, so that the caller
// can cancel a run nobody waits for any more.
func (a *Action) awaitRun(ctx context.Context, wf, corr string, since time.Time, runID int64, runURL string) (*github.WorkflowRun, int64, string, error) {
	var (
		etag string
		run  *github.WorkflowRun
	)
	for {
		var err error
		if runID == 0 {
			run, err = a.findRun(ctx, wf, corr, since.Add(-createdSkew))
			if run != nil {
				runID, runURL = run.GetID(), run.GetHTMLURL()
			}
		} else {
			var (
				fresh       *github.WorkflowRun
				newETag     string
				notModified bool
			)
			fresh, newETag, notModified, err = a.getRun(ctx, runID, etag)
			if err == nil && !notModified {
				run = fresh
				if run.GetStatus() != "completed" {
					etag = newETag
				}
			}
		}
		if err == nil && run != nil && run.GetStatus() == "completed" {
			if runURL == "" {
				runURL = run.GetHTMLURL()
			}
			return run, runID, runURL, nil
		}
		wait := a.pollInterval
		if runID == 0 {
			wait = a.findDelay()
		}
		if err == nil {
			err = actions.Sleep(ctx, wait)
		}
		if err != nil {
			return nil, runID, runURL, err
		}
	}
}
