package reconciler

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/store"
)

func TestClaimSize(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name                  string
		workers, busy, queued int
		avg                   time.Duration
		want                  int
	}{
		{"short calls, all idle: fill workers and queue", 16, 0, 0, 10 * ms, 32},
		{"short calls, half busy, nothing queued", 16, 8, 0, 10 * ms, 24},
		{"short calls, all busy, queue full", 16, 16, 16, 10 * ms, 0},
		{"short calls, all busy, a few queued: wait for a larger claim", 16, 16, 10, 10 * ms, 0},
		{"short calls, all busy, half the queue free: claim", 16, 16, 8, 10 * ms, 8},
		{"short calls, queued items cover the idle worker", 16, 15, 12, 10 * ms, 0},
		{"short calls, one idle worker: claim for it and the queue", 16, 15, 0, 10 * ms, 17},
		{"tiny calls: claim up to maxOutstanding", 16, 0, 0, 100 * time.Microsecond, maxOutstanding},
		{"tiny calls, many queued", 16, 16, 200, 100 * time.Microsecond, maxOutstanding - 216},
		{"tiny calls, queue nearly full: wait", 16, 16, maxOutstanding - 20, 100 * time.Microsecond, 0},
		{"tiny calls, more workers than maxOutstanding/2", 200, 0, 0, 100 * time.Microsecond, 400},
		{"long calls: only idle workers", 16, 10, 0, time.Second, 6},
		{"long calls: none idle", 16, 16, 0, time.Second, 0},
		{"long calls: queued items count against idle", 16, 10, 6, time.Second, 0},
		{"one worker, short calls", 1, 0, 0, 10 * ms, 2},
		{"one worker, busy, short calls: prefetch one", 1, 1, 0, 10 * ms, 1},
		{"at the threshold counts as long", 4, 0, 0, prefetchBelow, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := claimSize(c.workers, c.busy, c.queued, c.avg); got != c.want {
				t.Fatalf("claimSize(%d, %d, %d, %s) = %d, want %d", c.workers, c.busy, c.queued, c.avg, got, c.want)
			}
		})
	}
}

func TestConfirmLost(t *testing.T) {
	running, queued, writing := &call{cancel: func(error) {}}, &call{}, &call{writing: true}
	inflight := map[string]*call{"run": running, "queue": queued, "write": writing}
	cases := []struct {
		name string
		lost []string
		want []*call
	}{
		{"nothing missing", nil, nil},
		{"a running call lost", []string{"run"}, []*call{running}},
		{"a queued item lost", []string{"queue"}, []*call{queued}},
		{"being written: its commit ended the lease", []string{"write"}, nil},
		{"written and untracked since the snapshot", []string{"gone"}, nil},
		{"mixed", []string{"gone", "write", "run", "queue"}, []*call{running, queued}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := confirmLost(c.lost, inflight)
			if len(got) != len(c.want) {
				t.Fatalf("confirmLost(%v) = %d calls, want %d", c.lost, len(got), len(c.want))
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("confirmLost(%v)[%d] wrong call", c.lost, i)
				}
			}
		})
	}
}

func TestSelfFence(t *testing.T) {
	ttl := 15 * time.Second
	for _, c := range []struct {
		since time.Duration
		want  bool
	}{{0, false}, {5 * time.Second, false}, {9999 * time.Millisecond, false}, {10 * time.Second, true}, {time.Minute, true}} {
		if got := selfFence(c.since, ttl); got != c.want {
			t.Errorf("selfFence(%s, %s) = %v, want %v", c.since, ttl, got, c.want)
		}
	}
}

// TestSuspendStopsCalls: a suspension cancels running calls with its cause, keeps queued
// items from starting, makes a claim begun before it stale, and Resume lets work start again.
func TestSuspendStopsCalls(t *testing.T) {
	r := New(nil, nil, Options{}, slog.New(slog.DiscardHandler))
	r.inflight["running"] = &call{}
	r.inflight["queued"] = &call{}
	ctx, _, _, ok := r.start(context.Background(), store.Claimed{LeaseToken: "running"})
	if !ok {
		t.Fatal("start before any suspension refused")
	}
	_, epoch := r.claimable()
	cause := errors.New("session ended")
	if n := r.suspend(suspendLiveness, cause); n != 1 {
		t.Errorf("suspend cancelled %d calls, want 1", n)
	}
	if context.Cause(ctx) != cause {
		t.Errorf("running call's cause %v, want %v", context.Cause(ctx), cause)
	}
	if _, _, _, ok := r.start(context.Background(), store.Claimed{LeaseToken: "queued"}); ok {
		t.Error("a queued item started after the suspension")
	}
	if ok, e := r.claimable(); ok || e == epoch {
		t.Errorf("claimable %v epoch %d (was %d): a claim begun before the suspension must be stale", ok, e, epoch)
	}
	r.resume(suspendRenewal) // another reason: still suspended
	if ok, _ := r.claimable(); ok {
		t.Error("resuming another reason lifted the liveness suspension")
	}
	r.resume(suspendLiveness)
	if ok, _ := r.claimable(); !ok {
		t.Error("still suspended after Resume")
	}
	r.inflight["new"] = &call{}
	if _, _, _, ok := r.start(context.Background(), store.Claimed{LeaseToken: "new"}); !ok {
		t.Error("a new item could not start after Resume")
	}
}

// A start or a renewal that moved a queue row updates where the result looks for it, until
// the row is handed to the writer, which keeps the place it was handed with.
func TestRecordPlaces(t *testing.T) {
	t.Parallel()
	r := &Reconciler{inflight: map[string]*call{
		"run":   {at: "(1,1)"},
		"write": {at: "(1,2)"},
		"none":  {},
	}}
	r.recordPlaces(map[string]string{"run": "(2,1)", "none": "(2,3)", "gone": "(2,4)"})
	if got := r.writing([]string{"write", "gone"}); !slices.Equal(got, []string{"(1,2)", ""}) {
		t.Fatalf("handed to the writer at %q, want (1,2) and nothing for an untracked token", got)
	}
	r.recordPlaces(map[string]string{"write": "(3,2)", "run": "(3,1)"})
	if got := r.writing([]string{"run", "write", "none"}); !slices.Equal(got, []string{"(3,1)", "(1,2)", "(2,3)"}) {
		t.Fatalf("places %q: want the last renewal's, the place handed over, the start's", got)
	}
	if _, tracked := r.inflight["gone"]; tracked {
		t.Fatal("a place for an untracked token tracked it")
	}
}
