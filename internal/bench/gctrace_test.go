package main

import (
	"strings"
	"testing"
)

// TestGCTrace: the runtime's collection lines, whole or split across writes, become samples
// of the live heap; every other line goes to the logs, in order; peak finds the largest in a
// range of collections.
func TestGCTrace(t *testing.T) {
	t.Parallel()
	out := "time=2026-11-29T13:45:41.905Z level=INFO msg=\"memory limit\" limit_mib=128\n" +
		"gc 1 @0.012s 5%: 0.82+3.7+0.013 ms clock, 1.6+1.3/0.53/0.70+0.026 ms cpu, 3->4->2 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P\n" +
		"gc 55 @6.555s 11%: 0.20+329+0.032 ms clock, 0.41+3.6/174/152+0.065 ms cpu, 462->535->445 MB, 586 MB goal, 0 MB stacks, 0 MB globals, 2 P\n" +
		"time=2026-11-29T13:45:49.000Z level=INFO msg=\"applied revision\" load_ms=9000\n" +
		"gc 64 @16.192s 11%: 0.13+250+0.22 ms clock, 0.27+6.4/125/0+0.44 ms cpu, 717->746->348 MB, 717 MB goal, 0 MB stacks, 0 MB globals, 2 P\n" +
		"gc 65 @16.736s 11%: 0.15+162+0.007 ms clock, 0.31+187/132/0+0.015 ms cpu, 409->409->399 MB, 506 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)\n" +
		"gc 7 @1.0s: a line the runtime never writes\n" +
		// A log record written while the runtime wrote a collection's line a field at a time.
		"gc 66 @17.001s 10%: 0.1+1+0.01 ms clock, 0.2+1/2/3+0.02 ms cpu, 24->26->26 MB, time=2026-11-29T13:45:59.000Z msg=torn\n" +
		"gc 67 @17.5s 10time=2026-11-29T13:46:00.000Z msg=\"applied revision\" load_ms=10\n" +
		"%: 0.045+1+0.01 ms clock, 0.1+1/2/3+0.02 ms cpu, 95->105->21 MB, 110 MB goal, 0 MB stacks, 0 MB globals, 2 P\n"
	logs := &tailBuffer{max: 1 << 20}
	g := &gcTrace{logs: logs}
	for rest := out; rest != ""; {
		n := min(len(rest), 37) // writes that end mid-line
		if _, err := g.Write([]byte(rest[:n])); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
	}
	want := []gcSample{{0.012, 2}, {6.555, 445}, {16.192, 348}, {16.736, 399}}
	if len(g.runs) != len(want) {
		t.Fatalf("samples %v, want %v", g.runs, want)
	}
	for i := range want {
		if g.runs[i] != want[i] {
			t.Fatalf("sample %d: %v, want %v", i, g.runs[i], want[i])
		}
	}
	if got := logs.String(); !strings.HasPrefix(got, "time=2026-11-29T13:45:41.905Z") ||
		!strings.Contains(got, "msg=\"applied revision\" load_ms=9000\ngc 7 @1.0s: a line") || strings.Contains(got, "409->409->399") ||
		!strings.Contains(got, "msg=torn\n") || !strings.Contains(got, "msg=\"applied revision\" load_ms=10\n") {
		t.Fatalf("logs:\n%s", got)
	}
	if p, ok := g.peak(0, 3); !ok || p.liveMB != 445 || p.String() != "445 MB at 6.6 s" {
		t.Fatalf("peak of the first three: %v %t", p, ok)
	}
	if p, ok := g.peak(3, -1); !ok || p.liveMB != 399 {
		t.Fatalf("peak from the fourth: %v %t", p, ok)
	}
	if _, ok := g.peak(4, -1); ok {
		t.Fatal("a peak of no collection")
	}
}
