package httpcall

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/httpwait"
	"github.com/trueup-dev/trueup/internal/tracing"
)

// Operations, as sent in the body and X-Trueup-Operation.
const (
	opReconcile = "reconcile"
	opDelete    = "delete"
)

// keepTimeout bounds the state write of a failed call, which outlives a cancelled call.
const keepTimeout = 10 * time.Second

// errClosed is returned by calls made after Close.
var errClosed = fmt.Errorf("http action closed: %w", context.Canceled)

// Action is an http instance. It is safe for concurrent use.
type Action struct {
	settings
	logger   *slog.Logger
	hc       *http.Client
	scrubber *strings.Replacer
	sleep    func(context.Context, time.Duration) error // replaced by tests

	calls actions.Calls // calls in flight, for Close
}

// New is the actions.Factory of the http kind. It checks the config without calling the
// provisioner.
func New(raw json.RawMessage, env actions.Env) (actions.Action, error) {
	s, err := parseConfig(raw)
	if err != nil {
		return nil, err
	}
	logger := env.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	a := &Action{
		settings: s,
		logger:   logger.With("action", env.Name, "url", display(s.url)),
		sleep:    actions.Sleep,
	}
	a.hc = &http.Client{Transport: tracing.Transport(http.DefaultTransport.(*http.Transport).Clone()), CheckRedirect: a.checkRedirect}
	if len(s.secrets) > 0 {
		pairs := make([]string, 0, 2*len(s.secrets))
		for _, v := range s.secrets {
			pairs = append(pairs, v, "***")
		}
		a.scrubber = strings.NewReplacer(pairs...)
	}
	return a, nil
}

// Secrets returns the instance's credentials (header values, the credential part of
// "Bearer <token>", the signing secret, the url's password), so that the controller scrubs
// them from every plugin's messages and outputs, not only this one's: they may be written
// in the config as literals, which ${VAR} scrubbing does not know.
func (a *Action) Secrets() []string { return slices.Clone(a.secrets) }

// Reconcile sends the resource with operation "reconcile", or follows the job it started.
func (a *Action) Reconcile(ctx context.Context, req actions.Request) (actions.Result, error) {
	return a.run(ctx, opReconcile, req)
}

// Delete sends the resource with method DELETE and operation "delete", or follows the job
// it started. 404 and 410 mean already gone.
func (a *Action) Delete(ctx context.Context, req actions.Request) (actions.Result, error) {
	return a.run(ctx, opDelete, req)
}

// ValidateWith checks a ResourceType's `with:` parameters.
func (a *Action) ValidateWith(raw json.RawMessage) error {
	_, err := parseWith(raw)
	return err
}

var _ actions.Closer = (*Action)(nil)

// Close cancels calls in flight, waits for them and drops idle connections. It is safe to
// call more than once.
func (a *Action) Close() error {
	if a.calls.Close(errClosed) {
		a.hc.CloseIdleConnections()
	}
	return nil
}

// begin registers a call, so that Close can cancel it and wait for it.
func (a *Action) begin(ctx context.Context) (context.Context, func(), error) {
	return a.calls.Begin(ctx, errClosed)
}

// state is kept by the reconciler between calls.
type state struct {
	Operation  string `json:"operation"`
	Generation int64  `json:"generation"`
	// Location is the status URL of an accepted job being followed.
	Location string `json:"location,omitempty"`
	// Failures counts the jobs the provisioner reported failed for this generation and
	// operation; it makes the Idempotency-Key of the next try a new one.
	Failures int `json:"failures,omitempty"`
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
	scrub   func(string) string // the instance's secrets and the call's (req.Secrets)
	w       with
	st      state
	durable string // the state as last saved
	logger  *slog.Logger
}

func (a *Action) run(ctx context.Context, op string, req actions.Request) (actions.Result, error) {
	ctx, end, err := a.begin(ctx)
	if err != nil {
		return actions.Result{}, err
	}
	defer end()

	r := req.Resource
	c := &call{a: a, op: op, req: req, scrub: a.callScrub(req), durable: string(req.State),
		logger: a.logger.With("operation", op, "kind", r.Kind, "namespace", r.Namespace, "name", r.Name, "generation", r.Generation)}
	if c.w, err = parseWith(req.With); err != nil {
		// `with:` comes from Git: only a new commit can fix it.
		return actions.Result{}, actions.Terminal(err)
	}
	if len(req.State) > 0 && string(req.State) != "null" {
		if err := json.Unmarshal(req.State, &c.st); err != nil {
			c.logger.WarnContext(ctx, "ignoring unreadable action state", "err", err)
			c.st = state{}
		}
	}
	if c.st.Operation != op || c.st.Generation != r.Generation {
		if c.st.Location != "" {
			// HTTP has no general way to cancel: the provisioner receives the new request
			// and is expected to supersede the old job.
			c.logger.InfoContext(ctx, "leaving a job of another generation or operation", "previous_operation", c.st.Operation,
				"previous_generation", c.st.Generation)
		}
		c.st = state{Operation: op, Generation: r.Generation}
	}

	var res actions.Result
	if c.st.Location != "" {
		res, err = c.poll(ctx)
	} else {
		res, err = c.send(ctx)
	}
	var later *retryLaterError
	if errors.As(err, &later) {
		c.logger.WarnContext(ctx, "provisioner asked to retry later", "status", later.status, "after", later.after)
		res, err = actions.Result{Done: false, RequeueAfter: later.after, Message: later.Error()}, nil
	}
	if err != nil {
		c.keep(ctx)
		err = a.scrubErr(err)
		if actions.IsTerminal(err) {
			c.logger.ErrorContext(ctx, "http call failed for good", "err", err)
		}
		return actions.Result{}, err
	}
	res.State = c.st.encode()
	res.Message = a.scrub(res.Message)
	return res, nil
}

// wireRequest is the request body.
type wireRequest struct {
	Operation string          `json:"operation"`
	Resource  wireResource    `json:"resource"`
	With      json.RawMessage `json:"with"`
}

// wireResource is the resource with every field present, so that provisioners need not
// tell a missing field from an empty one.
type wireResource struct {
	APIVersion  string            `json:"apiVersion"`
	Kind        string            `json:"kind"`
	Namespace   string            `json:"namespace"`
	Name        string            `json:"name"`
	UID         string            `json:"uid"`
	Generation  int64             `json:"generation"`
	Spec        json.RawMessage   `json:"spec"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	Revision    string            `json:"revision"`
	// FallbackRevision: a delete's, when set (actions.Resource.FallbackRevision).
	FallbackRevision string `json:"fallbackRevision,omitempty"`
}

func (c *call) body() ([]byte, error) {
	r := c.req.Resource
	w := wireRequest{Operation: c.op, With: c.w.Body, Resource: wireResource{
		APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: r.UID,
		Generation: r.Generation, Spec: r.Spec, Labels: r.Labels, Annotations: r.Annotations, Revision: r.Revision,
		FallbackRevision: r.FallbackRevision,
	}}
	if actions.IsNull(w.Resource.Spec) {
		w.Resource.Spec = json.RawMessage(`{}`)
	} else if !json.Valid(w.Resource.Spec) {
		return nil, actions.Terminalf("spec is not valid JSON")
	}
	if actions.IsNull(w.With) {
		w.With = json.RawMessage(`{}`)
	}
	if w.Resource.Labels == nil {
		w.Resource.Labels = map[string]string{}
	}
	if w.Resource.Annotations == nil {
		w.Resource.Annotations = map[string]string{}
	}
	return json.Marshal(w)
}

// idempotencyKey names the desired state: the same on every try of one request, a new one
// for a new generation, operation, or after the provisioner reported the job failed.
func (c *call) idempotencyKey() string {
	r := c.req.Resource
	k := r.UID + "-" + strconv.FormatInt(r.Generation, 10) + "-" + c.op
	if c.st.Failures > 0 {
		k += "-" + strconv.Itoa(c.st.Failures)
	}
	return k
}

// send sends the resource and reads the answer.
func (c *call) send(ctx context.Context) (actions.Result, error) {
	body, err := c.body()
	if err != nil {
		return actions.Result{}, err
	}
	method := c.a.method
	if c.op == opDelete {
		method = http.MethodDelete
	}
	target := c.a.target(c.w.Path)
	r, err := c.a.exchange(ctx, outgoing{method: method, url: target, body: body, op: c.op, key: c.idempotencyKey(), scrub: c.scrub})
	if err != nil {
		return actions.Result{}, err
	}
	switch {
	case c.op == opDelete && (r.status == http.StatusNotFound || r.status == http.StatusGone):
		c.logger.InfoContext(ctx, "already deleted", "status", r.status)
		return actions.Result{Done: true, Message: fmt.Sprintf("already gone (%d)", r.status)}, nil
	case r.status == http.StatusAccepted && r.header.Get("Location") != "":
		loc, err := c.location(target, r.header.Get("Location"))
		if err != nil {
			return actions.Result{}, err
		}
		c.st.Location = loc.String()
		c.logger.InfoContext(ctx, "request accepted; following its status", "location", display(loc))
		return actions.Result{Done: false, RequeueAfter: c.requeue(r), Message: "accepted; following " + display(loc)}, nil
	case r.status/100 == 2:
		return c.finish(ctx, r, false)
	default:
		return actions.Result{}, c.refused(method, target, r)
	}
}

// poll reads the status URL of an accepted job.
func (c *call) poll(ctx context.Context) (actions.Result, error) {
	loc, err := url.Parse(c.st.Location)
	if err != nil || !sameOrigin(loc, c.a.url) {
		c.st.Location = ""
		return actions.Result{}, errors.New("unusable status URL in state; the request will be sent again")
	}
	r, err := c.a.exchange(ctx, outgoing{method: http.MethodGet, url: loc, op: c.op, scrub: c.scrub})
	if err != nil {
		return actions.Result{}, err
	}
	switch {
	case r.status == http.StatusNotFound || r.status == http.StatusGone:
		// The provisioner lost the job: send the request again, under a new key.
		c.st.Location, c.st.Failures = "", c.st.Failures+1
		return actions.Result{}, fmt.Errorf("status URL %s answered %d; the request will be sent again", display(loc), r.status)
	case r.status/100 == 2:
		return c.finish(ctx, r, true)
	default:
		return actions.Result{}, c.refused(http.MethodGet, loc, r)
	}
}

// refused is the error of an answer that ends the call: 4xx are terminal (the request will
// not succeed until the resource changes), anything else is not.
func (c *call) refused(method string, u *url.URL, r reply) error {
	err := &statusError{method: method, url: display(u), status: r.status, excerpt: excerpt(r.body, c.scrub), tries: 1}
	if r.status/100 == 3 {
		return fmt.Errorf("%w (redirects are followed for GET only)", err)
	}
	if r.status/100 == 4 {
		return actions.Terminal(err)
	}
	return err
}

// location resolves a Location header against the request URL and keeps it on the
// configured origin: the configured headers hold credentials.
func (c *call) location(base *url.URL, v string) (*url.URL, error) {
	rel, err := url.Parse(v)
	if err != nil {
		return nil, errors.New("the provisioner's Location header is not a URL")
	}
	loc := base.ResolveReference(rel)
	if !sameOrigin(loc, c.a.url) {
		return nil, actions.Terminalf("the provisioner's Location points to another origin (%s); status URLs must stay on %s",
			loc.Scheme+"://"+loc.Host, c.a.url.Scheme+"://"+c.a.url.Host)
	}
	return loc, nil
}

func (c *call) requeue(r reply) time.Duration {
	if d, ok := httpwait.RetryAfter(r.header, time.Now()); ok && d > 0 {
		return d
	}
	return c.a.pollInterval
}

// wireReply is what a JSON answer may say.
type wireReply struct {
	Status  *string        `json:"status"`
	Message string         `json:"message"`
	Outputs map[string]any `json:"outputs"`
}

// finish reads a 2xx answer: outputs, a failure, or (polling, or a provisioner without a
// status URL) work still in progress.
func (c *call) finish(ctx context.Context, r reply, polling bool) (actions.Result, error) {
	obj, err := decodeObject(r)
	if err != nil {
		return actions.Result{}, err
	}
	if obj == nil { // empty, or not JSON: nothing more to learn
		c.st.Location = ""
		return actions.Result{Done: true, Message: c.doneMessage("")}, nil
	}
	var w wireReply
	if raw, ok := obj["status"]; ok && raw != nil {
		s, ok := raw.(string)
		if !ok {
			return actions.Result{}, errors.New("answer: status is not a string")
		}
		w.Status = &s
	}
	w.Message, _ = obj["message"].(string)
	if raw, ok := obj["outputs"]; ok {
		out, ok := raw.(map[string]any)
		if !ok {
			return actions.Result{}, errors.New("answer: outputs is not a JSON object")
		}
		w.Outputs = out
	} else {
		w.Outputs = obj
		delete(w.Outputs, "status")
		delete(w.Outputs, "message")
	}

	status := ""
	if w.Status != nil {
		status = *w.Status
	}
	switch status {
	case "", "done", "succeeded":
		c.st.Location = ""
		c.logger.InfoContext(ctx, "provisioner done", "polling", polling)
		res := actions.Result{Done: true, Message: c.doneMessage(w.Message)}
		if c.op == opReconcile {
			res.Outputs = w.Outputs
		}
		return res, nil
	case "failed":
		c.st.Location, c.st.Failures = "", c.st.Failures+1
		msg := excerpt([]byte(w.Message), c.scrub)
		if msg == "" {
			msg = "no message"
		}
		c.logger.WarnContext(ctx, "provisioner reported a failure", "failures", c.st.Failures)
		return actions.Result{}, fmt.Errorf("the provisioner reported the %s failed: %s", c.op, msg)
	case "pending", "running":
		c.logger.DebugContext(ctx, "provisioner still working", "status", status)
		msg := "the provisioner reports " + status
		if w.Message != "" {
			msg += ": " + w.Message
		}
		// Without a status URL, the same request (same Idempotency-Key) is sent again.
		return actions.Result{Done: false, RequeueAfter: c.requeue(r), Message: msg}, nil
	default:
		return actions.Result{}, fmt.Errorf("answer: unknown status %q (want done, succeeded, failed, pending or running)", excerpt([]byte(status), c.scrub))
	}
}

func (c *call) doneMessage(msg string) string {
	if msg != "" {
		return msg
	}
	if c.op == opDelete {
		return "deleted"
	}
	return "reconciled"
}

// decodeObject reads a JSON object answer; nil when the answer is empty or not JSON.
func decodeObject(r reply) (map[string]any, error) {
	b := bytes.TrimSpace(r.body)
	if len(b) == 0 {
		return nil, nil
	}
	mt, _, _ := mime.ParseMediaType(r.header.Get("Content-Type"))
	isJSON := mt == "application/json" || strings.HasSuffix(mt, "+json")
	if b[0] != '{' {
		if isJSON {
			return nil, errors.New("answer: JSON but not an object")
		}
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // outputs keep their exact digits (64-bit IDs)
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		if isJSON {
			return nil, fmt.Errorf("answer: invalid JSON: %w", err)
		}
		return nil, nil
	}
	return obj, nil
}

// keep saves what a failing call learnt (a failure count, a lost job): on error the
// reconciler keeps the last saved state, not Result.State.
func (c *call) keep(ctx context.Context) {
	b := c.st.encode()
	if string(b) == c.durable || c.durable == "" && c.st.Location == "" && c.st.Failures == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keepTimeout)
	defer cancel()
	if err := c.req.SaveCheckpoint(ctx, b); err != nil {
		c.logger.WarnContext(ctx, "could not save action state after a failed call", "err", err)
		return
	}
	c.durable = string(b)
}

var (
	_ actions.Action        = (*Action)(nil)
	_ actions.WithValidator = (*Action)(nil)
	_ actions.SecretHolder  = (*Action)(nil)
)
