package ghactions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/go-github/v60/github"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/forge/githubapi"
)

// Finding runs that GitHub did not name in the dispatch answer.
const (
	// adoptGrace is how long a dispatch's run may take to appear in the run list. An
	// unconfirmed dispatch (a replica died between dispatch and record) without a run after
	// this long is dispatched again.
	adoptGrace = 2 * time.Minute
	// createdSkew widens the created>= filter for clock differences with GitHub.
	createdSkew = time.Minute
	// maxFindDelay bounds the requeue delay while waiting for a run to appear.
	maxFindDelay = 3 * time.Second
)

// runFailedError is a run that concluded without success. It is an ordinary (retried)
// error: the next call dispatches again.
type runFailedError struct{ msg string }

func (e *runFailedError) Error() string { return e.msg }

func (a *Action) findDelay() time.Duration { return min(a.pollInterval, maxFindDelay) }

// fromState answers the calls that need nothing from GitHub: the generation already
// succeeded (and no drift was found since), the delete already ran, or nothing was ever
// dispatched to delete. They are answered even while rate limited.
func (c *call) fromState() (actions.Result, bool) {
	st, r := c.st, c.req.Resource
	switch {
	case c.op == opReconcile && st.Op == opReconcile && st.Generation == r.Generation &&
		st.Phase == phaseCompleted && !c.a.hasDrift(r):
		return c.done(), true
	case c.op == opDelete && st.Phase == "":
		return actions.Result{Done: true, Message: "no workflow was dispatched for this resource; nothing to delete"}, true
	case c.op == opDelete && st.Op == opDelete && st.Phase == phaseCompleted:
		return c.done(), true
	}
	return actions.Result{}, false
}

// reconcile moves the resource's generation toward a successful run.
func (c *call) reconcile(ctx context.Context) (actions.Result, error) {
	st, r := c.st, c.req.Resource
	if st.Op == opReconcile && st.Generation == r.Generation {
		switch st.Phase {
		case phaseCompleted:
			if c.a.takeDrift(r) {
				c.log.InfoContext(ctx, "check workflow reported drift; dispatching again", "previous_run_id", st.RunID)
				return c.dispatch(ctx, 0)
			}
			return c.done(), nil
		case phaseFailed:
			c.a.takeFailed(st.RunID)
			return c.dispatch(ctx, 0)
		case phaseDispatching, phaseDispatched, phaseRunning:
			return c.advance(ctx)
		}
	}
	// A new generation (or nothing yet): whatever still runs for an older one goes.
	old, err := c.supersede(ctx)
	if err != nil {
		return actions.Result{}, err
	}
	return c.dispatch(ctx, old)
}

// delete runs the delete workflow to completion; fromState has answered the cases that
// need no run.
func (c *call) delete(ctx context.Context) (actions.Result, error) {
	st := c.st
	switch {
	case st.Op == opDelete && st.Phase == phaseFailed:
		c.a.takeFailed(st.RunID)
		return c.dispatch(ctx, 0)
	case st.Op == opDelete && st.inFlight():
		return c.advance(ctx)
	}
	old, err := c.supersede(ctx)
	if err != nil {
		return actions.Result{}, err
	}
	return c.dispatch(ctx, old)
}

// workflow is the workflow this call dispatches.
func (c *call) workflow() string {
	switch {
	case c.op == opDelete && c.with.DeleteWorkflow != "":
		return c.with.DeleteWorkflow
	case c.op == opCheck:
		return c.with.CheckWorkflow
	case c.op == opPlan:
		return c.with.PlanWorkflow
	}
	return c.with.Workflow
}

func (c *call) ref() string {
	if c.with.Ref != "" {
		return c.with.Ref
	}
	return c.a.ref
}

// inputs builds the dispatch inputs and checks GitHub's limits, which no retry can fix.
func (c *call) inputs(correlation string) (map[string]string, error) {
	r := c.req.Resource
	spec := "{}"
	if len(r.Spec) > 0 && string(r.Spec) != "null" {
		var buf bytes.Buffer
		if err := json.Compact(&buf, r.Spec); err != nil {
			return nil, actions.Terminalf("spec is not valid JSON: %w", err)
		}
		spec = buf.String()
	}
	in := make(map[string]string, len(c.with.Inputs)+len(reservedInputs))
	for k, v := range c.with.Inputs {
		in[k] = v
	}
	in[inputName] = r.Name
	in[inputNamespace] = r.Namespace
	in[inputGeneration] = strconv.FormatInt(r.Generation, 10)
	in[inputRevision] = r.Revision
	in[inputSpec] = spec
	in[inputOperation] = c.op
	in[inputTrueupID] = correlation
	if len(in) > maxInputs {
		return nil, actions.Terminalf("workflow %s: %d inputs; GitHub accepts at most %d", c.workflow(), len(in), maxInputs)
	}
	b, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encode inputs: %w", err)
	}
	if n := utf8.RuneCount(b); n > maxInputChars {
		return nil, actions.Terminalf("workflow %s: inputs are %d characters (the spec alone %d); GitHub accepts at most %d: make the spec smaller",
			c.workflow(), n, utf8.RuneCountInString(spec), maxInputChars)
	}
	return in, nil
}

// dispatch records the intent, dispatches the workflow and takes a first look at the run.
// supersedes names the run of an older generation it replaces (0: none).
func (c *call) dispatch(ctx context.Context, supersedes int64) (actions.Result, error) {
	a := c.a
	wf := c.workflow()
	corr := newCorrelation()
	inputs, err := c.inputs(corr)
	if err != nil {
		return actions.Result{}, err
	}
	prev := c.st
	intent := state{
		Op: c.op, Phase: phaseDispatching, Generation: c.req.Resource.Generation, Workflow: wf,
		Correlation: corr, DispatchedAt: a.now().UTC(), Supersedes: supersedes,
	}
	// Exactly once across crashes: the intent is durable before GitHub hears of it.
	if err := c.req.SaveCheckpoint(ctx, intent.encode()); err != nil {
		return actions.Result{}, fmt.Errorf("record dispatch intent (workflow %s not dispatched): %w", wf, err)
	}
	c.st = intent
	details, err := a.dispatch(ctx, wf, c.ref(), inputs)
	if err != nil {
		if dispatchRefused(err) {
			c.st = prev
			if !isRateLimit(err) {
				// Withdraw the intent so that the retry dispatches at once rather than
				// waiting for a run that cannot appear.
				if cerr := c.req.SaveCheckpoint(ctx, prev.encode()); cerr != nil {
					c.log.DebugContext(ctx, "withdraw dispatch intent", "err", cerr)
				}
			}
		}
		return actions.Result{}, fmt.Errorf("dispatch workflow %s: %w", wf, err)
	}
	if details == nil {
		c.log.InfoContext(ctx, "workflow dispatched; run to be found by trueup_id", "workflow", wf, "trueup_id", corr, "supersedes", supersedes)
		c.st.Phase = phaseDispatched
		return c.waitForRun(), nil
	}
	c.log.InfoContext(ctx, "workflow dispatched", "workflow", wf, "trueup_id", corr, "run_id", details.WorkflowRunID, "supersedes", supersedes)
	c.st.Phase, c.st.RunID, c.st.RunURL = phaseRunning, details.WorkflowRunID, details.HTMLURL
	// A first look at once: a run that cannot start (startup_failure) or finishes at once
	// is reported now, and the answer's ETag makes the following polls free.
	res, err := c.poll(ctx)
	var failed *runFailedError
	if err != nil && ctx.Err() == nil && !errors.As(err, &failed) && !isRateLimit(err) && !actions.IsTerminal(err) {
		c.log.WarnContext(ctx, "first status check of the dispatched run failed", "run_id", c.st.RunID, "err", a.secrets.scrub(err.Error()))
		return c.inProgress(""), nil
	}
	return res, err
}

// dispatchRefused reports whether GitHub (or the token exchange) refused the dispatch, so
// that it certainly did not happen. Network errors and 5xx answers are ambiguous.
func dispatchRefused(err error) bool {
	if isRateLimit(err) {
		return true
	}
	var te *githubapi.TokenError
	if errors.As(err, &te) {
		return true
	}
	var er *github.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode >= 400 && er.Response.StatusCode < 500
}

// advance continues a run handle from an earlier call.
func (c *call) advance(ctx context.Context) (actions.Result, error) {
	if c.st.Phase == phaseRunning {
		if c.a.takeFailed(c.st.RunID) {
			// The failure was reported already; this is its retry.
			return c.dispatch(ctx, 0)
		}
		return c.poll(ctx)
	}
	a := c.a
	run, err := a.findRun(ctx, c.st.Workflow, c.st.Correlation, c.st.DispatchedAt.Add(-createdSkew))
	if err != nil {
		return actions.Result{}, err
	}
	if run != nil {
		adopted := c.st.Phase == phaseDispatching
		c.st.Phase, c.st.RunID, c.st.RunURL = phaseRunning, run.GetID(), run.GetHTMLURL()
		if adopted {
			c.log.InfoContext(ctx, "adopted the run of an unconfirmed dispatch", "trueup_id", c.st.Correlation, "run_id", c.st.RunID)
		} else {
			c.log.InfoContext(ctx, "found the dispatched run", "trueup_id", c.st.Correlation, "run_id", c.st.RunID)
		}
		return c.onRun(ctx, run, "")
	}
	waited := a.now().Sub(c.st.DispatchedAt)
	if waited < adoptGrace {
		return c.waitForRun(), nil
	}
	if c.st.Phase == phaseDispatching {
		c.log.WarnContext(ctx, "no run appeared for an unconfirmed dispatch; dispatching again",
			"trueup_id", c.st.Correlation, "waited", waited.Round(time.Second))
		return c.dispatch(ctx, c.st.Supersedes)
	}
	return actions.Result{}, fmt.Errorf("workflow %s was dispatched %s ago but no run's name carries its trueup_id %s: "+
		"the workflow must set run-name: ${{ inputs.trueup_id }} (or a run-name containing it)",
		c.st.Workflow, waited.Round(time.Second), c.st.Correlation)
}

// poll fetches the run conditionally and acts on it.
func (c *call) poll(ctx context.Context) (actions.Result, error) {
	run, etag, notModified, err := c.a.getRun(ctx, c.st.RunID, c.st.ETag)
	if err != nil {
		return actions.Result{}, err
	}
	if notModified {
		c.log.DebugContext(ctx, "workflow run unchanged", "run_id", c.st.RunID)
		return c.inProgress(""), nil
	}
	return c.onRun(ctx, run, etag)
}

// onRun acts on a fresh view of the run.
func (c *call) onRun(ctx context.Context, run *github.WorkflowRun, etag string) (actions.Result, error) {
	if c.st.RunURL == "" {
		c.st.RunURL = run.GetHTMLURL()
	}
	if run.GetStatus() != "completed" {
		// Only an unfinished run's ETag is kept, so that a 304 means "still unfinished".
		c.st.ETag = etag
		c.log.DebugContext(ctx, "workflow run in progress", "run_id", c.st.RunID, "status", run.GetStatus())
		return c.inProgress(run.GetStatus()), nil
	}
	conclusion := run.GetConclusion()
	if !succeeded(conclusion) {
		return actions.Result{}, c.failed(ctx, run)
	}
	out, err := c.a.collectOutputs(ctx, run, c.st.RunURL, c.st.Supersedes)
	if err != nil {
		return actions.Result{}, err
	}
	c.st.Phase, c.st.Conclusion, c.st.ETag = phaseCompleted, conclusion, ""
	c.st.Outputs = json.RawMessage(c.a.secrets.scrub(string(out)))
	c.log.InfoContext(ctx, "workflow run succeeded", "run_id", c.st.RunID, "conclusion", conclusion)
	return c.done(), nil
}

// succeeded maps a run conclusion: success, and the runs GitHub finished without running
// anything to judge (neutral, skipped).
func succeeded(conclusion string) bool {
	switch conclusion {
	case "success", "neutral", "skipped":
		return true
	}
	return false
}

// failed records a failed run (the next call dispatches again) and explains it.
func (c *call) failed(ctx context.Context, run *github.WorkflowRun) error {
	msg, err := c.a.failureMessage(ctx, run, c.st.RunURL, "workflow run")
	if err != nil {
		return err // rate limited: the run stays the handle; the next call looks again
	}
	c.st.Phase, c.st.Conclusion, c.st.ETag = phaseFailed, run.GetConclusion(), ""
	// The error answer does not carry State; the checkpoint does.
	if cerr := c.req.SaveCheckpoint(ctx, c.st.encode()); cerr != nil {
		c.log.DebugContext(ctx, "record failed run", "err", cerr)
	}
	c.a.noteFailed(c.st.RunID)
	c.log.WarnContext(ctx, "workflow run failed", "run_id", c.st.RunID, "conclusion", run.GetConclusion())
	return &runFailedError{msg: msg}
}

// failureMessage names the run, its conclusion, its failing jobs and its URL.
func (a *Action) failureMessage(ctx context.Context, run *github.WorkflowRun, runURL, what string) (string, error) {
	msg := fmt.Sprintf("%s %d concluded %s", what, run.GetID(), run.GetConclusion())
	jobs, err := a.listJobs(ctx, run.GetID())
	switch {
	case isRateLimit(err):
		return "", err
	case err != nil:
		msg += " (jobs unavailable: " + err.Error() + ")"
	default:
		var failing []string
		for _, j := range jobs {
			switch j.GetConclusion() {
			case "failure", "cancelled", "timed_out", "action_required", "startup_failure":
				failing = append(failing, j.GetName())
			}
		}
		if len(failing) > 0 {
			msg += "; failed jobs: " + strings.Join(failing, ", ")
		}
	}
	if runURL == "" {
		runURL = run.GetHTMLURL()
	}
	return msg + ": " + runURL, nil
}

// supersede cancels the run of an earlier generation or operation that may still be going,
// and returns its id (0: nothing to cancel).
func (c *call) supersede(ctx context.Context) (int64, error) {
	st := c.st
	if !st.inFlight() {
		return 0, nil
	}
	id := st.RunID
	if id == 0 {
		run, err := c.a.findRun(ctx, st.Workflow, st.Correlation, st.DispatchedAt.Add(-createdSkew))
		if err != nil {
			return 0, err
		}
		if run == nil {
			c.log.WarnContext(ctx, "superseded dispatch has no run yet; it cannot be cancelled", "trueup_id", st.Correlation)
			return 0, nil
		}
		if run.GetStatus() == "completed" {
			return 0, nil
		}
		id = run.GetID()
	}
	if err := c.a.cancelRun(ctx, id); err != nil {
		return 0, err
	}
	c.log.InfoContext(ctx, "cancelled superseded workflow run", "run_id", id, "superseded_generation", st.Generation, "superseded_operation", st.Op)
	return id, nil
}

func (c *call) inProgress(status string) actions.Result {
	if status == "" {
		status = "in progress"
	}
	msg := fmt.Sprintf("workflow run %d %s: %s", c.st.RunID, strings.ReplaceAll(status, "_", " "), c.st.RunURL)
	if c.st.Supersedes != 0 {
		msg += fmt.Sprintf(" (supersedes run %d)", c.st.Supersedes)
	}
	return actions.Result{RequeueAfter: c.a.pollInterval, State: c.st.encode(), Message: msg}
}

func (c *call) waitForRun() actions.Result {
	msg := fmt.Sprintf("workflow %s dispatched (trueup_id %s); waiting for its run to appear", c.st.Workflow, c.st.Correlation)
	if c.st.Supersedes != 0 {
		msg += fmt.Sprintf(" (supersedes run %d)", c.st.Supersedes)
	}
	return actions.Result{RequeueAfter: c.a.findDelay(), State: c.st.encode(), Message: msg}
}

func (c *call) done() actions.Result {
	var outputs map[string]any
	if len(c.st.Outputs) > 0 {
		// Decoded from the stored JSON every time, so that a repeated call answers
		// exactly the same outputs.
		if m, err := decodeObject(c.st.Outputs, "outputs"); err == nil {
			outputs = m
		}
	}
	return actions.Result{
		Done:    true,
		State:   c.st.encode(),
		Outputs: outputs,
		Message: fmt.Sprintf("workflow run %d %s: %s", c.st.RunID, c.st.Conclusion, c.st.RunURL),
	}
}
