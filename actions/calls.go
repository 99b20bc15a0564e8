package actions

import (
	"context"
	"sync"
)

// Calls tracks a plugin's calls in flight so that Close can cancel them and wait for them
// (the plugin lifecycle: Close is safe twice and leaves no call running). The zero value is
// ready to use.
type Calls struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
	ctx    context.Context // ends when Close is called; its cause is Close's
	cancel context.CancelCauseFunc
}

func (c *Calls) init() {
	if c.ctx == nil {
		c.ctx, c.cancel = context.WithCancelCause(context.Background())
	}
}

// Begin registers a call. The context it returns ends with ctx or when Close is called (with
// Close's cause); done must be called once the call has returned. After Close, Begin
// returns closedErr.
func (c *Calls) Begin(ctx context.Context, closedErr error) (context.Context, func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if c.closed {
		return nil, nil, closedErr
	}
	c.wg.Add(1)
	callCtx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(c.ctx, func() { cancel(context.Cause(c.ctx)) })
	return callCtx, func() {
		stop()
		cancel(nil)
		c.wg.Done()
	}, nil
}

// Close cancels the calls in flight with cause and waits for them. It reports false when
// the plugin was already closed.
func (c *Calls) Close(cause error) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	c.closed = true
	c.init()
	c.mu.Unlock()
	c.cancel(cause)
	c.wg.Wait()
	return true
}
