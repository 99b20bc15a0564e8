package render

import (
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// renderGCPercent is the collector's GOGC while renders run, at most: kustomize allocates
// about 80 KB per resource, nearly all of it garbage by the end of the kustomization, and
// with the default GOGC and a small live heap the collector runs every few megabytes and
// takes a fifth of a render's CPU (a twentieth at 400).
const renderGCPercent = 400

// renderHeapBudget bounds what the raised GOGC lets the heap grow beyond what the process's
// own GOGC lets it (the soft memory limit, server.memoryLimit, bounds it too).
const renderHeapBudget = 256 << 20

// gcRenders counts the renders running; the first raises GOGC, the last puts it back.
type gcRenders struct {
	sync.Mutex
	renders int
	prev    int  // the GOGC to put back
	raised  bool // whether the first render changed it
}

var gcRaise gcRenders

// raiseGC raises GOGC for a render (see gcPercentFor); the function it returns puts it back
// when no other render runs.
func raiseGC() (restore func()) {
	gcRaise.Lock()
	defer gcRaise.Unlock()
	if gcRaise.renders == 0 {
		gcRaise.raised = false
		s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		// A runtime without these metrics leaves GOGC alone.
		if s[0].Value.Kind() == metrics.KindUint64 && s[1].Value.Kind() == metrics.KindUint64 {
			prev := int(int64(s[0].Value.Uint64())) // -1 when the collector is off
			if p := gcPercentFor(prev, s[1].Value.Uint64()); p != prev {
				gcRaise.prev, gcRaise.raised = debug.SetGCPercent(p), true
			}
		}
	}
	gcRaise.renders++
	return gcRaise.done
}

// done ends a render: the last one puts GOGC back.
func (g *gcRenders) done() {
	g.Lock()
	defer g.Unlock()
	g.renders--
	if g.renders == 0 && g.raised {
		debug.SetGCPercent(g.prev)
	}
}

// gcPercentFor is the GOGC a render runs with given the process's (prev, negative when the
// collector is off) and the live heap: renderGCPercent as long as the heap it allows beyond
// prev's stays within renderHeapBudget, less when the live heap is large, never below prev.
func gcPercentFor(prev int, live uint64) int {
	if prev < 0 || prev >= renderGCPercent {
		return prev
	}
	if live == 0 {
		return renderGCPercent
	}
	return int(min(renderGCPercent, uint64(prev)+renderHeapBudget*100/live))
}
