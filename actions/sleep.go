package actions

import (
	"context"
	"time"
)

// Sleep waits d or until ctx is done, returning ctx's cause then: the polls of plugins that
// wait within a call (plans, drift checks, retries).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
