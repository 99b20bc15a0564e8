package execaction

import (
	"context"
	"errors"
	"sync"
)

// errPlanBusy is a plan's error when its resource is being reconciled (or deleted, or
// observed), and the cause that stops a plan when such a call wants the resource: a preview
// never makes a reconcile wait or fail.
var errPlanBusy = errors.New("the resource is being reconciled: no plan now")

// planGate lets the other calls of a resource preempt its plan within the process. A plan
// starts only when no other call of the resource waits, and then try-locks the resource's
// flock once; a call that wants the resource cancels the plan in progress and waits for it to
// end (its command killed, the flock released) before taking the flock itself.
type planGate struct {
	mu sync.Mutex
	m  map[string]*gateEntry
}

type gateEntry struct {
	wanted int          // calls other than plans that want or hold the resource
	plan   *runningPlan // the plan in progress, nil when none
}

type runningPlan struct {
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the plan has released the resource
}

func (g *planGate) entry(key string) *gateEntry {
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
func (g *planGate) drop(key string, e *gateEntry) {
	if e.wanted == 0 && e.plan == nil {
		delete(g.m, key)
	}
}

// want registers a call of a resource other than a plan, stopping the resource's plan in
// progress and waiting until it has let go. done ends the registration, when the call ends.
func (g *planGate) want(ctx context.Context, key string) (done func(), err error) {
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
		p.cancel(errPlanBusy)
		select {
		case <-p.done:
		case <-ctx.Done():
			done()
			return nil, context.Cause(ctx)
		}
	}
	return done, nil
}

// startPlan registers a plan of a resource, refused (errPlanBusy) while another call of it
// waits or runs, or another plan does. The context ends when a call wants the resource; end
// must be called once the plan has released the resource's flock.
func (g *planGate) startPlan(ctx context.Context, key string) (context.Context, func(), error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.entry(key)
	if e.wanted > 0 || e.plan != nil {
		g.drop(key, e)
		return nil, nil, errPlanBusy
	}
	ctx, cancel := context.WithCancelCause(ctx)
	p := &runningPlan{cancel: cancel, done: make(chan struct{})}
	e.plan = p
	return ctx, func() {
		cancel(nil)
		g.mu.Lock()
		e.plan = nil
		g.drop(key, e)
		g.mu.Unlock()
		close(p.done)
	}, nil
}
