package gitlab

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/forge/gitlabapi"
	"github.com/trueup-dev/trueup/internal/tracing"
)

// Pipeline variables trueup sets.
const (
	varOperation  = "TRUEUP_OPERATION"
	varKind       = "TRUEUP_KIND"
	varNamespace  = "TRUEUP_NAMESPACE"
	varName       = "TRUEUP_NAME"
	varGeneration = "TRUEUP_GENERATION"
	varRevision   = "TRUEUP_REVISION"
	varFallback   = "TRUEUP_FALLBACK_REVISION"
	varSpec       = "TRUEUP_SPEC"
	varID         = "TRUEUP_ID"
)

// Operations, as sent in TRUEUP_OPERATION.
const (
	opReconcile = "reconcile"
	opDelete    = "delete"
	opPlan      = "plan"
)

// keepTimeout bounds the state write of a failed call, which outlives a cancelled call.
const keepTimeout = 10 * time.Second

// adoptGrace is how long a dispatch whose pipeline cannot be found is waited for before a
// new pipeline is triggered: the trigger call of a replica that died may still be in flight.
const adoptGrace = 2 * time.Minute

// Condition reported while GitLab's rate limit pauses calls.
const (
	ConditionRateLimited = "RateLimited"
	reasonRateLimit      = "GitLabRateLimit"
	reasonRateLimitOver  = "RateLimitReset"
)

// errClosed is returned by calls made after Close.
var errClosed = fmt.Errorf("gitlab action closed: %w", context.Canceled)

// Action is a gitlab instance. It is safe for concurrent use.
type Action struct {
	settings
	logger *slog.Logger
	gl     *gitlabapi.Client
	now    func() time.Time // replaced by tests

	calls actions.Calls // calls in flight, for Close
}

// New is the actions.Factory of the gitlab kind. It checks the config without calling
// GitLab.
func New(raw json.RawMessage, env actions.Env) (actions.Action, error) {
	s, err := parseConfig(raw)
	if err != nil {
		return nil, err
	}
	logger := env.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	a := &Action{settings: s, logger: logger.With("action", env.Name, "project", s.project), now: time.Now}
	a.gl, err = gitlabapi.New(gitlabapi.Config{BaseURL: s.api, Token: s.token, Secrets: []string{s.triggerToken},
		Timeout: s.timeout, Transport: tracing.Transport(http.DefaultTransport.(*http.Transport).Clone()),
		Logger: a.logger, Now: func() time.Time { return a.now() }})
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return a, nil
}

// Secrets returns the instance's two tokens, so that the controller scrubs them from every
// plugin's messages and outputs, not only this one's: they may be written in the config as
// literals, which ${VAR} scrubbing does not know. Values shorter than minSecretLen are left
// out: scrubbing "t" everywhere would mangle every message and protect nothing.
func (a *Action) Secrets() []string {
	var out []string
	for _, v := range []string{a.triggerToken, a.token} {
		if len(v) >= minSecretLen && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// minSecretLen is the shortest token handed to the controller's scrubber.
const minSecretLen = 6

// RateLimitRemaining is the RateLimit-Remaining GitLab last reported, -1 when unknown.
func (a *Action) RateLimitRemaining() int { return int(a.gl.Remaining()) }

// scrub replaces the tokens with "***".
func (a *Action) scrub(s string) string { return a.gl.Scrub(s) }

// scrubErr removes the credentials from err's message, keeping err in the chain.
func (a *Action) scrubErr(err error) error { return actions.ScrubError(err, a.scrub) }

// Reconcile runs (or follows) a pipeline with TRUEUP_OPERATION=reconcile.
func (a *Action) Reconcile(ctx context.Context, req actions.Request) (actions.Result, error) {
	return a.run(ctx, opReconcile, req)
}

// Delete runs (or follows) a pipeline with TRUEUP_OPERATION=delete.
func (a *Action) Delete(ctx context.Context, req actions.Request) (actions.Result, error) {
	return a.run(ctx, opDelete, req)
}

// Observe reports in sync without calling GitLab: a pipeline has no cheap drift check, and a
// pipeline per resync would be anything but cheap. Pipelines run when the spec changes.
func (a *Action) Observe(context.Context, actions.Request) (actions.Observation, error) {
	return actions.Observation{InSync: true, Message: "gitlab pipelines are not checked for drift"}, nil
}

// ValidateWith checks a ResourceType's `with:` parameters.
func (a *Action) ValidateWith(raw json.RawMessage) error {
	_, err := parseWith(raw, &a.settings)
	return err
}

var _ actions.Closer = (*Action)(nil)

// Close cancels calls in flight, waits for them and drops idle connections. It is safe to
// call more than once.
func (a *Action) Close() error {
	if a.calls.Close(errClosed) {
		a.gl.CloseIdleConnections()
	}
	return nil
}

// begin registers a call, so that Close can cancel it and wait for it.
func (a *Action) begin(ctx context.Context) (context.Context, func(), error) {
	return a.calls.Begin(ctx, errClosed)
}

// Phases of the state.
const (
	phaseDispatching = "dispatching" // intent checkpointed; the trigger may or may not have happened
	phaseRunning     = "running"
	phaseSucceeded   = "succeeded"
	phaseFailed      = "failed" // the next call triggers a new pipeline
)

// state is kept by the reconciler between calls (Result.State and checkpoints).
type state struct {
	Phase       string    `json:"phase,omitempty"`
	Operation   string    `json:"operation,omitempty"`
	Generation  int64     `json:"generation,omitempty"`
	Ref         string    `json:"ref,omitempty"`
	Correlation string    `json:"correlation,omitempty"`
	TriggeredAt time.Time `json:"triggeredAt,omitzero"`
	PipelineID  int64     `json:"pipelineID,omitempty"`
	WebURL      string    `json:"webURL,omitempty"`
	// Superseded is a pipeline of an older generation (or of the other operation) that was
	// asked to cancel; no new pipeline starts before it has finished.
	Superseded *superseded `json:"superseded,omitempty"`
	// RateLimited records that the RateLimited condition was set, so that the next
	// successful call clears it.
	RateLimited bool `json:"rateLimited,omitempty"`
}

type superseded struct {
	PipelineID      int64  `json:"pipelineID"`
	WebURL          string `json:"webURL,omitempty"`
	CancelRequested bool   `json:"cancelRequested,omitempty"`
}

func (s state) encode() json.RawMessage {
	b, _ := json.Marshal(s) // cannot fail: plain fields
	return b
}

// call is one Reconcile or Delete.
type call struct {
	a       *Action
	op      string
	req     actions.Request
	w       with
	ref     string
	st      state
	durable string // the state as last saved (req.State, or the last checkpoint)
	logger  *slog.Logger
}

func (a *Action) run(ctx context.Context, op string, req actions.Request) (actions.Result, error) {
	ctx, end, err := a.begin(ctx)
	if err != nil {
		return actions.Result{}, err
	}
	defer end()

	r := req.Resource
	c := &call{a: a, op: op, req: req, durable: string(req.State),
		logger: a.logger.With("operation", op, "kind", r.Kind, "namespace", r.Namespace, "name", r.Name, "generation", r.Generation)}
	if c.w, err = parseWith(req.With, &a.settings); err != nil {
		// `with:` comes from Git: only a new commit can fix it.
		return actions.Result{}, actions.Terminal(err)
	}
	c.ref = a.ref
	if c.w.Ref != "" {
		c.ref = c.w.Ref
	}
	if len(req.State) > 0 && string(req.State) != "null" {
		if err := json.Unmarshal(req.State, &c.st); err != nil {
			// A state this version cannot read: start afresh rather than never again.
			c.logger.WarnContext(ctx, "ignoring unreadable action state", "err", err)
			c.st = state{}
		}
	}

	res, err := c.step(ctx)
	var rl *gitlabapi.RateLimitError
	if errors.As(err, &rl) {
		return c.rateLimited(ctx, rl), nil
	}
	if err != nil {
		c.keep(ctx)
		return actions.Result{}, a.scrubErr(err)
	}
	if c.st.RateLimited {
		c.st.RateLimited = false
		res.Conditions = append(res.Conditions, actions.Condition{Type: ConditionRateLimited, Status: "False",
			Reason: reasonRateLimitOver, Message: "GitLab accepts calls again"})
	}
	res.State = c.st.encode()
	res.Message = a.scrub(res.Message)
	return res, nil
}

// current reports whether the state's work is for this call's operation and generation.
func (c *call) current() bool {
	return c.st.Operation == c.op && c.st.Generation == c.req.Resource.Generation
}

// step moves the resource's pipelines one step on.
func (c *call) step(ctx context.Context) (actions.Result, error) {
	st := &c.st
	// A dispatch whose outcome is unknown (the replica died, or the trigger call failed in
	// a way that does not say whether GitLab created the pipeline): find its pipeline.
	if st.Phase == phaseDispatching {
		p, err := c.a.findByCorrelation(ctx, st.Ref, st.Correlation, st.TriggeredAt)
		if err != nil {
			return actions.Result{}, fmt.Errorf("look for the pipeline of dispatch %s: %w", st.Correlation, err)
		}
		waited := c.a.now().Sub(st.TriggeredAt)
		switch {
		case p != nil:
			c.logger.InfoContext(ctx, "adopted pipeline of an interrupted dispatch", "pipeline_id", p.ID, "correlation", st.Correlation)
			st.Phase, st.PipelineID, st.WebURL = phaseRunning, p.ID, p.WebURL
			if c.current() {
				return c.settle(ctx, *p)
			}
		case c.current() && waited < adoptGrace:
			c.logger.DebugContext(ctx, "dispatched pipeline not found yet", "correlation", st.Correlation)
			return c.inProgress(min(c.a.pollInterval, adoptGrace-waited),
				fmt.Sprintf("waiting for the pipeline of dispatch %s to appear", st.Correlation)), nil
		default:
			c.logger.InfoContext(ctx, "no pipeline found for an interrupted dispatch; triggering anew", "correlation", st.Correlation)
			*st = state{RateLimited: st.RateLimited, Superseded: st.Superseded}
		}
	}

	// A pipeline of another generation or operation that may still run is cancelled, and
	// waited for: two pipelines changing the same infrastructure at once is what this
	// controller exists to prevent.
	if st.Phase == phaseRunning && !c.current() {
		st.Superseded = &superseded{PipelineID: st.PipelineID, WebURL: st.WebURL}
		*st = state{RateLimited: st.RateLimited, Superseded: st.Superseded}
	}
	if st.Superseded != nil {
		done, err := c.awaitSuperseded(ctx)
		if err != nil {
			return actions.Result{}, err
		}
		if !done {
			return c.inProgress(c.a.pollInterval, fmt.Sprintf("waiting for superseded pipeline #%d to be cancelled: %s",
				st.Superseded.PipelineID, st.Superseded.WebURL)), nil
		}
		st.Superseded = nil
	}

	// This generation's pipeline: follow it (or read it again, once succeeded).
	if st.PipelineID != 0 && c.current() && (st.Phase == phaseRunning || st.Phase == phaseSucceeded) {
		p, err := c.a.getPipeline(ctx, st.PipelineID)
		switch {
		case gitlabapi.IsStatus(err, http.StatusNotFound) && st.Phase == phaseSucceeded:
			// Expired or deleted since: its success stands.
			return actions.Result{Done: true, Outputs: c.baseOutputs(), Message: fmt.Sprintf("pipeline #%d succeeded (no longer in GitLab)", st.PipelineID)}, nil
		case gitlabapi.IsStatus(err, http.StatusNotFound):
			st.Phase = phaseFailed
			return actions.Result{}, fmt.Errorf("pipeline #%d no longer exists: %w", st.PipelineID, err)
		case err != nil:
			return actions.Result{}, err
		}
		return c.settle(ctx, p)
	}

	// Nothing in flight for this generation: a first call, a finished pipeline of another
	// generation or operation, or a failed one to run again.
	return c.dispatch(ctx)
}

// awaitSuperseded cancels the superseded pipeline once and reports whether it has finished.
func (c *call) awaitSuperseded(ctx context.Context) (bool, error) {
	sp := c.st.Superseded
	p, err := c.a.getPipeline(ctx, sp.PipelineID)
	switch {
	case gitlabapi.IsStatus(err, http.StatusNotFound):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("read superseded pipeline #%d: %w", sp.PipelineID, err)
	case ended(p.Status):
		c.logger.InfoContext(ctx, "superseded pipeline finished", "pipeline_id", p.ID, "status", p.Status)
		return true, nil
	case sp.CancelRequested:
		c.logger.DebugContext(ctx, "superseded pipeline still cancelling", "pipeline_id", p.ID, "status", p.Status)
		return finished(p.Status), nil
	}
	p, err = c.a.cancel(ctx, sp.PipelineID)
	if err != nil {
		return false, fmt.Errorf("cancel superseded pipeline #%d: %w", sp.PipelineID, err)
	}
	sp.CancelRequested = true
	c.logger.InfoContext(ctx, "cancelling superseded pipeline", "pipeline_id", p.ID, "status", p.Status)
	return finished(p.Status), nil
}

// dispatch records the intent, then triggers a pipeline.
func (c *call) dispatch(ctx context.Context) (actions.Result, error) {
	// Paused by a rate limit: do not even record an intent.
	if until, ok := c.a.gl.Limited(); ok {
		return actions.Result{}, &gitlabapi.RateLimitError{Until: until}
	}
	vars, err := c.variables()
	if err != nil {
		return actions.Result{}, err
	}
	prev := c.st
	c.st = state{Phase: phaseDispatching, Operation: c.op, Generation: c.req.Resource.Generation, Ref: c.ref,
		Correlation: rand.Text(), TriggeredAt: c.a.now().UTC(), RateLimited: prev.RateLimited}
	vars = append(vars, variable{Key: varID, Value: c.st.Correlation})
	if err := c.checkpoint(ctx); err != nil {
		c.st = prev
		return actions.Result{}, fmt.Errorf("checkpoint before triggering a pipeline (not triggered): %w", err)
	}
	p, err := c.a.trigger(ctx, c.ref, vars)
	if err != nil {
		var ae *gitlabapi.APIError
		var rl *gitlabapi.RateLimitError
		if errors.As(err, &ae) && ae.Status < 500 || errors.As(err, &rl) {
			// GitLab refused: no pipeline exists, nothing to adopt.
			c.st = prev
		}
		return actions.Result{}, fmt.Errorf("trigger pipeline on %s: %w", c.ref, err)
	}
	c.st.Phase, c.st.PipelineID, c.st.WebURL = phaseRunning, p.ID, p.WebURL
	c.logger.InfoContext(ctx, "pipeline triggered", "pipeline_id", p.ID, "web_url", p.WebURL, "correlation", c.st.Correlation)
	return c.settle(ctx, p)
}

// settle turns the status of this generation's pipeline into a result.
func (c *call) settle(ctx context.Context, p pipeline) (actions.Result, error) {
	st := &c.st
	if p.WebURL != "" {
		st.WebURL = p.WebURL
	}
	prog, known := classify(p.Status)
	if !known {
		c.logger.WarnContext(ctx, "unknown pipeline status; still polling", "pipeline_id", p.ID, "status", p.Status)
	}
	switch prog {
	case inProgress:
		st.Phase = phaseRunning
		c.logger.DebugContext(ctx, "pipeline in progress", "pipeline_id", p.ID, "status", p.Status)
		return c.inProgress(c.a.pollInterval, fmt.Sprintf("pipeline #%d %s: %s", p.ID, p.Status, st.WebURL)), nil
	case succeeded:
		res := actions.Result{Done: true, Message: fmt.Sprintf("pipeline #%d succeeded: %s", p.ID, st.WebURL)}
		if c.op == opReconcile {
			out, err := c.outputs(ctx, p)
			if err != nil {
				return actions.Result{}, err
			}
			res.Outputs = out
		}
		if st.Phase != phaseSucceeded {
			c.logger.InfoContext(ctx, "pipeline succeeded", "pipeline_id", p.ID)
		}
		st.Phase = phaseSucceeded
		return res, nil
	default:
		st.Phase = phaseFailed
		msg := fmt.Sprintf("pipeline #%d %s", p.ID, p.Status)
		if jobs, err := c.a.jobs(ctx, p.ID); err == nil {
			msg += failedJobs(jobs)
		} else {
			c.logger.DebugContext(ctx, "could not list jobs of a failed pipeline", "pipeline_id", p.ID, "err", c.a.scrub(err.Error()))
		}
		c.logger.WarnContext(ctx, "pipeline did not succeed", "pipeline_id", p.ID, "status", p.Status)
		return actions.Result{}, fmt.Errorf("%s: %s", msg, st.WebURL)
	}
}

// failedJobs names the jobs that failed the pipeline (allow_failure excepted), as
// " (failed jobs: a, b)", or "" when there are none.
func failedJobs(jobs []job) string {
	var names []string
	for _, j := range jobs {
		if j.Status == "failed" && !j.AllowFailure {
			names = append(names, j.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return " (failed jobs: " + strings.Join(names, ", ") + ")"
}

// baseOutputs are the outputs known without calling GitLab.
func (c *call) baseOutputs() map[string]any {
	return map[string]any{"pipelineID": c.st.PipelineID, "webURL": c.st.WebURL}
}

// jobOutput is one entry of the jobs output.
type jobOutput struct {
	Name   string `json:"name"`
	Stage  string `json:"stage"`
	Status string `json:"status"`
}

// outputs are the pipeline's id, URL and jobs, plus the outputsJob's artifact when set.
func (c *call) outputs(ctx context.Context, p pipeline) (map[string]any, error) {
	jobs, err := c.a.jobs(ctx, p.ID)
	if err != nil {
		return nil, fmt.Errorf("list jobs of pipeline #%d: %w", p.ID, err)
	}
	out := map[string]any{}
	if c.w.OutputsJob != "" {
		var src *job
		for i := range jobs {
			if jobs[i].Name == c.w.OutputsJob && (src == nil || jobs[i].ID > src.ID) {
				src = &jobs[i]
			}
		}
		if src == nil {
			return nil, fmt.Errorf("pipeline #%d has no job %q (with.outputsJob)", p.ID, c.w.OutputsJob)
		}
		extra, err := c.a.artifactOutputs(ctx, *src)
		if err != nil {
			return nil, err
		}
		for k, v := range extra {
			out[k] = v
		}
	}
	list := make([]jobOutput, len(jobs))
	for i, j := range jobs {
		list[i] = jobOutput{Name: j.Name, Stage: j.Stage, Status: j.Status}
	}
	// The pipeline's own keys win over the artifact's.
	out["pipelineID"], out["webURL"], out["jobs"] = p.ID, c.st.WebURL, list
	return out, nil
}

// variables are the pipeline variables of this call, TRUEUP_ID excepted.
func (c *call) variables() ([]variable, error) {
	r := c.req.Resource
	spec := "{}"
	if len(r.Spec) > 0 && string(r.Spec) != "null" {
		var b bytes.Buffer
		if err := json.Compact(&b, r.Spec); err != nil {
			return nil, actions.Terminalf("spec is not valid JSON")
		}
		spec = b.String()
	}
	vars := make([]variable, 0, len(c.w.Variables)+8)
	for k, v := range c.w.Variables {
		vars = append(vars, variable{Key: k, Value: string(v)})
	}
	if r.FallbackRevision != "" {
		vars = append(vars, variable{Key: varFallback, Value: r.FallbackRevision})
	}
	return append(vars,
		variable{Key: varOperation, Value: c.op},
		variable{Key: varKind, Value: r.Kind},
		variable{Key: varNamespace, Value: r.Namespace},
		variable{Key: varName, Value: r.Name},
		variable{Key: varGeneration, Value: strconv.FormatInt(r.Generation, 10)},
		variable{Key: varRevision, Value: r.Revision},
		variable{Key: varSpec, Value: spec},
	), nil
}

func (c *call) inProgress(after time.Duration, msg string) actions.Result {
	return actions.Result{Done: false, RequeueAfter: after, Message: msg}
}

// rateLimited is the result of a call paused by GitLab's rate limit: not a failure, a
// requeue at the reset time, spread a little so that waiting resources do not all return at
// the same instant.
func (c *call) rateLimited(ctx context.Context, rl *gitlabapi.RateLimitError) actions.Result {
	wait := max(rl.Until.Sub(c.a.now()), 0)
	wait += jitter(wait/10 + time.Second)
	c.st.RateLimited = true
	if !rl.Sent {
		c.logger.DebugContext(ctx, "call paused by the gitlab rate limit", "until", rl.Until.UTC().Format(time.RFC3339))
	}
	msg := "GitLab rate limit reached; next call after " + rl.Until.UTC().Format(time.RFC3339)
	return actions.Result{
		Done:         false,
		RequeueAfter: wait,
		State:        c.st.encode(),
		Message:      msg,
		Conditions:   []actions.Condition{{Type: ConditionRateLimited, Status: "True", Reason: reasonRateLimit, Message: msg}},
	}
}

// checkpoint saves the state durably before a side effect.
func (c *call) checkpoint(ctx context.Context) error {
	b := c.st.encode()
	if err := c.req.SaveCheckpoint(ctx, b); err != nil {
		return err
	}
	c.durable = string(b)
	return nil
}

// keep saves what a failing call learnt (a pipeline id, a failure to retry, a refused
// dispatch): on error the reconciler keeps the last saved state, not Result.State.
func (c *call) keep(ctx context.Context) {
	if string(c.st.encode()) == c.durable {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keepTimeout)
	defer cancel()
	if err := c.checkpoint(ctx); err != nil {
		c.logger.WarnContext(ctx, "could not save action state after a failed call", "err", err)
	}
}

// jitter is a random duration in [0, d).
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return mathrand.N(d)
}

var (
	_ actions.Action        = (*Action)(nil)
	_ actions.Observer      = (*Action)(nil)
	_ actions.WithValidator = (*Action)(nil)
	_ actions.SecretHolder  = (*Action)(nil)
)

var _ actions.RateLimited = (*Action)(nil)
