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

// lockResource takes r's lock in dir, waiting at most lockWait for a previous run to end;
// when wait is false, it tries for lockGrace (a process forked for another call holds a copy
// for a moment), holding none of its locks between tries, then gives up with errLockHeld.
// When r carries a UID, the lock file an older trueup named after it (legacyLockName) is
// taken too, by the same rules: a command started by the binary before an upgrade may still
// hold it. The caller passes lock to the command and calls release when the call ends (it
// closes trueup's copies of both).
func lockResource(ctx context.Context, dir string, r actions.Resource, wait bool) (lock *os.File, release func(), err error) {
	if err := ensureLockDir(dir); err != nil {
		return nil, nil, err
	}
	path, legacy := filepath.Join(dir, lockName(r)), legacyLockName(r)
	if !wait {
		return tryResource(ctx, path, legacy, dir)
	}
	deadline := time.NewTimer(lockWait)
	defer deadline.Stop()
	lock, err = lockFile(ctx, path, r, deadline.C)
	if err != nil {
		return nil, nil, err
	}
	if legacy == "" {
		return lock, func() { lock.Close() }, nil
	}
	old, err := lockFile(ctx, filepath.Join(dir, legacy), r, deadline.C)
	if err != nil {
		lock.Close()
		return nil, nil, err
	}
	return lock, func() { old.Close(); lock.Close() }, nil
}

// tryResource is lockResource without waiting: both locks are tried at once every
// lockGracePoll for lockGrace, and a lock taken is let go when the other is held, so that
// no call waits for a plan's tries.
func tryResource(ctx context.Context, path, legacy, dir string) (*os.File, func(), error) {
	deadline := time.NewTimer(lockGrace)
	defer deadline.Stop()
	for {
		lock, err := tryFlock(path)
		if err == nil && legacy == "" {
			return lock, func() { lock.Close() }, nil
		}
		if err == nil {
			old, oerr := tryFlock(filepath.Join(dir, legacy))
			if oerr == nil {
				return lock, func() { old.Close(); lock.Close() }, nil
			}
			lock.Close()
			err = oerr
		}
		if !errors.Is(err, errLockHeld) {
			return nil, nil, err
		}
		select {
		case <-ctx.Done():
			return nil, nil, context.Cause(ctx)
		case <-deadline.C:
			return nil, nil, errLockHeld
		case <-time.After(lockGracePoll):
		}
	}
}

// lockFile flocks path, trying every lockPoll until deadline fires.
func lockFile(ctx context.Context, path string, r actions.Resource, deadline <-chan time.Time) (*os.File, error) {
	tick := time.NewTicker(lockPoll)
	defer tick.Stop()
	for {
		f, err := tryFlock(path)
		if !errors.Is(err, errLockHeld) {
			return f, err
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-deadline:
			return nil, fmt.Errorf("a previous run of this action for %s is still running (it holds %s)", resourceID(r), path)
		case <-tick.C:
		}
	}
}

// tryFlock opens path and flocks it once: errLockHeld when another open file holds it.
func tryFlock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return f, nil
		case errors.Is(err, syscall.EINTR):
			continue
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errLockHeld
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
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
