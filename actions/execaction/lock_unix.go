//go:build unix

package execaction

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/trueup-dev/trueup/actions"
)

// lockResource takes r's lock in dir, waiting at most lockWait for a previous run to end, or
// lockGrace for a copy held by a fork (then errLockHeld) when wait is false. When r carries a UID, the lock file an older
// trueup named after it (legacyLockName) is taken too, by the same rules: a command started
// by the binary before an upgrade may still hold it. The caller passes lock to the command
// and calls release when the call ends (it closes trueup's copies of both).
func lockResource(ctx context.Context, dir string, r actions.Resource, wait bool) (lock *os.File, release func(), err error) {
	if err := ensureLockDir(dir); err != nil {
		return nil, nil, err
	}
	limit := lockWait
	if !wait {
		limit = lockGrace
	}
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	lock, err = lockFile(ctx, filepath.Join(dir, lockName(r)), r, wait, deadline.C)
	if err != nil {
		return nil, nil, err
	}
	legacy := legacyLockName(r)
	if legacy == "" {
		return lock, func() { lock.Close() }, nil
	}
	old, err := lockFile(ctx, filepath.Join(dir, legacy), r, wait, deadline.C)
	if err != nil {
		lock.Close()
		return nil, nil, err
	}
	return lock, func() { old.Close(); lock.Close() }, nil
}

// lockFile flocks path, trying every lockPoll (lockGracePoll when wait is false) until
// deadline fires.
func lockFile(ctx context.Context, path string, r actions.Resource, wait bool, deadline <-chan time.Time) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	poll := lockPoll
	if !wait {
		poll = lockGracePoll
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return f, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, context.Cause(ctx)
		case <-deadline:
			f.Close()
			if !wait {
				return nil, errLockHeld
			}
			return nil, fmt.Errorf("a previous run of this action for %s is still running (it holds %s)", resourceID(r), path)
		case <-tick.C:
		}
	}
}

// ensureLockDir creates dir (0700) and refuses one that others could write to: whoever can
// replace a lock file can make two runs overlap.
func ensureLockDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("lock dir: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("lock dir: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("lock dir %s: not a directory", dir)
	case ok && int(st.Uid) != os.Geteuid():
		return fmt.Errorf("lock dir %s: owned by uid %d, not by this process (uid %d)", dir, st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("lock dir %s: mode %04o lets others write to it", dir, fi.Mode().Perm())
	}
	return nil
}
