package syncer

import (
	"testing"
	"time"
)

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
