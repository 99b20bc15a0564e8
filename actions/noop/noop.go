// Package noop owns the "noop" action kind: a plugin that changes nothing and always succeeds,
// for tests and benchmarks of the reconciler. It plans too (no changes, every count 0), so
// that benchmarks and tests can put noop resources behind the gate of a policy. It can be told to wait (delay) and to fail the
// first few reconciles of each resource (failFirst), to exercise timeouts and retries.
package noop

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/trueup-dev/trueup/actions"
)

// config is the instance config: {"delay": "0s", "failFirst": 0}, both optional.
type config struct {
	// Delay is how long every call waits (honouring ctx) before answering, as a Go
	// duration string.
	Delay string `json:"delay"`
	// FailFirst is the number of initial Reconcile calls per resource that return an error.
	FailFirst int `json:"failFirst"`
}

// Action is a noop instance. It is safe for concurrent use.
type Action struct {
	delay     time.Duration
	failFirst int

	mu sync.Mutex
	// failed counts induced failures per resource; only touched when failFirst > 0, so
	// the common benchmark path takes no lock.
	failed map[resourceKey]int
}

type resourceKey struct{ namespace, kind, name string }

// New is the actions.Factory of the noop kind.
func New(raw json.RawMessage, _ actions.Env) (actions.Action, error) {
	var c config
	if err := actions.DecodeStrict(raw, &c); err != nil {
		return nil, fmt.Errorf("decode config: %w", err)
	}
	var delay time.Duration
	if c.Delay != "" {
		d, err := time.ParseDuration(c.Delay)
		if err != nil {
			return nil, fmt.Errorf("config: delay: %w", err)
		}
		if d < 0 {
			return nil, fmt.Errorf("config: delay %s is negative", d)
		}
		delay = d
	}
	if c.FailFirst < 0 {
		return nil, fmt.Errorf("config: failFirst %d is negative", c.FailFirst)
	}
	a := &Action{delay: delay, failFirst: c.FailFirst}
	if a.failFirst > 0 {
		a.failed = map[resourceKey]int{}
	}
	return a, nil
}

// Reconcile reports Done with outputs {"generation": <generation>}, after the configured
// delay and the configured number of induced failures.
func (a *Action) Reconcile(ctx context.Context, req actions.Request) (actions.Result, error) {
	if err := a.wait(ctx); err != nil {
		return actions.Result{}, err
	}
	if a.failFirst > 0 {
		if err := a.induceFailure(req.Resource); err != nil {
			return actions.Result{}, err
		}
	}
	return actions.Result{
		Done:    true,
		Outputs: map[string]any{"generation": req.Resource.Generation},
		Message: "noop",
	}, nil
}

// Delete reports Done after the configured delay. It forgets the resource's induced
// failures, so a resource created again fails again.
func (a *Action) Delete(ctx context.Context, req actions.Request) (actions.Result, error) {
	if err := a.wait(ctx); err != nil {
		return actions.Result{}, err
	}
	if a.failFirst > 0 {
		a.mu.Lock()
		delete(a.failed, keyOf(req.Resource))
		a.mu.Unlock()
	}
	return actions.Result{Done: true, Message: "noop"}, nil
}

// Observe reports InSync after the configured delay: nothing ever drifts.
func (a *Action) Observe(ctx context.Context, _ actions.Request) (actions.Observation, error) {
	if err := a.wait(ctx); err != nil {
		return actions.Observation{}, err
	}
	return actions.Observation{InSync: true, Message: "noop"}, nil
}

// noChanges is every plan of noop: nothing to add, change, destroy or replace. Its Hash is
// left to actions.PlanHash.
var noChanges = actions.Plan{Summary: "no changes", Counted: true}

// Plan reports no changes after the configured delay.
func (a *Action) Plan(ctx context.Context, _ actions.Request) (actions.Plan, error) {
	if err := a.wait(ctx); err != nil {
		return actions.Plan{}, err
	}
	return noChanges, nil
}

// PlanDelete reports no changes after the configured delay: a delete removes nothing.
func (a *Action) PlanDelete(ctx context.Context, req actions.Request) (actions.Plan, error) {
	return a.Plan(ctx, req)
}

var _ actions.Closer = (*Action)(nil)

// Close releases nothing; it exists so the lifecycle is the same as other kinds.
func (a *Action) Close() error { return nil }

func (a *Action) wait(ctx context.Context) error {
	if a.delay <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(a.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (a *Action) induceFailure(r actions.Resource) error {
	k := keyOf(r)
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.failed[k]
	if n >= a.failFirst {
		return nil
	}
	a.failed[k] = n + 1
	return fmt.Errorf("noop: induced failure %d of %d", n+1, a.failFirst)
}

func keyOf(r actions.Resource) resourceKey {
	return resourceKey{namespace: r.Namespace, kind: r.Kind, name: r.Name}
}

var (
	_ actions.Action        = (*Action)(nil)
	_ actions.Observer      = (*Action)(nil)
	_ actions.Planner       = (*Action)(nil)
	_ actions.DeletePlanner = (*Action)(nil)
)
