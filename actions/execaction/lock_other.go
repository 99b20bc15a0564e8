//go:build !unix

package execaction

import (
	"context"
	"os"

	"github.com/trueup-dev/trueup/actions"
)

// lockResource has no flock to use outside Unix: no lock, no lockFD.
func lockResource(context.Context, string, actions.Resource, bool) (*os.File, func(), error) {
	return nil, func() {}, nil
}
