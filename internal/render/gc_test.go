package render

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		prev int
		live uint64
		want int
	}{
		{100, 0, 1600},
		{100, 10 << 20, 1600},
		{100, 16 << 20, 1600},
		{100, 32 << 20, 900},  // 256 MiB beyond the 32 MiB that GOGC=100 allows
		{100, 64 << 20, 500},  // … beyond 64 MiB
		{100, 128 << 20, 300}, // … beyond 128 MiB
		{100, 1 << 30, 125},
		{100, 16 << 30, 101},
		{50, 512 << 20, 100},
		{400, 1 << 20, 1600},
		{2000, 1 << 20, 2000}, // never below the process's own
		{-1, 1 << 20, -1},     // the collector off stays off
	} {
		if got := gcPercentFor(c.prev, c.live); got != c.want {
			t.Errorf("gcPercentFor(%d, %d MiB) = %d, want %d", c.prev, c.live>>20, got, c.want)
		}
	}
}

func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(int64(s[0].Value.Uint64()))
}

// TestRaiseGCPutsBack: GOGC is raised while renders run and put back when the last ends;
// one set by someone else while they run stays; an off collector stays off. Not parallel: GOGC is the process's.
func TestRaiseGCPutsBack(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	runtime.GC() // the live heap of the last collection is the test's
	// The budget may hold GOGC below renderGCPercent when earlier tests left a larger heap
	// (kustomize's OpenAPI schema is about 10 MB of it); any raise shows the wiring.
	live, _ := heapLive()
	want := gcPercentFor(100, live)
	if want <= 100 {
		t.Fatalf("with %d MiB live no raise is possible (GOGC %d)", live>>20, want)
	}
	first := raiseGC()
	if got := gogc(); got != want {
		t.Fatalf("GOGC %d during a render, want %d", got, want)
	}
	second := raiseGC()
	first()
	if got := gogc(); got != want {
		t.Fatalf("GOGC %d while a second render runs, want %d", got, want)
	}
	second()
	if got := gogc(); got != 100 {
		t.Fatalf("GOGC %d after the renders, want 100", got)
	}
	// Renders starting and ending at once: GOGC is put back once the last ends.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				raiseGC()()
			}
		})
	}
	wg.Wait()
	if got := gogc(); got != 100 {
		t.Fatalf("GOGC %d after concurrent renders, want 100", got)
	}
	// A GOGC someone else sets while renders run stays, for the renders that join and after
	// the last.
	first, second = raiseGC(), nil
	debug.SetGCPercent(150)
	second = raiseGC()
	if got := gogc(); got != 150 {
		t.Fatalf("GOGC %d after a render joins, want the 150 set while renders run", got)
	}
	runtime.GC()
	first()
	second()
	if got := gogc(); got != 150 {
		t.Fatalf("GOGC %d after the renders, want the 150 set while they ran", got)
	}
	debug.SetGCPercent(100)
	debug.SetGCPercent(-1)
	off := raiseGC()
	if got := gogc(); got != -1 {
		t.Fatalf("GOGC %d during a render with the collector off, want -1", got)
	}
	off()
	if got := gogc(); got != -1 {
		t.Fatalf("GOGC %d after a render with the collector off, want -1", got)
	}
}

// TestRaiseGCFollowsTheHeap: the heap GOGC allows while renders run stays within
// renderHeapBudget beyond what the process's own GOGC allows as the live heap grows during
// the renders, and for a render that joins them. Not parallel: GOGC is the process's.
func TestRaiseGCFollowsTheHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer runtime.GC() // the tests after run with a small heap again
	runtime.GC()
	live, _ := heapLive()
	first := raiseGC()
	defer func() { first() }()
	if got, want := gogc(), gcPercentFor(100, live); got != want || got <= 100 {
		t.Fatalf("GOGC %d during a render with %d MiB live, want %d (above 100)", got, live>>20, want)
	}
	held := make([]byte, 128<<20) // the live heap grows while the render runs
	within := func() (beyond uint64, ok bool) {
		s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"},
			{Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}}
		metrics.Read(s)
		goal, live := s[0].Value.Uint64(), s[1].Value.Uint64()
		own := live + live + s[2].Value.Uint64() + s[3].Value.Uint64() // GOGC=100's goal
		return goal - own, goal <= own+renderHeapBudget
	}
	// The GOGC follows after a collection; the sentinel that adjusts it runs after the
	// collection that finds it unreachable.
	for deadline := time.Now().Add(time.Minute); ; {
		runtime.GC()
		if _, ok := within(); ok {
			break
		}
		if time.Now().After(deadline) {
			b, _ := within()
			t.Fatalf("with 128 MiB live the heap goal is %d MiB beyond GOGC=100's (GOGC %d), more than %d MiB",
				b>>20, gogc(), renderHeapBudget>>20)
		}
	}
	second := raiseGC() // a render that joins keeps the bound
	if _, ok := within(); !ok {
		t.Fatalf("GOGC %d after a render joins, beyond the budget", gogc())
	}
	second()
	runtime.KeepAlive(held)
	first()
	first = func() {}
	if got := gogc(); got != 100 {
		t.Fatalf("GOGC %d after the renders, want 100", got)
	}
}
