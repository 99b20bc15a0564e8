package daemon

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// The following limit leaves the heap room above what the runtime counts against it,
// including the span space a fragmented heap cannot use: else the collector runs back to
// back (72 collections against 5 with GOGC alone, before it counted that space).
func TestMemoryLimitFollowsAFragmentedHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates about 560 MiB")
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	const n = 2_600_000 // 64-byte objects, one kept in four: ~40 MiB live in ~160 MiB of spans
	kept := make([]*[64]byte, 0, n/4)
	for i := 0; i < n; i++ {
		p := new([64]byte)
		if i%4 == 0 {
			kept = append(kept, p)
		}
	}
	runtime.GC()
	runtime.GC()
	gcs := func(follow bool) uint32 {
		if follow {
			memFollower.start(16 << 20)
			defer memFollower.stop()
			runtime.GC()
			time.Sleep(50 * time.Millisecond)
		} else {
			debug.SetMemoryLimit(1 << 62)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var sink *[4096]byte // 400 MiB of garbage in another size class
		for i := 0; i < 100_000; i++ {
			sink = new([4096]byte)
			sink[0] = byte(i)
		}
		_ = sink
		runtime.ReadMemStats(&after)
		t.Logf("follow %t: limit %d MiB, %d collections, GC CPU %.0f%%", follow, debug.SetMemoryLimit(-1)>>20, after.NumGC-before.NumGC, after.GCCPUFraction*100)
		return after.NumGC - before.NumGC
	}
	plain := gcs(false)
	followed := gcs(true)
	runtime.KeepAlive(kept)
	if followed > 4*plain+10 {
		t.Errorf("%d collections with the following limit for 400 MiB allocated over a live heap of 40 MiB, %d with GOGC alone", followed, plain)
	}
}
