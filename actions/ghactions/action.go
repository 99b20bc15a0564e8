package ghactions

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/forge/githubapi"
	"github.com/trueup-dev/trueup/internal/forge/ratelimit"
	"github.com/trueup-dev/trueup/internal/plaintext"
	"github.com/trueup-dev/trueup/internal/tracing"
)

const userAgent = "trueup-ghactions"

// errClosed is the cause of calls cancelled by Close. It wraps context.Canceled so that
// callers treat it like any other cancellation.
var errClosed = fmt.Errorf("github-actions action closed: %w", context.Canceled)

// Action is a github-actions instance: one repository, one credential. It is safe for
// concurrent use; calls for different resources, and every other client of the credential
// at the same host, share its rate limit, so a limit seen by one call makes every other
// call wait for the reset too.
type Action struct {
	settings
	logger    *slog.Logger
	gh        *github.Client
	blob      *http.Client // artifact blob downloads: never carries credentials
	transport *http.Transport
	secrets   *secrets
	remaining atomic.Int64
	// pause is the rate limit of the credential, shared with every client of it.
	pause *ratelimit.Pause
	// noRunDetails is set once the server refused return_run_details.
	noRunDetails atomic.Bool
	now          func() time.Time

	mu         sync.Mutex
	calls      actions.Calls    // calls in flight, for Close
	drifted    map[string]int64 // resource → generation Observe found drifted (see driftKey)
	failedRuns map[int64]bool   // runs reported failed by this instance (see noteFailed)
}

// Secrets returns the instance's fixed credentials (the token, or the App's private key and
// its lines), so that the controller scrubs them from every plugin's messages and outputs,
// not only this one's: they may be written in the config as literals, which ${VAR} scrubbing
// does not know. Installation tokens, issued later, are scrubbed by this instance alone.
func (a *Action) Secrets() []string {
	a.secrets.mu.RLock()
	defer a.secrets.mu.RUnlock()
	return slices.Clone(a.secrets.fixed)
}

// maxFailedRuns bounds failedRuns; an entry lives from a failure report to the retry.
const maxFailedRuns = 4096

// New is the actions.Factory of the github-actions kind. It decodes and checks the config
// and reads the App's private key; it makes no network call.
func New(raw json.RawMessage, env actions.Env) (actions.Action, error) {
	s, err := parseConfig(raw, env.BaseDir)
	if err != nil {
		return nil, err
	}
	logger := env.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	a := &Action{
		settings:   s,
		secrets:    &secrets{},
		now:        time.Now,
		drifted:    map[string]int64{},
		failedRuns: map[int64]bool{},
	}
	a.remaining.Store(-1)
	a.logger = slog.New(&scrubHandler{next: logger.Handler(), secrets: a.secrets}).
		With("action", env.Name, "repository", s.owner+"/"+s.repo)

	a.transport = http.DefaultTransport.(*http.Transport).Clone()
	var tokens githubapi.Tokens
	var credential string
	if s.app != nil {
		a.secrets.addKey(string(s.app.keyPEM))
		src, err := githubapi.NewApp(githubapi.AppConfig{
			AppID:          s.app.appID,
			InstallationID: s.app.installationID,
			PrivateKeyFile: s.app.keyFile,
			PrivateKeyPEM:  s.app.keyPEM,
			BaseURL:        s.baseURL.String(),
			Insecure:       s.insecure,
			Now:            func() time.Time { return a.now() },
		}, &http.Client{Transport: a.transport, CheckRedirect: githubapi.NoRedirect})
		if err != nil {
			return nil, fmt.Errorf("config: app: %w", err)
		}
		tokens, credential = &appTokens{src: src, secrets: a.secrets}, src.Credential()
	} else {
		a.secrets.addFixed(s.token)
		tokens = githubapi.StaticToken(s.token)
	}
	cc := githubapi.ClientConfig{BaseURL: s.baseURL, Tokens: tokens, Credential: credential,
		Transport: tracing.Transport(a.transport), Remaining: &a.remaining, Now: func() time.Time { return a.now() }}
	a.gh, a.pause = githubapi.NewClient(cc)
	a.gh.UserAgent = userAgent
	// Blob requests carry no credential, but their answers become outputs: no downgrade.
	a.blob = &http.Client{Transport: a.transport, CheckRedirect: plaintext.CheckRedirect(s.insecure)}

	return a, nil
}

// Reconcile dispatches the workflow for the resource's generation, or checks on the run a
// previous call dispatched. It never waits for a run: while one is in flight it answers
// Done=false with RequeueAfter=pollInterval.
func (a *Action) Reconcile(ctx context.Context, req actions.Request) (actions.Result, error) {
	return a.serve(ctx, req, opReconcile)
}

// Delete dispatches the delete workflow (or the workflow with operation=delete) and waits
// for it the same way. A resource for which nothing was ever dispatched is deleted at once.
func (a *Action) Delete(ctx context.Context, req actions.Request) (actions.Result, error) {
	return a.serve(ctx, req, opDelete)
}

// ValidateWith checks a ResourceType's `with:` parameters at ingest.
func (a *Action) ValidateWith(raw json.RawMessage) error {
	_, err := parseWith(raw, &a.settings)
	return err
}

// RateLimitRemaining is the last X-RateLimit-Remaining GitHub sent for this credential, or
// -1 before the first answer.
func (a *Action) RateLimitRemaining() int { return int(a.remaining.Load()) }

var _ actions.Closer = (*Action)(nil)

// Close cancels the calls in flight, waits for them and drops idle connections. It is safe
// to call more than once.
func (a *Action) Close() error {
	if a.calls.Close(errClosed) {
		a.transport.CloseIdleConnections()
	}
	return nil
}

// begin registers a call, so that Close can cancel it and wait for it.
func (a *Action) begin(ctx context.Context) (context.Context, func(), error) {
	return a.calls.Begin(ctx, errClosed)
}

// driftKey identifies a resource in the drift marks.
func driftKey(r actions.Resource) string {
	if r.UID != "" {
		return r.UID
	}
	return r.Namespace + "/" + r.Kind + "/" + r.Name
}

// setDrift records what Observe found for r's generation.
func (a *Action) setDrift(r actions.Resource, drifted bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if drifted {
		a.drifted[driftKey(r)] = r.Generation
	} else {
		delete(a.drifted, driftKey(r))
	}
}

// hasDrift reports a mark of setDrift for r's generation without consuming it.
func (a *Action) hasDrift(r actions.Resource) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	gen, ok := a.drifted[driftKey(r)]
	return ok && gen == r.Generation
}

// takeDrift consumes the mark Observe left for r's generation.
func (a *Action) takeDrift(r actions.Resource) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := driftKey(r)
	gen, ok := a.drifted[k]
	delete(a.drifted, k)
	return ok && gen == r.Generation
}

// noteFailed remembers a run reported failed. The failing call checkpoints phase "failed"
// so that its retry dispatches again; a reconciler that restores the pre-call State after an
// error would hand the retry the running handle again, and this note lets the retry on this
// instance dispatch anyway instead of reporting the same failed run forever.
func (a *Action) noteFailed(runID int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.failedRuns) >= maxFailedRuns {
		for id := range a.failedRuns {
			delete(a.failedRuns, id)
			break
		}
	}
	a.failedRuns[runID] = true
}

// takeFailed consumes the note of noteFailed.
func (a *Action) takeFailed(runID int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	ok := a.failedRuns[runID]
	delete(a.failedRuns, runID)
	return ok
}

// serve runs one Reconcile or Delete.
func (a *Action) serve(ctx context.Context, req actions.Request, op string) (actions.Result, error) {
	ctx, end, err := a.begin(ctx)
	if err != nil {
		return actions.Result{}, err
	}
	defer end()
	w, err := parseWith(req.With, &a.settings)
	if err != nil {
		return actions.Result{}, actions.Terminal(err)
	}
	st, err := decodeState(req.State)
	if err != nil {
		// Only this plugin writes State; an unreadable one is from an incompatible version.
		return actions.Result{}, actions.Terminalf("decode action state: %w", err)
	}
	c := &call{a: a, req: req, with: w, op: op, st: st, st0: st, log: a.logger.With(
		"operation", op, "kind", req.Resource.Kind, "namespace", req.Resource.Namespace,
		"name", req.Resource.Name, "generation", req.Resource.Generation)}
	if res, ok := c.fromState(); ok {
		return c.answer(ctx, res, nil)
	}
	if until, ok := a.pause.Until(a.now()); ok {
		return c.rateLimited(until), nil
	}
	var res actions.Result
	if op == opDelete {
		res, err = c.delete(ctx)
	} else {
		res, err = c.reconcile(ctx)
	}
	return c.answer(ctx, res, err)
}

// call is one Reconcile or Delete of one resource.
type call struct {
	a    *Action
	req  actions.Request
	with with
	op   string
	// st is the state as far as the external world has moved during this call; it is what
	// a rate-limited answer hands back.
	st  state
	st0 state // as decoded from req.State
	log *slog.Logger
}

// answer maps a rate limit to a waiting result and scrubs what leaves the plugin.
func (c *call) answer(ctx context.Context, res actions.Result, err error) (actions.Result, error) {
	a := c.a
	if until, ok := githubapi.RateLimitUntil(err, a.now()); ok {
		a.pause.Extend(until)
		c.log.WarnContext(ctx, "github rate limit; waiting for the reset", "until", until.UTC().Format(time.RFC3339), "err", a.secrets.scrub(err.Error()))
		return c.rateLimited(until), nil
	}
	if err != nil {
		return actions.Result{}, a.secrets.scrubErr(err)
	}
	res.Message = a.secrets.scrub(res.Message)
	res.Conditions = append(res.Conditions, withinLimitCondition())
	return res, nil
}

// rateLimited is the answer while the credential is rate limited: no failure, the state as
// it stands, and a RateLimited condition until the next call that reaches GitHub.
func (c *call) rateLimited(until time.Time) actions.Result {
	wait := max(until.Sub(c.a.now()), 0)
	st := c.req.State
	if !reflect.DeepEqual(c.st, c.st0) {
		st = c.st.encode()
	}
	return actions.Result{
		Done:         false,
		RequeueAfter: wait + limitJitter(wait) + time.Millisecond,
		State:        st,
		Conditions:   []actions.Condition{rateLimitedCondition(until)},
		Message:      rateLimitMessage(until),
	}
}

var (
	_ actions.Action        = (*Action)(nil)
	_ actions.Observer      = (*Action)(nil)
	_ actions.WithValidator = (*Action)(nil)
	_ actions.SecretHolder  = (*Action)(nil)
)

var _ actions.RateLimited = (*Action)(nil)
