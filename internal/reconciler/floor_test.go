package reconciler

import (
	"testing"
	"time"
)

func TestDueFloor(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	at := t0.Add(-3 * time.Second)
	for _, tc := range []struct {
		name     string
		floor    dueFloor
		now      time.Time
		notified bool
		want     time.Time
	}{
		{"no floor yet", dueFloor{lastFull: t0}, t0, false, time.Time{}},
		{"a floor, a scan from the start just now", dueFloor{at: at, lastFull: t0}, t0.Add(10 * time.Millisecond), false, at},
		{"notified", dueFloor{at: at, lastFull: t0}, t0.Add(10 * time.Millisecond), true, time.Time{}},
		{"a second since the last scan from the start", dueFloor{at: at, lastFull: t0}, t0.Add(fullScanEvery), false, time.Time{}},
		{"just under a second", dueFloor{at: at, lastFull: t0}, t0.Add(fullScanEvery - time.Millisecond), false, at},
		{"never scanned from the start", dueFloor{at: at}, t0, false, time.Time{}},
		{"a slow scan from the start: a second is not enough", dueFloor{at: at, lastFull: t0, fullTook: 100 * time.Millisecond}, t0.Add(fullScanEvery), false, at},
		{"a slow scan from the start: fifty times its time", dueFloor{at: at, lastFull: t0, fullTook: 100 * time.Millisecond}, t0.Add(5 * time.Second), false, time.Time{}},
		{"a slow scan from the start, notified", dueFloor{at: at, lastFull: t0, fullTook: 100 * time.Millisecond}, t0.Add(10 * time.Millisecond), true, time.Time{}},
		{"a quick scan from the start: a second", dueFloor{at: at, lastFull: t0, fullTook: 5 * time.Millisecond}, t0.Add(fullScanEvery), false, time.Time{}},
		{"a claim from the start that stalled: at most ten seconds", dueFloor{at: at, lastFull: t0, fullTook: 2 * time.Second}, t0.Add(fullScanAtMost), false, time.Time{}},
		{"a claim from the start that stalled, just under ten seconds", dueFloor{at: at, lastFull: t0, fullTook: 2 * time.Second}, t0.Add(fullScanAtMost - time.Millisecond), false, at},
	} {
		if got := tc.floor.from(tc.now, tc.notified); !got.Equal(tc.want) {
			t.Errorf("%s: from = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDueFloorTook(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	old, older := t0.Add(-2*time.Second), t0.Add(-5*time.Second)
	for _, tc := range []struct {
		name         string
		floor        dueFloor
		from, oldest time.Time
		took         time.Duration
		want         dueFloor
	}{
		{"a scan from the start sets the floor",
			dueFloor{}, time.Time{}, old, 3 * time.Millisecond, dueFloor{at: old, lastFull: t0, fullTook: 3 * time.Millisecond}},
		{"a scan from the floor moves it up",
			dueFloor{at: older, lastFull: t0.Add(-time.Millisecond), fullTook: time.Millisecond}, older, old, 7 * time.Millisecond,
			dueFloor{at: old, lastFull: t0.Add(-time.Millisecond), fullTook: time.Millisecond}},
		{"a scan from the start that takes nothing keeps the floor",
			dueFloor{at: old}, time.Time{}, time.Time{}, 90 * time.Millisecond, dueFloor{at: old, lastFull: t0, fullTook: 90 * time.Millisecond}},
		{"a scan from the floor that takes nothing keeps it",
			dueFloor{at: old, lastFull: t0.Add(-time.Millisecond)}, old, time.Time{}, time.Millisecond, dueFloor{at: old, lastFull: t0.Add(-time.Millisecond)}},
		{"a scan from the start may move the floor down",
			dueFloor{at: old}, time.Time{}, older, time.Millisecond, dueFloor{at: older, lastFull: t0, fullTook: time.Millisecond}},
	} {
		f := tc.floor
		f.took(t0, tc.from, tc.oldest, tc.took)
		if f != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, f, tc.want)
		}
	}
}

// A row made due below where the claims scan, with no notification (a lease released with an
// old run_at, a notification lost with its connection), is still taken: by the claim that
// scans from the start at least every fullScanEvery.
func TestClaimTakesARowDueBelowTheFloor(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	f := newGateFixture(t, callsOnly{rec})
	f.waitPhase("db", "Ready")
	f.waitPhase("other", "Ready")
	before := rec.count("reconcile db ")
	// Due an hour ago, below the run_at of every row claimed so far.
	if _, err := f.db.Exec(f.ctx, `UPDATE resource_queue SET run_at = now() - interval '1 hour', dirty = false
		WHERE id IN (SELECT id FROM resources WHERE name = 'db')`); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for rec.count("reconcile db ") == before {
		if time.Now().After(deadline) {
			t.Fatalf("db, due below the claims' floor, was not taken: %v", rec.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
