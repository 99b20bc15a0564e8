package daemon

import (
	"context"
	"sync"
)

// Service is the one lifecycle of the components the daemon runs: Start returns once the
// component runs (or why it could not start), Stop returns once it has stopped.
type Service interface {
	Start(ctx context.Context) error
	Stop()
}

// runService adapts a component whose Run blocks until its context ends: Start runs it on a
// goroutine of its own, Stop ends its context and waits for Run to return.
func runService(run func(ctx context.Context)) Service { return &runner{run: run} }

type runner struct {
	run    func(ctx context.Context)
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

func (r *runner) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx, r.cancel = context.WithCancel(ctx)
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		r.run(ctx)
	}()
	return nil
}

func (r *runner) Stop() {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}
