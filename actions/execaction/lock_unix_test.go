//go:build unix

package execaction

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
)

// A command started by a trueup from before the lock was keyed by identity still holds
// uid-<UID>.lock across an upgrade: a call for the resource with that UID waits for it like
// for its own lock; a plan gives way; a call without a UID (a preview's plan) cannot know it.
func TestLockResourceTakesTheLegacyLock(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "locks")
	if err := ensureLockDir(dir); err != nil {
		t.Fatal(err)
	}
	const uid = "6f1c2a4e-7b1d-4c55-9d0e-1b2c3d4e5f60"
	res := actions.Resource{Namespace: "team-a", Kind: "Database", Name: "orders", UID: uid}
	// The old command's copy: another open file description of the legacy file.
	old, err := os.OpenFile(filepath.Join(dir, "uid-"+uid+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := syscall.Flock(int(old.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	// A plan tries for lockGrace beside the old command, holding the resource's own lock
	// only for each try: a call of the resource is never made to wait for its tries.
	tried := make(chan error, 1)
	go func() {
		_, _, err := lockResource(t.Context(), dir, res, false)
		tried <- err
	}()
	time.Sleep(lockGrace / 5)
	free := false
	for i := 0; i < 20 && !free; i++ {
		f, err := os.OpenFile(filepath.Join(dir, lockName(res)), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			free = true
		}
		f.Close()
		time.Sleep(time.Millisecond)
	}
	if !free {
		t.Error("the resource's own lock was held through a plan's tries")
	}
	if err := <-tried; !errors.Is(err, errLockHeld) {
		t.Fatalf("lock beside the old command's: %v, want errLockHeld", err)
	}
	// The resource's own lock was given back on the way out.
	noUID := res
	noUID.UID = ""
	lock, release, err := lockResource(t.Context(), dir, noUID, false)
	if err != nil {
		t.Fatalf("lock without a UID: %v", err)
	}
	release()
	if lock == nil {
		t.Fatal("no lock file")
	}
	// The old command ends: the call takes both.
	if err := syscall.Flock(int(old.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if _, release, err = lockResource(t.Context(), dir, res, true); err != nil {
		t.Fatalf("lock after the old command ended: %v", err)
	}
	if err := syscall.Flock(int(old.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Errorf("the legacy lock is free while the call runs: %v", err)
	}
	release()
	if err := syscall.Flock(int(old.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Errorf("the legacy lock is still held after the call: %v", err)
	}
}
