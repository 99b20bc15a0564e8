package manifest

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/sources"
)

// benchWidgetType is the bench's Widget (internal/bench benchType): a schema with a default.
const benchWidgetType = `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Widget}
spec:
  group: bench.example.com
  versions:
    - name: v1
      schema:
        type: object
        required: [size]
        properties:
          size: {type: integer, minimum: 0}
          color: {type: string, default: blue}
  action: {name: act}
`

// benchGadgetType is a second kind of the bench's group, for revisions of two kinds.
const benchGadgetType = `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Gadget}
spec:
  group: bench.example.com
  versions:
    - name: v1
      schema: {type: object, properties: {size: {type: integer}}}
  action: {name: act}
`

// widgetRepo is the scale1m bench's repository (internal/bench writeScaleRepo) of n
// resources in files of 500.
func widgetRepo(n int) []sources.File {
	pairs := []string{"types/widget.yaml", benchWidgetType}
	for f := 0; f*500 < n; f++ {
		var b strings.Builder
		for i := f * 500; i < n && i < (f+1)*500; i++ {
			fmt.Fprintf(&b, "---\napiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: w%07d, namespace: ns%02d, labels: {team: t%d}}\nspec: {size: %d}\n", i, i%20, i%7, i)
		}
		pairs = append(pairs, fmt.Sprintf("widgets/w%04d.yaml", f), b.String())
	}
	return files(pairs...)
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkRetained100k reports what a Loader keeps per resource once a first sync of
// 100,000 resources is loaded and its Set handed back (the file data and the Set dropped, as
// the syncer does), when no load has come since: retained-B/resource.
func BenchmarkRetained100k(b *testing.B) {
	const n = 100_000
	for b.Loop() {
		before := liveHeap()
		fs := widgetRepo(n)
		l := NewLoader()
		l.compactAfter = 0 // the basis at rest
		set, err := l.Load(fs, Options{ReuseSet: true})
		if err != nil {
			b.Fatal(err)
		}
		fs = nil
		l.Release(set)
		set = nil
		after := liveHeap()
		if p := os.Getenv("TRUEUP_HEAP_PROFILE"); p != "" {
			// go tool pprof -sample_index=inuse_space: what the Loader and the Set hold.
			f, err := os.Create(p)
			if err != nil {
				b.Fatal(err)
			}
			if err := pprof.WriteHeapProfile(f); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
		runtime.KeepAlive(l)
		b.ReportMetric(float64(int64(after)-int64(before))/n, "retained-B/resource")
	}
}

// A Set's Spec shares its bytes with the Loader's cache, and the contract is to replace a
// Spec, never write into it; a full load still finds a cached check whose spec was written
// into (its hash no longer matches) and checks the resource again.
func TestSetSpecWriteHealsInAFullLoad(t *testing.T) {
	fs := widgetRepo(1000)
	l := NewLoader()
	set1, err := l.Load(fs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &set1.Resources[0]
	was, name := string(r.Spec), r.Name
	if err := json.Unmarshal([]byte(`{"x":0}`), &r.Spec); err != nil {
		t.Fatal(err)
	}
	gadget := strings.NewReplacer("Widget", "Gadget", "widget", "gadget").Replace(benchWidgetType)
	fs = append(fs, files("types/gadget.yaml", gadget)...)
	set2, err := l.Load(fs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r2 := range set2.Resources {
		if r2.Name == name {
			if string(r2.Spec) != was || HashJSON(r2.Spec) != r2.SpecHash {
				t.Fatalf("full load spec %s want %s", r2.Spec, was)
			}
			return
		}
	}
	t.Fatal("resource not found")
}

// BenchmarkFirstLoadPeak reports the largest live heap (peak-live-MB, as the collector
// measured it after each collection) of a syncer's first load of the scale1m bench's
// repository: TRUEUP_PEAK_RESOURCES resources (200,000 when unset), packed, the files' data
// given up, as the syncer loads. The files are built first and counted in the peak, as a
// fetched revision is in the server.
func BenchmarkFirstLoadPeak(b *testing.B) {
	n := 200_000
	if v := os.Getenv("TRUEUP_PEAK_RESOURCES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		fs := widgetRepo(n)
		base := liveHeap()
		var peak atomic.Uint64
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
			for {
				metrics.Read(s)
				if v := s[0].Value.Uint64(); v > peak.Load() {
					peak.Store(v)
				}
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
			}
		}()
		set, err := NewLoader().Load(fs, Options{ReuseSet: true, DropData: true, Packed: true, Limits: Limits{MaxResources: n, MaxDocuments: n + 1}})
		if err != nil {
			b.Fatal(err)
		}
		fs = nil
		liveHeap()
		close(stop)
		<-done
		if set.Len() != n {
			b.Fatalf("%d resources, want %d", set.Len(), n)
		}
		b.ReportMetric(float64(peak.Load())/(1<<20), "peak-live-MB")
		b.ReportMetric(float64(base)/(1<<20), "files-MB")
	}
}
