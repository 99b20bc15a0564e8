package actions

import (
	"context"
	"errors"
	"sync"
)

// ErrPlanBusy is a plan's error when its resource is being reconciled (or deleted, or
// observed): the cause that stops a plan when such a call wants the resource, and what a
// plugin returns when it finds the resource's lock held. A preview never makes a reconcile
// wait or fail.
var ErrPlanBusy = errors.New("the resource is being reconciled: no plan now")

// PlanGate arbitrates between the plans of a resource and its other calls within the
// process, for every plugin: the host (the reconciler, the preview) makes each plugin call
// through it. A plan starts only when no other call of the resource waits or runs; a call
// that wants the resource cancels the plan in progress (cause ErrPlanBusy) and waits for it
// to end before it calls the plugin. The zero value is ready to use; a nil *PlanGate
// arbitrates nothing.
type PlanGate struct {
	mu sync.Mutex
	m  map[string]*gateEntry
}

type gateEntry struct {
	wanted int          // calls other than plans that want or hold the resource
	plan   *runningPlan // the plan in progress, nil when none
}

type runningPlan struct {
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the plan has returned
}

// gateKey names a resource: a plan of a pull request's resource carries no UID.
func gateKey(r Resource) string { return r.Namespace + "/" + r.Kind + "/" + r.Name }

func (g *PlanGate) entry(key string) *gateEntry {
	if g.m == nil {
		g.m = map[string]*gateEntry{}
	}
	e := g.m[key]
	if e == nil {
		e = &gateEntry{}
		g.m[key] = e
	}
	return e
}

// drop forgets key's entry when nothing uses it; g.mu is held.
func (g *PlanGate) drop(key string, e *gateEntry) {
	if e.wanted == 0 && e.plan == nil {
		delete(g.m, key)
	}
}

// Want registers a call of r other than a plan, stopping r's plan in progress and waiting
// until it has returned. done ends the registration, when the call has returned.
func (g *PlanGate) Want(ctx context.Context, r Resource) (done func(), err error) {
	if g == nil {
		return func() {}, nil
	}
	key := gateKey(r)
	g.mu.Lock()
	e := g.entry(key)
	e.wanted++
	p := e.plan
	g.mu.Unlock()
	done = func() {
		g.mu.Lock()
		e.wanted--
		g.drop(key, e)
		g.mu.Unlock()
	}
	if p != nil {
		p.cancel(ErrPlanBusy)
		select {
		case <-p.done:
		case <-ctx.Done():
			done()
			return nil, context.Cause(ctx)
		}
	}
	return done, nil
}

// Plan asks p for the plan of req, refused (ErrPlanBusy) while another call of the resource
// waits or runs, or another plan does. A call that wants the resource meanwhile stops it:
// the plan then reports ErrPlanBusy, whatever the plugin returned.
func (g *PlanGate) Plan(ctx context.Context, p Planner, req Request) (Plan, error) {
	if g == nil {
		return p.Plan(ctx, req)
	}
	key := gateKey(req.Resource)
	g.mu.Lock()
	e := g.entry(key)
	if e.wanted > 0 || e.plan != nil {
		g.drop(key, e)
		g.mu.Unlock()
		return Plan{}, ErrPlanBusy
	}
	ctx, cancel := context.WithCancelCause(ctx)
	rp := &runningPlan{cancel: cancel, done: make(chan struct{})}
	e.plan = rp
	g.mu.Unlock()
	defer func() {
		cancel(nil)
		g.mu.Lock()
		e.plan = nil
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
