package httpcall

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/trueup-dev/trueup/actions"
)

// opPlan is the operation of a plan request.
const opPlan = "plan"

// noPlanStatus lists the answers to a plan request that mean "this provisioner (or this
// path) does not plan": the preview shows "no plan" instead of an error.
var noPlanStatus = map[int]bool{
	http.StatusNotFound:         true,
	http.StatusMethodNotAllowed: true,
	http.StatusNotImplemented:   true,
}

// wirePlan is a provisioner's answer to a plan request.
type wirePlan struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	Changes *bool  `json:"changes"`
	Summary string `json:"summary"`
	Plan    string `json:"plan"`
	// add, change, destroy, replace and hash: optional.
	actions.PlanDetails
}

// Plan sends the resource with operation "plan" and reads {"changes", "summary", "plan"} and
// the optional actions.PlanDetails (counts and hash) from the answer, following an accepted
// job (202 + Location) or a "pending" answer until ctx ends: a plan is one call, it keeps no
// state and saves no checkpoint. An instance
// without `plan: true`, or a provisioner answering 404, 405 or 501, gives actions.ErrNoPlan.
func (a *Action) Plan(ctx context.Context, req actions.Request) (actions.Plan, error) {
	if !a.plan {
		return actions.Plan{}, actions.ErrNoPlan
	}
	ctx, end, err := a.begin(ctx)
	if err != nil {
		return actions.Plan{}, err
	}
	defer end()
	r := req.Resource
	// State and Checkpoint belong to reconciles: a plan must not touch them.
	c := &call{a: a, op: opPlan, req: actions.Request{Resource: r, With: req.With, Secrets: req.Secrets}, scrub: a.callScrub(req),
		logger: a.logger.With("operation", opPlan, "kind", r.Kind, "namespace", r.Namespace, "name", r.Name)}
	if c.w, err = parseWith(req.With); err != nil {
		return actions.Plan{}, err
	}
	p, err := c.plan(ctx)
	if err != nil {
		if errors.Is(err, actions.ErrNoPlan) {
			return actions.Plan{}, err
		}
		return actions.Plan{}, a.scrubErr(err)
	}
	p.Summary, p.Text = c.scrub(p.Summary), c.scrub(p.Text)
	return p, nil
}

func (c *call) plan(ctx context.Context) (actions.Plan, error) {
	body, err := c.body()
	if err != nil {
		return actions.Plan{}, err
	}
	// The key names the planned desired state: the spec of a pull request is not a
	// generation yet, so the body (spec and with included) names it.
	sum := sha256.Sum256(body)
	key := c.req.Resource.UID + "-plan-" + hex.EncodeToString(sum[:8])
	target := c.a.target(c.w.Path)
	var loc *url.URL // the status URL of an accepted plan
	for {
		var r reply
		if loc == nil {
			r, err = c.a.exchange(ctx, outgoing{method: c.a.method, url: target, body: body, op: opPlan, key: key, scrub: c.scrub,
				final: noPlanStatus})
		} else {
			r, err = c.a.exchange(ctx, outgoing{method: http.MethodGet, url: loc, op: opPlan, scrub: c.scrub})
		}
		var later *retryLaterError
		switch {
		case errors.As(err, &later):
			// A plan has no next call to requeue to: wait within the caller's deadline.
			if err := c.wait(ctx, later.after); err != nil {
				return actions.Plan{}, err
			}
			continue
		case err != nil:
			return actions.Plan{}, err
		}
		switch {
		case loc == nil && noPlanStatus[r.status]:
			c.logger.DebugContext(ctx, "provisioner does not plan", "status", r.status)
			return actions.Plan{}, fmt.Errorf("%w (the provisioner answered %d)", actions.ErrNoPlan, r.status)
		case loc == nil && r.status == http.StatusAccepted && r.header.Get("Location") != "":
			if loc, err = c.location(target, r.header.Get("Location")); err != nil {
				return actions.Plan{}, err
			}
			c.logger.DebugContext(ctx, "plan accepted; following its status", "location", display(loc))
		case loc != nil && (r.status == http.StatusNotFound || r.status == http.StatusGone):
			return actions.Plan{}, fmt.Errorf("plan status URL %s answered %d: the provisioner lost the plan", display(loc), r.status)
		case r.status/100 == 2:
			p, done, err := c.readPlan(ctx, r)
			if err != nil || done {
				return p, err
			}
		default:
			u := target
			method := c.a.method
			if loc != nil {
				u, method = loc, http.MethodGet
			}
			return actions.Plan{}, c.refused(method, u, r)
		}
		if err := c.wait(ctx, c.requeue(r)); err != nil {
			return actions.Plan{}, err
		}
	}
}

// readPlan reads a 2xx answer to a plan request; done is false while the provisioner
// reports the plan pending or running.
func (c *call) readPlan(ctx context.Context, r reply) (actions.Plan, bool, error) {
	obj, err := decodeObject(r)
	if err != nil {
		return actions.Plan{}, false, err
	}
	if obj == nil {
		return actions.Plan{}, false, errors.New("answer to plan: not a JSON object (want {\"changes\", \"summary\", \"plan\"})")
	}
	var w wirePlan
	if err := json.Unmarshal(r.body, &w); err != nil {
		return actions.Plan{}, false, fmt.Errorf("answer to plan: %w", err)
	}
	switch w.Status {
	case "", "done", "succeeded":
	case "pending", "running":
		c.logger.DebugContext(ctx, "provisioner still planning", "status", w.Status)
		return actions.Plan{}, false, nil
	case "failed":
		msg := excerpt([]byte(w.Message), c.scrub)
		if msg == "" {
			msg = "no message"
		}
		return actions.Plan{}, false, fmt.Errorf("the provisioner reported the plan failed: %s", msg)
	default:
		return actions.Plan{}, false, fmt.Errorf("answer to plan: unknown status %q (want done, succeeded, failed, pending or running)",
			excerpt([]byte(w.Status), c.scrub))
	}
	if w.Changes == nil {
		// Without it the answer may be a reconcile's (a provisioner that ignored the
		// operation): say so rather than guess.
		return actions.Plan{}, false, errors.New("answer to plan: no boolean \"changes\"")
	}
	p := actions.Plan{Changes: *w.Changes, Summary: w.Summary, Text: w.Plan}
	// The hash is published as it is: it must hold none of the secrets Summary and Text are
	// scrubbed of.
	if err := w.SetOn(&p, c.scrub); err != nil {
		return actions.Plan{}, false, fmt.Errorf("answer to plan: %w", err)
	}
	return p, true, nil
}

// wait sleeps d, failing when ctx (the caller's plan timeout) ends first.
func (c *call) wait(ctx context.Context, d time.Duration) error {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		d = max(time.Until(dl), 0)
	}
	if err := c.a.sleep(ctx, d); err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	return ctx.Err()
}

var _ actions.Planner = (*Action)(nil)
