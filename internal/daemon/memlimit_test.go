package daemon

import (
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/config"
)

func TestCgroupMemoryLimit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		cgroup string
		files  map[string]string
		want   int64
	}{
		{"v2 container, namespaced", "0::/\n", map[string]string{"sys/fs/cgroup/memory.max": "536870912\n"}, 512 << 20},
		{"v2 unlimited", "0::/\n", map[string]string{"sys/fs/cgroup/memory.max": "max\n"}, 0},
		{"v2 systemd service, parent smaller", "0::/system.slice/trueup.service\n", map[string]string{
			"sys/fs/cgroup/system.slice/trueup.service/memory.max": "1073741824",
			"sys/fs/cgroup/system.slice/memory.max":                "268435456",
			"sys/fs/cgroup/memory.max":                             "max",
		}, 256 << 20},
		{"v1, path not mounted in the container", "12:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n", map[string]string{
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "268435456",
		}, 256 << 20},
		{"v1 unlimited", "4:memory:/\n", map[string]string{"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712"}, 0},
		{"no cgroup files", "0::/\n", nil, 0},
	}
	for _, tc := range cases {
		root := t.TempDir()
		if tc.files == nil {
			tc.files = map[string]string{}
		}
		tc.files["proc/self/cgroup"] = tc.cgroup
		for name, data := range tc.files {
			p := filepath.Join(root, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got := cgroupMemoryLimit(root); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestMemoryLimitFollowsTheHeap: without a container limit the soft limit is a floor that
// rises with the live heap after each collection, so that a heap larger than the floor
// never keeps the collector running, and comes back down when the heap does.
func TestMemoryLimitFollowsTheHeap(t *testing.T) {
	// Not parallel: the limit is the process's.
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	const mib = 1 << 20
	limitAfterGC := func(ok func(int64) bool) int64 {
		t.Helper()
		var got int64
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			runtime.GC() // the cleanup runs after the collection, on its own goroutine
			if got = debug.SetMemoryLimit(-1); ok(got) {
				return got
			}
		}
		t.Fatalf("limit %d MiB after collections", got>>20)
		return 0
	}
	memFollower.start(32 * mib)
	defer memFollower.stop()

	live := make([][]byte, 96)
	for i := range live {
		live[i] = make([]byte, mib)
		live[i][0] = 1
	}
	got := limitAfterGC(func(l int64) bool { return l >= 96*mib*3/2 })
	if got > 400*mib {
		t.Errorf("limit %d MiB for a live heap of about 100 MiB, want about 150", got>>20)
	}
	runtime.KeepAlive(live)
	live = nil

	// The heap shrinks: the limit follows it down to the floor.
	limitAfterGC(func(l int64) bool { return l < 96*mib })
	runtime.KeepAlive(live)

	// Stopped (a configured limit): collections leave the limit as set.
	memFollower.stop()
	debug.SetMemoryLimit(77 * mib)
	runtime.GC()
	runtime.GC()
	time.Sleep(100 * time.Millisecond)
	if got := debug.SetMemoryLimit(-1); got != 77*mib {
		t.Errorf("limit %d MiB after stop, want 77", got>>20)
	}
}

// memoryLimit: off after auto stops the following.
func TestMemoryLimitOffStopsFollowing(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer memFollower.stop()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	t.Setenv("GOMEMLIMIT", "")
	setMemoryLimit(&config.Config{}, log) // auto, no container: follows
	off := &config.Config{}
	off.Server.MemoryLimit = config.MemoryLimit{Off: true}
	debug.SetMemoryLimit(math.MaxInt64)
	setMemoryLimit(off, log)
	runtime.GC()
	runtime.GC()
	time.Sleep(100 * time.Millisecond)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("memoryLimit: off, limit %d MiB", got>>20)
	}
}

// A limit set by someone else (a test, a library) ends the following.
func TestMemoryLimitSetElsewhereStays(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer memFollower.stop()
	memFollower.start(config.DefaultMemoryLimit)
	debug.SetMemoryLimit(1 << 30)
	runtime.GC()
	runtime.GC()
	time.Sleep(100 * time.Millisecond)
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("limit set elsewhere to 1024 MiB, %d MiB after a collection", got>>20)
	}
}

// A daemon's Stop ends the following it started, not one a later daemon started.
func TestMemoryLimitFollowingEndsWithItsStarter(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer memFollower.stop()
	first := memFollower.start(config.DefaultMemoryLimit)
	second := memFollower.start(config.DefaultMemoryLimit)
	memFollower.stopFor(first)
	if !memFollower.following() {
		t.Fatal("the first starter's stop ended the second's following")
	}
	memFollower.stopFor(second)
	if memFollower.following() {
		t.Fatal("following after its starter stopped")
	}
}
