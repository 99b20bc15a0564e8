package main

import (
	"context"
	"errors"
)

// scale1mReads records the read figures of the scale1m group against env's server:
// api_list_p99_1m, api_get_p99_1m and dashboard_overview_1m.
func (b *bench) scale1mReads(ctx context.Context, env scale1mEnv) error {
	return errors.New("scale1m reads: not built yet")
}
