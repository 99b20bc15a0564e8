//go:build !unix

package terraform

import (
	"fmt"
	"os"
)

// ensurePrivateDir creates dir; outside Unix there are no owner and mode bits to check.
func ensurePrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("work dir: %w", err)
	}
	return nil
}
