package daemon

import (
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/trueup-dev/trueup/internal/config"
)

// setMemoryLimit gives the Go runtime its soft memory limit (server.memoryLimit), so that a
// sync of many resources makes the runtime collect sooner rather than grow past what the
// container allows. GOMEMLIMIT, when set, has been applied by the runtime and is left alone.
// Any following a daemon started before in this process ends first. It returns what the
// daemon's Stop gives memFollower.stopFor: 0 when it does not follow.
func setMemoryLimit(cfg *config.Config, logger *slog.Logger) (following uint64) {
	memFollower.stop()
	if env := os.Getenv("GOMEMLIMIT"); env != "" {
		logger.Info("memory limit", "limit", env, "from", "GOMEMLIMIT")
		return 0
	}
	limit, follow, from := cfg.Server.MemoryLimit.Resolve(cgroupMemoryLimit("/"), cfg.Database.URL == "")
	if limit == 0 {
		logger.Info("memory limit", "limit", "none", "from", from)
		return 0
	}
	if follow {
		following = memFollower.start(limit)
	} else {
		debug.SetMemoryLimit(limit)
	}
	logger.Info("memory limit", "limit_mib", limit>>20, "from", from)
	return following
}

// followLimit keeps the soft memory limit at config.FollowingLimit of the live heap after
// every collection: a sentinel object with a cleanup, allocated anew each time, tells when
// one has run (as render's GOGC does). One per process: the limit is the runtime's. A limit
// set by anyone else since (debug.SetMemoryLimit, a daemon's configured size) ends the
// following.
type followLimit struct {
	sync.Mutex
	floor int64  // 0 when not following
	set   int64  // the limit adjust set last
	gen   uint64 // counts starts: stopFor ends only the following its start began
	armed bool   // a sentinel waits for the next collection
}

var memFollower followLimit

// start follows the live heap from floor up and returns the start's generation for stopFor.
func (f *followLimit) start(floor int64) uint64 {
	f.Lock()
	defer f.Unlock()
	f.floor, f.set = floor, 0
	f.gen++
	f.adjust()
	return f.gen
}

// stop leaves the limit as it is set next; a sentinel still armed finds nothing to do.
func (f *followLimit) stop() {
	f.Lock()
	defer f.Unlock()
	f.floor = 0
}

// stopFor stops the following that the start which returned gen began, if it still runs
// (a daemon's Stop; another daemon in the process may have started its own since).
func (f *followLimit) stopFor(gen uint64) {
	f.Lock()
	defer f.Unlock()
	if gen != 0 && gen == f.gen {
		f.floor = 0
	}
}

// following says whether the limit follows the live heap.
func (f *followLimit) following() bool {
	f.Lock()
	defer f.Unlock()
	return f.floor != 0
}

// adjust sets the limit for the last collection's live heap and arms a sentinel for the
// next one; a limit other than the one it set last was set by someone else, and ends the
// following. The caller holds f.
func (f *followLimit) adjust() {
	if f.floor == 0 {
		return
	}
	if f.set != 0 && debug.SetMemoryLimit(-1) != f.set {
		f.floor = 0
		return
	}
	live, other := runtimeMemory()
	f.set = config.FollowingLimit(f.floor, live, other)
	debug.SetMemoryLimit(f.set)
	if !f.armed {
		f.armed = true
		// Not a tiny object, which the runtime may batch with live ones (and never clean up).
		runtime.AddCleanup(new([64]byte), (*followLimit).collected, f)
	}
}

// collected runs after a collection found the sentinel unreachable.
func (f *followLimit) collected() {
	f.Lock()
	defer f.Unlock()
	f.armed = false
	f.adjust()
}

// runtimeMemory is the live heap as of the last collection and what the runtime counts
// against the soft limit beside the heap's objects and the room it can allocate in (stacks,
// its metadata, other runtime memory, and the unused space of the heap's spans: a
// fragmented heap's gaps that objects of other sizes cannot fill, which the limit must
// leave room for on top of the live heap's growth).
func runtimeMemory() (live, other uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/free:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	v := make([]uint64, len(s))
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = s[i].Value.Uint64()
		}
	}
	heap := v[2] + v[3] + v[4]
	if v[1] > heap {
		other = v[1] - heap
	}
	return v[0], other
}

// cgroupMemoryLimit returns the memory limit of the cgroup this process runs in, the
// smallest along its path (cgroup v2 memory.max, v1 memory.limit_in_bytes), or 0 when
// there is none or it cannot be read. root is "/" but for tests.
func cgroupMemoryLimit(root string) int64 {
	data, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return 0
	}
	var limit int64
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		// hierarchy-id:controllers:path; v2 is "0::/path".
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		var dir, file string
		switch {
		case f[0] == "0" && f[1] == "":
			dir, file = "sys/fs/cgroup", "memory.max"
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			dir, file = "sys/fs/cgroup/memory", "memory.limit_in_bytes"
		default:
			continue
		}
		// In a container the cgroup file system is often its own cgroup's, mounted at the
		// root: the path then does not exist below it, and the root's file is the one.
		for p := path.Clean("/" + f[2]); ; p = path.Dir(p) {
			if n := readLimit(filepath.Join(root, dir, p, file)); n > 0 && (limit == 0 || n < limit) {
				limit = n
			}
			if p == "/" {
				break
			}
		}
	}
	return limit
}

// readLimit reads a cgroup memory limit file; "max" and v1's page-rounded MaxInt64 are
// no limit (0).
func readLimit(name string) int64 {
	data, err := os.ReadFile(name)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0
	}
	return n
}
