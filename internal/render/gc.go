package render

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// renderGCPercent is the collector's GOGC while renders run, at most: kustomize allocates
// about 80 KB per resource, nearly all of it garbage by the end of the kustomization, and
// with the default GOGC and a small live heap the collector runs every few megabytes and
// takes a fifth of a render's CPU. At 1600 a render of 10,000 resources collects 4 times
// instead of 13 at 400; renderHeapBudget is what bounds the heap in practice.
const renderGCPercent = 1600

// renderHeapBudget bounds what the raised GOGC lets the heap grow beyond what the process's
// own GOGC lets it (the soft memory limit, server.memoryLimit, bounds it too).
const renderHeapBudget = 256 << 20

// gcRenders counts the renders running; the first raises GOGC, the last puts it back. While
// renders run, GOGC follows the live heap: it is computed again when a render starts and
// after every collection, so that the bound of renderHeapBudget holds as the heap grows.
type gcRenders struct {
	sync.Mutex
	renders int
	prev    int  // the process's GOGC, to put back
	set     int  // the GOGC in force while renders run
	managed bool // whether renders set GOGC (the metrics, a collector on, no GOGC set by others)
	armed   bool // whether a sentinel waits for the next collection
}

var gcRaise gcRenders

// raiseGC raises GOGC for a render (see gcPercentFor); the function it returns puts it back
// when no other render runs.
func raiseGC() (restore func()) {
	g := &gcRaise
	g.Lock()
	defer g.Unlock()
	if g.renders == 0 {
		// A runtime without the metrics leaves GOGC alone, and so does an off collector.
		var ok bool
		g.prev, ok = gcPercent()
		g.set, g.managed = g.prev, ok && g.prev >= 0 && g.prev < renderGCPercent
	}
	g.renders++
	g.adjust()
	return g.done
}

// adjust sets GOGC for the live heap and arms a sentinel that adjusts it again after the
// next collection. A GOGC that someone else sets while renders run stays: the renders leave
// it alone from then on. The caller holds g.
func (g *gcRenders) adjust() {
	if g.renders == 0 || !g.managed {
		return
	}
	live, ok := heapLive()
	if cur, known := gcPercent(); !ok || !known || cur != g.set {
		g.managed = false
		return
	}
	if p := gcPercentFor(g.prev, live); p != g.set {
		if !g.setPercent(p) {
			return
		}
	}
	if !g.armed {
		g.armed = true
		// Not a tiny object, which the runtime may batch with live ones (and never clean up).
		runtime.AddCleanup(new([64]byte), (*gcRenders).collected, g)
	}
}

// collected runs after a collection found the sentinel unreachable.
func (g *gcRenders) collected() {
	g.Lock()
	defer g.Unlock()
	g.armed = false
	g.adjust()
}

// done ends a render: the last one puts GOGC back.
func (g *gcRenders) done() {
	g.Lock()
	defer g.Unlock()
	g.renders--
	if g.renders == 0 && g.managed && g.set != g.prev {
		g.setPercent(g.prev)
	}
}

// setPercent sets GOGC to p unless someone else has set it since the renders last did: then
// it puts theirs back, leaves it from then on and reports false. The caller holds g.
func (g *gcRenders) setPercent(p int) bool {
	if old := debug.SetGCPercent(p); old != g.set {
		debug.SetGCPercent(old)
		g.managed = false
		return false
	}
	g.set = p
	return true
}

// gcPercent is GOGC (-1 when the collector is off), if the runtime has the metric.
func gcPercent() (int, bool) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0, false
	}
	return int(int64(s[0].Value.Uint64())), true
}

// heapLive is the heap that the collector's goal is proportional to, as of the last
// collection: the live heap, the stacks and the globals (goal = live + that × GOGC/100).
func heapLive() (uint64, bool) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}}
	metrics.Read(s)
	var n uint64
	for _, v := range s {
		if v.Value.Kind() != metrics.KindUint64 {
			return 0, false
		}
		n += v.Value.Uint64()
	}
	return n, true
}

// gcPercentFor is the GOGC a render runs with given the process's (prev, negative when the
// collector is off) and the heap the goal is proportional to (see heapLive): renderGCPercent
// as long as the heap it allows beyond prev's stays within renderHeapBudget, less when the
// live heap is large, never below prev.
func gcPercentFor(prev int, live uint64) int {
	if prev < 0 || prev >= renderGCPercent {
		return prev
	}
	if live == 0 {
		return renderGCPercent
	}
	return int(min(renderGCPercent, uint64(prev)+renderHeapBudget*100/live))
}
