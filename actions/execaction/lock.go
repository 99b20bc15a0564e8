package execaction

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/actions"
)

// The resource lock: one file per resource, flock'ed by the call that runs its command and
// handed to the command as lockFD, so that it stays locked while any process that inherited
// it lives, trueup included. After a restart, a call for a resource whose previous command
// (or one of its descendants) still runs cannot take the lock, waits lockWait and fails with
// an ordinary error: retried with backoff, never run next to the old one.
const (
	// lockFD is the command's file descriptor of the lock (the first of cmd.ExtraFiles).
	lockFD = 3
	// lockWait is how long a call waits for a lock held by a previous run.
	lockWait = 3 * time.Second
	// lockPoll is how often a waiting call tries again (flock has no timeout).
	lockPoll = 50 * time.Millisecond
	// lockGrace is how long a call that does not wait for a previous run (a plan) tries a
	// held lock, every lockGracePoll: a process forked for another call holds a copy of every
	// file trueup has open from its fork to its exec, which under load takes milliseconds.
	lockGrace     = 250 * time.Millisecond
	lockGracePoll = 10 * time.Millisecond
)

// errLockHeld says a lock tried without waiting (for lockGrace at most) is held.
var errLockHeld = errors.New("the resource's lock is held")

// defaultLockDir is the lock folder when the config names none: per user, so that two
// users' controllers on one machine do not fight over one folder in /tmp.
func defaultLockDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("trueup-exec-locks-%d", os.Geteuid()))
}

// lockName is the lock file of r: a digest of its identity (namespace, kind in lower case,
// name). Every call of a resource names it alike, whatever its operation (a delete waits for
// a reconcile) and whether it carries the resource's UID: a preview's plan has none (the
// pull request's resource may not exist yet), and a plan keyed otherwise than the
// reconcile would run beside it.
func lockName(r actions.Resource) string {
	sum := sha256.Sum256([]byte(r.Namespace + "\x00" + strings.ToLower(r.Kind) + "\x00" + r.Name))
	return "res-" + hex.EncodeToString(sum[:16]) + ".lock"
}

// legacyUID is a UID that an older trueup named a lock file after (uid-<UID>.lock).
var legacyUID = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}$`)

// legacyLockName is the lock file an older trueup took for r, keyed by its UID ("" when r
// has none, or one that was digested instead). A command it started may outlive it across an
// upgrade and still hold that file, not lockName's; calls with a UID take both.
func legacyLockName(r actions.Resource) string {
	if !legacyUID.MatchString(r.UID) {
		return ""
	}
	return "uid-" + r.UID + ".lock"
}

func resourceID(r actions.Resource) string {
	return r.Namespace + "/" + r.Kind + "/" + r.Name
}
