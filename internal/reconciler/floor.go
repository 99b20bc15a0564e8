package reconciler

import "time"

// fullScanEvery bounds how long a row made due below the claims' floor waits when no
// notification of due work tells of it (a notification lost with its connection), while a
// scan from the start is quick.
const fullScanEvery = time.Second

// fullScanShare bounds the claimer's time spent in periodic scans from the start to about
// one part in fullScanShare: after a claim from the start that took d (its two statements
// and commit), the next periodic one waits at least fullScanShare·d. Such a scan passes the
// index entries of every version claimed since the oldest due row, which a transaction held
// open elsewhere keeps: with 20,000 rows resyncing continuously it takes about 0.1 s after
// half a minute, and the claimer claims nothing meanwhile.
const fullScanShare = 50

// fullScanAtMost bounds the period of the scans from the start whatever the last one took (a
// claim that waited on a busy pool or a failover counts its wait).
const fullScanAtMost = 10 * time.Second

// dueFloor is where the claimer's scan of the due rows starts (store.ClaimFrom): at the
// run_at of the oldest row its last claim took. Rows are taken oldest first, so below that
// run_at lie only rows other claimers held locked then, rows committed since with an older
// run_at (a long apply's now(), a lease released by a peer, a dependency unblocked with the
// run_at it had) and the index entries of versions claimed since, which a transaction held
// open elsewhere keeps. A claim scans from the start when there is no floor yet, when it was
// woken by news of due work (the writers that make rows due at once notify, and so do a
// result that puts a row due at once, a reconnect and a resume), and periodically (every),
// which bounds the wait of a row made due below the floor unannounced.
type dueFloor struct {
	at       time.Time // zero: none
	lastFull time.Time
	fullTook time.Duration // how long the last scan from the start took
}

// every is the period of the scans from the start: fullScanEvery, longer when they are slow,
// at most fullScanAtMost.
func (f *dueFloor) every() time.Duration {
	return min(max(fullScanEvery, fullScanShare*f.fullTook), fullScanAtMost)
}

// nextFull is when the next periodic scan from the start is due.
func (f *dueFloor) nextFull() time.Time { return f.lastFull.Add(f.every()) }

// from returns the floor for a claim at now, notified when due work was announced since the
// last claim began; the zero time scans from the start.
func (f *dueFloor) from(now time.Time, notified bool) time.Time {
	if f.at.IsZero() || notified || !now.Before(f.nextFull()) {
		return time.Time{}
	}
	return f.at
}

// took records a claim made at now from floor that took d, whose oldest row had run_at
// oldest (zero when it took none). A claim that took nothing keeps the floor: the rows above
// it are not due yet.
func (f *dueFloor) took(now, floor, oldest time.Time, d time.Duration) {
	if floor.IsZero() {
		f.lastFull, f.fullTook = now, d
	}
	if !oldest.IsZero() {
		f.at = oldest
	}
}
