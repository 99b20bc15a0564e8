package store

import (
	"context"
	"testing"
	"time"
)

// TestHistoryTraceIDs: one batch mixing sampled attempts (a trace id) and unsampled ones (none)
// stores NULL for the latter, and reads back "" for them and the id for the others; a batch
// with no trace id at all stores NULL throughout.
func TestHistoryTraceIDs(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	now := time.Now()
	row := func(gen int64, traceID string) HistoryEntry {
		return HistoryEntry{UID: "6f1c3a1e-8d7b-4c1e-9f1a-2b3c4d5e6f70", Namespace: "ns", Kind: "App", Name: "web", Generation: gen,
			Operation: "reconcile", Trigger: "created", Result: "Succeeded", StartedAt: now, FinishedAt: now, TraceID: traceID}
	}
	const a, b = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7a3ce929d0e0e4736"
	if err := insertHistoryBatch(ctx, st.pool, []HistoryEntry{row(1, a), row(2, ""), row(3, b), row(4, "")}); err != nil {
		t.Fatal(err)
	}
	if err := insertHistoryBatch(ctx, st.pool, []HistoryEntry{row(5, ""), row(6, "")}); err != nil {
		t.Fatal(err)
	}
	hs, err := st.ListHistory(ctx, "ns", "App", "web", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]string{1: a, 2: "", 3: b, 4: "", 5: "", 6: ""}
	if len(hs) != len(want) {
		t.Fatalf("%d rows, want %d", len(hs), len(want))
	}
	for _, h := range hs {
		if h.TraceID != want[h.Generation] {
			t.Errorf("generation %d: trace id %q, want %q", h.Generation, h.TraceID, want[h.Generation])
		}
	}
	var nulls int
	if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM reconcile_history WHERE name = 'web' AND trace_id IS NULL`).Scan(&nulls); err != nil {
		t.Fatal(err)
	}
	if nulls != 4 {
		t.Errorf("%d rows with a NULL trace_id, want 4 (never an empty string)", nulls)
	}
}
