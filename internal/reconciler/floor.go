package reconciler

import "time"

// fullScanEvery bounds how long a row made due below the claims' floor waits when no
// notification of due work tells of it (a notification lost with its connection).
const fullScanEvery = time.Second

// dueFloor is where the claimer's scan of the due rows starts (store.ClaimFrom): at the
// run_at of the oldest row its last claim took. Rows are taken oldest first, so below that
// run_at lie only rows other claimers held locked then, rows committed since with an older
// run_at (a long apply's now(), a lease released by a peer, a dependency unblocked with the
// run_at it had) and the index entries of versions claimed since, which a transaction held
// open elsewhere keeps. A claim scans from the start when there is no floor yet, when it was
// woken by news of due work (the writers that make rows due at once notify, and so do a
// result that puts a row due at once, a reconnect and a resume), and at least every
// fullScanEvery, which bounds the wait of a row made due below the floor unannounced.
type dueFloor struct {
	at       time.Time // zero: none
	lastFull time.Time
}

// from returns the floor for a claim at now, notified when due work was announced since the
// last claim began; the zero time scans from the start.
func (f *dueFloor) from(now time.Time, notified bool) time.Time {
	if f.at.IsZero() || notified || now.Sub(f.lastFull) >= fullScanEvery {
		return time.Time{}
	}
	return f.at
}

// took records a claim made at now from floor, whose oldest row had run_at oldest (zero when
// it took none). A claim that took nothing keeps the floor: the rows above it are not due yet.
func (f *dueFloor) took(now, floor, oldest time.Time) {
	if floor.IsZero() {
		f.lastFull = now
	}
	if !oldest.IsZero() {
		f.at = oldest
	}
}
