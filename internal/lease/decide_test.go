package lease

import (
	"errors"
	"testing"
	"time"
)

func TestNext(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	valid, expired := now.Add(time.Second), now.Add(-time.Millisecond)
	down := errors.New("connection refused")
	for _, tc := range []struct {
		name     string
		held     bool
		heldTerm int64
		until    time.Time
		ok       bool
		term     int64
		err      error
		want     Change
	}{
		{"free lease taken", false, 0, time.Time{}, true, 1, nil, Taken},
		{"other holder, not held", false, 0, time.Time{}, false, 0, nil, None},
		{"database down, not held", false, 0, time.Time{}, false, 0, down, None},
		{"renewed, same term", true, 3, valid, true, 3, nil, Renewed},
		{"renewed late, same term: nobody took it", true, 3, expired, true, 3, nil, Renewed},
		{"retaken under a new term", true, 3, expired, true, 5, nil, Taken},
		{"other holder took it", true, 3, expired, false, 0, nil, Lost},
		{"other holder while we thought it valid", true, 3, valid, false, 0, nil, Lost},
		{"database down, lease still valid", true, 3, valid, false, 0, down, Kept},
		{"database down, lease ran out", true, 3, expired, false, 0, down, Lost},
		{"database down at the very end", true, 3, now, false, 0, down, Lost},
	} {
		if got := Next(tc.held, tc.heldTerm, tc.until, now, tc.ok, tc.term, tc.err); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestRenewDelay(t *testing.T) {
	t.Parallel()
	const ttl = 15 * time.Second
	now := time.Unix(1000, 0)
	for _, tc := range []struct {
		name   string
		change Change
		until  time.Time
		want   time.Duration
	}{
		{"renewed: a third of the TTL", Renewed, now.Add(ttl), 5 * time.Second},
		{"taken", Taken, now.Add(ttl), 5 * time.Second},
		{"not held", None, time.Time{}, 5 * time.Second},
		{"lost", Lost, time.Time{}, 5 * time.Second},
		{"kept, plenty left", Kept, now.Add(10 * time.Second), 5 * time.Second},
		{"kept, 2s left: retry when it runs out", Kept, now.Add(2 * time.Second), 2 * time.Second},
		{"kept, already out: retry at once", Kept, now.Add(-time.Second), time.Millisecond},
	} {
		if got := RenewDelay(ttl, tc.change, tc.until, now); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
