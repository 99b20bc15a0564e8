package actiontest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
)

// Driver calls an instance for one resource the way the reconciler does: it keeps
// Result.State after a success, and only the last checkpoint after an error. No answer,
// state or error it sees may contain one of Secrets.
type Driver struct {
	T        testing.TB
	Action   actions.Action
	Resource actions.Resource
	With     json.RawMessage
	State    json.RawMessage
	Secrets  []string
	// Checkpoints counts the checkpoints saved; Saved holds every one, in order.
	Checkpoints int
	Saved       []json.RawMessage
	// CheckpointErr, when set, is the answer to every checkpoint (the lease lost).
	CheckpointErr error
}

// Call runs op: "delete" calls Delete, any other Reconcile.
func (d *Driver) Call(op string) (actions.Result, error) {
	d.T.Helper()
	req := actions.Request{Resource: d.Resource, With: d.With, State: d.State,
		Checkpoint: func(_ context.Context, s json.RawMessage) error {
			if d.CheckpointErr != nil {
				return d.CheckpointErr
			}
			d.Checkpoints++
			d.State = append(json.RawMessage(nil), s...)
			d.Saved = append(d.Saved, d.State)
			return nil
		}}
	ctx, cancel := context.WithTimeout(d.T.Context(), 10*time.Second)
	defer cancel()
	var res actions.Result
	var err error
	if op == "delete" {
		res, err = d.Action.Delete(ctx, req)
	} else {
		res, err = d.Action.Reconcile(ctx, req)
	}
	if err == nil {
		d.State = res.State
	}
	out, _ := json.Marshal(res.Outputs)
	conds, _ := json.Marshal(res.Conditions)
	d.noSecrets(err, string(out), string(conds), res.Message, string(res.State), string(d.State))
	return res, err
}

// Must runs op and fails the test on an error.
func (d *Driver) Must(op string) actions.Result {
	d.T.Helper()
	res, err := d.Call(op)
	if err != nil {
		d.T.Fatalf("%s: %v", op, err)
	}
	return res
}

// Plan calls Plan the way the preview runner does: a deadline, and a Checkpoint that must
// not be called.
func (d *Driver) Plan(timeout time.Duration) (actions.Plan, error) {
	d.T.Helper()
	planner, ok := d.Action.(actions.Planner)
	if !ok {
		d.T.Fatalf("%T does not plan", d.Action)
	}
	req := actions.Request{Resource: d.Resource, With: d.With, State: d.State,
		Checkpoint: func(context.Context, json.RawMessage) error {
			d.T.Error("Plan saved a checkpoint")
			return nil
		}}
	ctx, cancel := context.WithTimeout(d.T.Context(), timeout)
	defer cancel()
	p, err := planner.Plan(ctx, req)
	d.noSecrets(err, p.Summary, p.Text)
	return p, err
}

// DecodeState decodes the state kept into v.
func (d *Driver) DecodeState(v any) {
	d.T.Helper()
	if err := json.Unmarshal(d.State, v); err != nil {
		d.T.Fatalf("state %s: %v", d.State, err)
	}
}

func (d *Driver) noSecrets(err error, texts ...string) {
	d.T.Helper()
	if err != nil {
		texts = append(texts, err.Error())
	}
	for _, secret := range d.Secrets {
		for _, s := range texts {
			if strings.Contains(s, secret) {
				d.T.Fatalf("secret %q appears in %q", secret, s)
			}
		}
	}
}
