package main

import (
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/wire"
)

// TestSynced names what `sync --wait` accepts as a sync done after its request: a poll
// alone (published when the head is read, before the fetch and apply) is not.
func TestSynced(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	before, after := at.Add(-time.Second), at.Add(time.Second)
	ready := func(ts time.Time) []status.Condition {
		return []status.Condition{{Type: status.Ready, Status: status.True, LastTransitionTime: ts}}
	}
	for _, tc := range []struct {
		name string
		src  wire.Source
		want bool
	}{
		{"nothing since", wire.Source{LastSyncTime: &before, LastPollTime: &before, Conditions: ready(before)}, false},
		{"polled only: the apply is still running", wire.Source{LastSyncTime: &before, LastPollTime: &after, Conditions: ready(before)}, false},
		{"a sync begun before the request completed", wire.Source{LastPollTime: &after, LastCompletedSyncTime: &before, Conditions: ready(before)}, false},
		{"a sync begun after it completed", wire.Source{LastPollTime: &after, LastCompletedSyncTime: &after, Conditions: ready(before)}, true},
		{"a revision applied", wire.Source{LastSyncTime: &after, Conditions: ready(before)}, true},
		{"a failure recorded", wire.Source{Conditions: []status.Condition{{Type: status.Ready, Status: status.False, LastTransitionTime: after}}}, true},
	} {
		if got := synced(tc.src, at); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
