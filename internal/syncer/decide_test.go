package syncer

import (
	"errors"
	"testing"
	"time"
)

func TestNextLease(t *testing.T) {
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
		want     leaseChange
	}{
		{"free lease taken", false, 0, time.Time{}, true, 1, nil, leaseTaken},
		{"other holder, not held", false, 0, time.Time{}, false, 0, nil, leaseNone},
		{"database down, not held", false, 0, time.Time{}, false, 0, down, leaseNone},
		{"renewed, same term", true, 3, valid, true, 3, nil, leaseRenewed},
		{"renewed late, same term: nobody took it", true, 3, expired, true, 3, nil, leaseRenewed},
		{"retaken under a new term", true, 3, expired, true, 5, nil, leaseTaken},
		{"other holder took it", true, 3, expired, false, 0, nil, leaseLost},
		{"other holder while we thought it valid", true, 3, valid, false, 0, nil, leaseLost},
		{"database down, lease still valid", true, 3, valid, false, 0, down, leaseKept},
		{"database down, lease ran out", true, 3, expired, false, 0, down, leaseLost},
		{"database down at the very end", true, 3, now, false, 0, down, leaseLost},
	} {
		if got := nextLease(tc.held, tc.heldTerm, tc.until, now, tc.ok, tc.term, tc.err); got != tc.want {
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
		change leaseChange
		until  time.Time
		want   time.Duration
	}{
		{"renewed: a third of the TTL", leaseRenewed, now.Add(ttl), 5 * time.Second},
		{"taken", leaseTaken, now.Add(ttl), 5 * time.Second},
		{"not held", leaseNone, time.Time{}, 5 * time.Second},
		{"lost", leaseLost, time.Time{}, 5 * time.Second},
		{"kept, plenty left", leaseKept, now.Add(10 * time.Second), 5 * time.Second},
		{"kept, 2s left: retry when it runs out", leaseKept, now.Add(2 * time.Second), 2 * time.Second},
		{"kept, already out: retry at once", leaseKept, now.Add(-time.Second), time.Millisecond},
	} {
		if got := renewDelay(ttl, tc.change, tc.until, now); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		head string
		mem  memory
		want plan
	}{
		{"first sync", "a", memory{}, planApply},
		{"head applied", "a", memory{applied: "a"}, planSkip},
		{"head moved", "b", memory{applied: "a"}, planApply},
		{"head rejected: not retried", "b", memory{applied: "a", rejected: "b", lastFailure: "b rejected"}, planSkip},
		{"head moved past the rejected one", "c", memory{applied: "a", rejected: "b", lastFailure: "b rejected"}, planApply},
		{"back to the applied one after a rejection", "a", memory{applied: "a", rejected: "b", lastFailure: "b rejected"}, planRecover},
		{"applied one again after a failed fetch", "a", memory{applied: "a", lastFailure: "read head: timeout"}, planRecover},
		{"new head after a failed fetch", "b", memory{applied: "a", lastFailure: "read head: timeout"}, planApply},
		{"suspended: the held head is not fetched again", "b", memory{applied: "a", held: "b"}, planSkip},
		{"suspended: a newer head is validated and held in its turn", "c", memory{applied: "a", held: "b"}, planApply},
		{"resumed (held cleared): the head is applied", "b", memory{applied: "a"}, planApply},
	} {
		if got := decide(tc.head, tc.mem); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestRecordFailure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		msg, last string
		want      bool
	}{
		{"fetch failed", "", true},
		{"fetch failed", "fetch failed", false},
		{"fetch failed again", "fetch failed", true},
	} {
		if got := recordFailure(tc.msg, memory{lastFailure: tc.last}); got != tc.want {
			t.Errorf("recordFailure(%q after %q) = %v", tc.msg, tc.last, got)
		}
	}
}

func TestJitterBounds(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{time.Nanosecond, 9 * time.Nanosecond, time.Second, time.Minute} {
		for range 1000 {
			if j := jitter(d); j < d || j > d+d/10 {
				t.Fatalf("jitter(%s) = %s, want within [d, d+10%%]", d, j)
			}
		}
	}
}
