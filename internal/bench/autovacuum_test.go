package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAutovacuumCPU: autovacuumCPU adds up the CPU of each automatic run that PostgreSQL 15
// logs (aggressive and anti-wraparound runs too), per kind and table, and skips what is not
// one.
func TestAutovacuumCPU(t *testing.T) {
	t.Parallel()
	log := `2026-11-28 02:30:01.000 UTC [100] LOG:  automatic vacuum of table "trueup.public.resources": index scans: 1
	pages: 0 removed, 5000 remain, 5000 scanned (100.00% of total)
	system usage: CPU: user: 2.50 s, system: 0.25 s, elapsed: 10.00 s
2026-11-28 02:30:05.000 UTC [101] LOG:  automatic analyze of table "trueup.public.resources"
	system usage: CPU: user: 0.10 s, system: 0.00 s, elapsed: 0.20 s
2026-11-28 02:30:09.000 UTC [102] LOG:  checkpoint complete: wrote 10 buffers
	system usage: CPU: user: 9.00 s, system: 9.00 s, elapsed: 9.00 s
2026-11-28 02:31:01.000 UTC [103] LOG:  automatic vacuum of table "trueup.public.resources": index scans: 1
	system usage: CPU: user: 1.00 s, system: 0.50 s, elapsed: 3.00 s
2026-11-28 02:31:02.000 UTC [104] LOG:  automatic vacuum of table "trueup.public.events": index scans: 0
	system usage: CPU: user: 0.01 s, system: 0.02 s, elapsed: 0.05 s
2026-11-28 02:32:00.000 UTC [105] LOG:  automatic aggressive vacuum to prevent wraparound of table "trueup.public.resources": index scans: 0
	system usage: CPU: user: 0.40 s, system: 0.10 s, elapsed: 1.00 s
`
	path := filepath.Join(t.TempDir(), "postgres.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := autovacuumCPU(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"vacuum public.resources": 4.75, "analyze public.resources": 0.10, "vacuum public.events": 0.03}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, w := range want {
		if d := got[k] - w; d > 1e-9 || d < -1e-9 {
			t.Fatalf("%s: got %v, want %v (all: %v)", k, got[k], w, got)
		}
	}
	if s := got.String(); s != "4.9 s in all; of which analyze public.resources 0.1 s, vacuum public.resources 4.8 s" {
		t.Fatalf("String: %q", s)
	}
}
