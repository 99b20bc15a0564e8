//go:build unix

package terraform

import (
	"fmt"
	"os"
	"syscall"
)

// ensurePrivateDir creates dir (0700) and refuses one that is not trueup's or that others
// could write to: the default workDir has a predictable name in the shared temp folder, and
// whoever could plant files in a working copy would run code as trueup, with its database.
func ensurePrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("work dir: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("work dir: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("work dir %s: not a directory", dir)
	case ok && int(st.Uid) != os.Geteuid():
		return fmt.Errorf("work dir %s: owned by uid %d, not by this process (uid %d)", dir, st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("work dir %s: mode %04o lets others write to it", dir, fi.Mode().Perm())
	}
	return nil
}
