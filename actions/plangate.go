package actions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// ErrPlanBusy is a plan's error when its resource is being reconciled (or deleted, or
// observed): the cause that stops a plan when such a call wants the resource, and what a
// plugin returns when it finds the resource's lock held. A preview never makes a reconcile
// wait or fail.
var ErrPlanBusy = errors.New("the resource is being reconciled: no plan now")

// ErrPlanInProgress is a plan's error when another plan holds what it needs (a plugin that
// plans a resource once at a time).
var ErrPlanInProgress = errors.New("another plan is in progress: no plan now")

// PlanArbitrated is implemented by planners whose plans share local state with the other
// calls of their resource (exec's lock, terraform's working copy): the host calls them
// through a PlanGate, the one it shares across instances or else the instance's own
// (PlanGate). Other planners (a CI run with a correlation of its own) plan alongside
// reconciles.
type PlanArbitrated interface {
	Planner
	// PlanGate is the instance's gate, used when the host shares none.
	PlanGate() *PlanGate
}

// GateFor is the gate the host calls act through: nil (no arbitration) unless act is
// PlanArbitrated; then shared when the host has one, or the instance's own.
func GateFor(shared *PlanGate, act any) *PlanGate {
	pa, ok := act.(PlanArbitrated)
	switch {
	case !ok:
		return nil
	case shared != nil:
		return shared
	}
	return pa.PlanGate()
}

// DefaultPlanStopWait is how long a call waits for a plan it stopped to return when the gate
// sets no StopWait: terraform's interrupt grace (20s) with a margin.
const DefaultPlanStopWait = 30 * time.Second

// PlanGate arbitrates between the plans of a resource and its other calls within the
// process: the host (the reconciler, the preview) makes each call of a PlanArbitrated plugin
// through it. A plan starts only when no other call of the resource waits or runs (plans run
// together, unless the plugin refuses); a call that wants the resource cancels the plans in
// progress (cause ErrPlanBusy) and waits for them to end before it calls the plugin. The zero
// value is ready to use; a nil *PlanGate arbitrates nothing.
type PlanGate struct {
	// StopWait bounds a call's wait for the plans it stopped (0: DefaultPlanStopWait); past
	// it, the call fails (a plugin that ignores cancellation) and is retried.
	StopWait time.Duration

	mu sync.Mutex
	m  map[string]*gateEntry
}

type gateEntry struct {
	wanted int                   // calls other than plans that want or hold the resource
	plans  map[*runningPlan]bool // the plans in progress
}

type runningPlan struct {
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the plan has returned
}

// gateKey names a resource as the store and exec's lock do (kind in lower case): a plan of a
// pull request's resource carries no UID, and may spell the kind otherwise.
func gateKey(r Resource) string {
	return r.Namespace + "/" + strings.ToLower(r.Kind) + "/" + r.Name
}

func (g *PlanGate) entry(key string) *gateEntry {
	if g.m == nil {
		g.m = map[string]*gateEntry{}
	}
	e := g.m[key]
	if e == nil {
		e = &gateEntry{plans: map[*runningPlan]bool{}}
		g.m[key] = e
	}
	return e
}

// drop forgets key's entry when nothing uses it; g.mu is held.
func (g *PlanGate) drop(key string, e *gateEntry) {
	if e.wanted == 0 && len(e.plans) == 0 {
		delete(g.m, key)
	}
}

// Want registers a call of r other than a plan, stopping r's plans in progress and waiting
// until they have returned, for StopWait at most. done ends the registration, when the call
// has returned.
func (g *PlanGate) Want(ctx context.Context, r Resource) (done func(), err error) {
	if g == nil {
		return func() {}, nil
	}
	key := gateKey(r)
	g.mu.Lock()
	e := g.entry(key)
	e.wanted++
	var running []*runningPlan
	for p := range e.plans {
		running = append(running, p)
	}
	g.mu.Unlock()
	done = func() {
		g.mu.Lock()
		e.wanted--
		g.drop(key, e)
		g.mu.Unlock()
	}
	if len(running) == 0 {
		return done, nil
	}
	wait := g.StopWait
	if wait <= 0 {
		wait = DefaultPlanStopWait
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for _, p := range running {
		p.cancel(ErrPlanBusy)
	}
	for _, p := range running {
		select {
		case <-p.done:
		case <-timer.C:
			done()
			return nil, fmt.Errorf("a plan of %s did not stop within %s of being asked to (its plugin ignores cancellation); not called beside it", key, wait)
		case <-ctx.Done():
			done()
			return nil, context.Cause(ctx)
		}
	}
	return done, nil
}

// Plan asks p for the plan of req, refused (ErrPlanBusy) while another call of the resource
// waits or runs. A call that wants the resource meanwhile stops it: the plan then reports
// ErrPlanBusy, whatever the plugin returned.
func (g *PlanGate) Plan(ctx context.Context, p Planner, req Request) (Plan, error) {
	if g == nil {
		return p.Plan(ctx, req)
	}
	key := gateKey(req.Resource)
	g.mu.Lock()
	e := g.entry(key)
	if e.wanted > 0 {
		g.drop(key, e)
		g.mu.Unlock()
		return Plan{}, ErrPlanBusy
	}
	ctx, cancel := context.WithCancelCause(ctx)
	rp := &runningPlan{cancel: cancel, done: make(chan struct{})}
	e.plans[rp] = true
	g.mu.Unlock()
	defer func() {
		cancel(nil)
		g.mu.Lock()
		delete(e.plans, rp)
		g.drop(key, e)
		g.mu.Unlock()
		close(rp.done)
	}()
	plan, err := p.Plan(ctx, req)
	if errors.Is(context.Cause(ctx), ErrPlanBusy) {
		return Plan{}, ErrPlanBusy
	}
	return plan, err
}
