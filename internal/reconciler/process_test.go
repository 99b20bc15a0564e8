package reconciler

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/redact"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
)

// secret is what the test Scrub hides; no update may contain it anywhere.
const secret = "s3cret"

// testResync is the controller's resync interval in these tests.
const testResync = time.Minute

func newTestReconciler() *Reconciler {
	return New(nil, nil, Options{Replica: "replica-a", BackoffInitial: time.Second, BackoffMax: 8 * time.Second,
		ResyncInterval: testResync, Redact: redact.New(secret)},
		slog.New(slog.DiscardHandler))
}

// tPrev is when the fixtures' earlier steps happened (their lastTransitionTimes).
var tPrev = time.Now().Add(-time.Hour)

// States a resource is in before a claim, built with the status rules themselves.
var (
	fresh     = status.Created(tPrev)
	readyGen1 = mustResult(claimState(fresh, 1, false), status.Outcome{Generation: 1, CurrentGeneration: 1, Done: true})
	failedG1  = mustResult(claimState(fresh, 1, false), status.Outcome{Generation: 1, CurrentGeneration: 1, Err: "boom"})
)

func claimState(prev status.State, gen int64, deleting bool) status.State {
	s, _ := status.Start(prev, gen, deleting, tPrev)
	return s
}

func mustResult(prev status.State, o status.Outcome) status.State {
	s, _ := status.Result(prev, o, tPrev)
	return s
}

// claimed is the item a worker holds after claiming a resource in state prev at generation gen,
// with the status of its call started (status.Start, as the start writer stores it).
func claimed(prev status.State, gen int64, deleting bool, opts ...func(*store.Claimed)) store.Claimed {
	s := claimState(prev, gen, deleting)
	c := store.Claimed{ID: 7, UID: "0b5a6f1e-uid", Namespace: "default", Kind: "Bucket", Name: "logs", APIVersion: "trueup.dev/v1",
		Source: "infra", Revision: "abc1234", Generation: gen, ObservedGeneration: s.ObservedGeneration, Phase: s.Phase,
		Conditions: s.Conditions, Deleting: deleting, LeaseToken: "tok-1", TypeKnown: true, ActionName: "bucket"}
	for _, o := range opts {
		o(&c)
	}
	return c
}

func withAttempt(n int) func(*store.Claimed) { return func(c *store.Claimed) { c.Attempt = n } }

func withState(s string) func(*store.Claimed) {
	return func(c *store.Claimed) { c.ActionState = json.RawMessage(s) }
}

func withResync(ms int64) func(*store.Claimed) {
	return func(c *store.Claimed) { c.ResyncIntervalMs = &ms }
}

// unchanged is the row at write time when nothing touched it during the call.
func unchanged(c store.Claimed) store.Current {
	return store.Current{Phase: c.Phase, Generation: c.Generation, ObservedGeneration: c.ObservedGeneration,
		Conditions: c.Conditions, Deleting: c.Deleting}
}

// specChanged is the row at write time after the syncer stored generation gen during the call.
func specChanged(c store.Claimed, gen int64) store.Current {
	s := status.NewGeneration(status.State{Phase: c.Phase, Conditions: c.Conditions, ObservedGeneration: c.ObservedGeneration}, gen, tPrev)
	return store.Current{Phase: s.Phase, Generation: gen, ObservedGeneration: s.ObservedGeneration, Conditions: s.Conditions, Dirty: true}
}

// markedDeleted is the row at write time after the syncer marked it for deletion during the call.
func markedDeleted(c store.Claimed) store.Current {
	cur := unchanged(c)
	cur.Phase, cur.Deleting, cur.Dirty = status.PhaseDeleting, true, true
	return cur
}

// manifestBack is the row at write time when the manifest reappeared during a delete: the syncer
// cleared the deletion and stored a new generation.
func manifestBack(c store.Claimed) store.Current {
	cur := specChanged(c, c.Generation+1)
	cur.Deleting = false
	return cur
}

// window is when RunAt must fall, relative to the time of the call of update; nil: never.
type window struct {
	never  bool
	lo, hi time.Duration
}

var (
	never       = window{never: true}
	immediately = window{}
	resync      = window{lo: testResync, hi: testResync + testResync/10}
)

func after(d time.Duration) window        { return window{lo: d, hi: d} }
func between(lo, hi time.Duration) window { return window{lo: lo, hi: hi} }

// cond is a wanted condition "Status/Reason"; absent means it must not be there.
const absent = "-"

type wantUpdate struct {
	phase     string
	result    string // History.Result; "" means no history row
	events    []string
	attempt   int
	runAt     window
	remove    bool
	keep      bool              // KeepActionState
	state     string            // ActionState written ("" means nil)
	outputs   map[string]any    // nil: stored outputs kept
	msgPrefix string            // Message starts with it
	conds     map[string]string // type → "Status/Reason" or absent
	check     func(t *testing.T, u store.Update)
}

func errMsg(s string) error { return errors.New(s) }

func TestUpdate(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	bigBlob := strings.Repeat("x", 70000)
	bigLen := len(fmt.Sprintf(`{"blob":%q}`, bigBlob))
	// exact fills the 64 KiB limit to the byte: still stored.
	exact := strings.Repeat("y", maxOutputs-len(`{"blob":""}`))

	cases := []struct {
		name string
		c    store.Claimed
		cur  func(store.Claimed) store.Current
		a    attempt
		want wantUpdate
	}{
		{
			name: "reconcile succeeds the first time",
			c:    claimed(fresh, 1, false),
			a:    attempt{op: "reconcile", trigger: "created", res: actions.Result{Done: true, Message: "bucket created"}},
			want: wantUpdate{phase: status.PhaseReady, result: resultSucceeded, events: []string{"Normal/Reconciled"}, runAt: resync,
				outputs: map[string]any{}, msgPrefix: "bucket created",
				conds: map[string]string{status.Ready: "True/Reconciled", status.Reconciling: absent, status.Stalled: absent, status.Synced: "True/ActionSucceeded"}},
		},
		{
			name: "reconcile succeeds with outputs and state",
			c:    claimed(fresh, 1, false),
			a: attempt{op: "reconcile", trigger: "created", res: actions.Result{Done: true, State: json.RawMessage(`{"id":"b-1"}`),
				Outputs: map[string]any{"arn": "arn:aws:s3:::logs"}}},
			want: wantUpdate{phase: status.PhaseReady, result: resultSucceeded, events: []string{"Normal/Reconciled"}, runAt: resync,
				state: `{"id":"b-1"}`, outputs: map[string]any{"arn": "arn:aws:s3:::logs"},
				conds: map[string]string{status.Ready: "True/Reconciled"},
				check: func(t *testing.T, u store.Update) {
					if string(u.History.Outputs) != `{"arn":"arn:aws:s3:::logs"}` {
						t.Errorf("History.Outputs = %s", u.History.Outputs)
					}
				}},
		},
		{
			name: "retry succeeds: Ready again, attempts reset",
			c:    claimed(failedG1, 1, false, withAttempt(3)),
			a:    attempt{op: "reconcile", trigger: "retry", res: actions.Result{Done: true}},
			want: wantUpdate{phase: status.PhaseReady, result: resultSucceeded, events: []string{"Normal/Reconciled"}, runAt: resync,
				outputs: map[string]any{}, conds: map[string]string{status.Ready: "True/Reconciled", status.Reconciling: absent, status.Synced: "True/ActionSucceeded"}},
		},
		{
			name: "type's resync interval overrides the controller's",
			c:    claimed(fresh, 1, false, withResync(10_000)),
			a:    attempt{op: "reconcile", trigger: "created", res: actions.Result{Done: true}},
			want: wantUpdate{phase: status.PhaseReady, result: resultSucceeded, events: []string{"Normal/Reconciled"},
				runAt: between(10*time.Second, 11*time.Second), outputs: map[string]any{}},
		},
		{
			name: "resync off for the type: nothing scheduled",
			c:    claimed(fresh, 1, false, withResync(0)),
			a:    attempt{op: "reconcile", trigger: "created", res: actions.Result{Done: true}},
			want: wantUpdate{phase: status.PhaseReady, result: resultSucceeded, events: []string{"Normal/Reconciled"}, runAt: never,
				outputs: map[string]any{}},
		},
		{
			name: "resync corrects drift",
			c:    claimed(readyGen1, 1, false),
			a: attempt{op: "reconcile", trigger: "resync", drift: "versioning was off (key " + secret + ")",
				res: actions.Result{Done: true}},
			want: wantUpdate{phase: status.PhaseReady, result: resultSucceeded, events: []string{"Warning/DriftDetected"}, runAt: resync,
				outputs: map[string]any{}, conds: map[string]string{status.Ready: "True/DriftCorrected", status.Synced: "True/ActionSucceeded"},
				check: func(t *testing.T, u store.Update) {
					if want := "drift corrected: versioning was off (key ***)"; u.History.Message != want {
						t.Errorf("History.Message = %q, want %q", u.History.Message, want)
					}
					if want := "versioning was off (key ***)"; u.Events[0].Message != want {
						t.Errorf("DriftDetected message = %q, want %q", u.Events[0].Message, want)
					}
				}},
		},
		{
			name: "in progress: default requeue, outputs written",
			c:    claimed(fresh, 1, false),
			a: attempt{op: "reconcile", trigger: "created", res: actions.Result{Message: "creating", State: json.RawMessage(`{"op":"o-1"}`),
				Outputs: map[string]any{"step": "1"}}},
			want: wantUpdate{phase: status.PhaseReconciling, result: resultInProgress, runAt: after(defaultRequeue), state: `{"op":"o-1"}`,
				outputs: map[string]any{"step": "1"}, msgPrefix: "creating",
				conds: map[string]string{status.Ready: "Unknown/Progressing", status.Reconciling: "True/Progressing", status.Synced: "True/ActionSucceeded"}},
		},
		{
			name: "in progress with RequeueAfter and no outputs: stored outputs kept",
			c:    claimed(fresh, 1, false, withState(`{"op":"o-1"}`)),
			a: attempt{op: "reconcile", trigger: "requeue", res: actions.Result{RequeueAfter: 30 * time.Second,
				State: json.RawMessage(`{"op":"o-1","poll":2}`)}},
			want: wantUpdate{phase: status.PhaseReconciling, result: resultInProgress, runAt: after(30 * time.Second),
				state: `{"op":"o-1","poll":2}`, conds: map[string]string{status.Reconciling: "True/Progressing"}},
		},
		{
			name: "retryable failure backs off and scrubs secrets",
			c:    claimed(failedG1, 1, false, withAttempt(2), withState(`{"op":"o-1"}`)),
			a:    attempt{op: "reconcile", trigger: "retry", err: errMsg("PUT https://admin:" + secret + "@api.example/buckets/logs: 503")},
			want: wantUpdate{phase: status.PhaseFailed, result: resultFailed, events: []string{"Warning/ReconcileFailed"}, attempt: 3,
				runAt: between(3200*ms, 4800*ms), keep: true, msgPrefix: "PUT https://admin:***@api.example",
				conds: map[string]string{status.Ready: "False/ActionFailed", status.Reconciling: "True/RetryingAfterFailure",
					status.Stalled: absent, status.Synced: "False/ActionFailed"},
				check: func(t *testing.T, u store.Update) {
					if u.History.Message != u.Message {
						t.Errorf("History.Message = %q, Message = %q", u.History.Message, u.Message)
					}
					if !strings.HasPrefix(u.Events[0].Message, "attempt 3 failed, retry in ") {
						t.Errorf("event message = %q", u.Events[0].Message)
					}
				}},
		},
		{
			name: "retryable failure at the cap never waits longer than BackoffMax",
			c:    claimed(failedG1, 1, false, withAttempt(9)),
			a:    attempt{op: "reconcile", trigger: "retry", err: errMsg("timeout")},
			want: wantUpdate{phase: status.PhaseFailed, result: resultFailed, events: []string{"Warning/ReconcileFailed"}, attempt: 10,
				runAt: between(6400*ms, 8*time.Second), keep: true, msgPrefix: "timeout"},
		},
		{
			name: "resync of a Ready resource fails: first retry",
			c:    claimed(readyGen1, 1, false),
			a:    attempt{op: "reconcile", trigger: "resync", err: fmt.Errorf("observe: %w", errMsg("403 forbidden"))},
			want: wantUpdate{phase: status.PhaseFailed, result: resultFailed, events: []string{"Warning/ReconcileFailed"}, attempt: 1,
				runAt: between(800*ms, 1200*ms), keep: true, msgPrefix: "observe: 403",
				conds: map[string]string{status.Ready: "False/ActionFailed", status.Reconciling: "True/RetryingAfterFailure"}},
		},
		{
			name: "terminal failure stalls until the spec changes",
			c:    claimed(fresh, 1, false),
			a: attempt{op: "reconcile", trigger: "created",
				err: fmt.Errorf("reconcile: %w", actions.Terminalf("region %q is not allowed (token %s)", "mars", secret))},
			want: wantUpdate{phase: status.PhaseFailed, result: resultStalled, events: []string{"Warning/Stalled"}, attempt: 1,
				runAt: never, keep: true, msgPrefix: `reconcile: region "mars" is not allowed (token ***)`,
				conds: map[string]string{status.Ready: "False/Stalled", status.Reconciling: absent, status.Stalled: "True/ActionRejected",
					status.Synced: "False/ActionFailed"}},
		},
		{
			name: "new generation arrived during a success: runs again at once",
			c:    claimed(fresh, 1, false),
			cur:  func(c store.Claimed) store.Current { return specChanged(c, 2) },
			a:    attempt{op: "reconcile", trigger: "created", res: actions.Result{Done: true}},
			want: wantUpdate{phase: status.PhaseReconciling, result: resultSucceeded, events: []string{"Normal/Reconciled"},
				runAt: immediately, outputs: map[string]any{},
				conds: map[string]string{status.Ready: "Unknown/NewGeneration", status.Reconciling: "True/NewGeneration"}},
		},
		{
			name: "new generation arrived during a failure: attempts reset",
			c:    claimed(failedG1, 1, false, withAttempt(4)),
			cur:  func(c store.Claimed) store.Current { return specChanged(c, 2) },
			a:    attempt{op: "reconcile", trigger: "retry", err: errMsg("boom")},
			want: wantUpdate{phase: status.PhaseReconciling, result: resultFailed, events: []string{"Warning/ReconcileFailed"},
				runAt: immediately, keep: true, msgPrefix: "boom",
				conds: map[string]string{status.Ready: "False/ActionFailed", status.Reconciling: "True/NewGeneration"}},
		},
		{
			name: "new generation arrived during a terminal failure: not stalled, runs at once",
			c:    claimed(fresh, 1, false),
			cur:  func(c store.Claimed) store.Current { return specChanged(c, 2) },
			a:    attempt{op: "reconcile", trigger: "created", err: actions.Terminalf("bad spec")},
			want: wantUpdate{phase: status.PhaseReconciling, result: resultStalled, events: []string{"Warning/Stalled"},
				runAt: immediately, keep: true, msgPrefix: "bad spec",
				conds: map[string]string{status.Stalled: absent, status.Reconciling: "True/NewGeneration"}},
		},
		{
			name: "marked for deletion during a success: delete runs at once",
			c:    claimed(fresh, 1, false),
			cur:  markedDeleted,
			a:    attempt{op: "reconcile", trigger: "created", res: actions.Result{Done: true}},
			want: wantUpdate{phase: status.PhaseDeleting, result: resultSucceeded, events: []string{"Normal/Reconciled"},
				runAt: immediately, outputs: map[string]any{},
				conds: map[string]string{status.Ready: "Unknown/Deleting", status.Reconciling: "True/DeletionRequested"}},
		},
		{
			// The syncer sets attempt = 0 when it marks a resource for deletion (as it does
			// for a new generation): the delete's backoff must not inherit the reconcile's.
			name: "marked for deletion during a failure: the delete starts with no attempts",
			c:    claimed(failedG1, 1, false, withAttempt(6)),
			cur:  markedDeleted,
			a:    attempt{op: "reconcile", trigger: "retry", err: errMsg("boom")},
			want: wantUpdate{phase: status.PhaseDeleting, result: resultFailed, events: []string{"Warning/ReconcileFailed"},
				runAt: immediately, keep: true, msgPrefix: "boom",
				conds: map[string]string{status.Reconciling: "True/DeletionRequested", status.Ready: "False/ActionFailed"}},
		},
		{
			name: "marked for deletion during a terminal failure: the delete starts with no attempts",
			c:    claimed(fresh, 1, false),
			cur:  markedDeleted,
			a:    attempt{op: "reconcile", trigger: "created", err: actions.Terminalf("bad spec")},
			want: wantUpdate{phase: status.PhaseDeleting, result: resultStalled, events: []string{"Warning/Stalled"},
				runAt: immediately, keep: true, msgPrefix: "bad spec",
				conds: map[string]string{status.Stalled: absent, status.Reconciling: "True/DeletionRequested"}},
		},
		{
			name: "resync finds nothing to do",
			c:    claimed(readyGen1, 1, false, withState(`{"id":"b-1"}`)),
			a:    attempt{op: "reconcile", trigger: "resync", inSync: true},
			want: wantUpdate{phase: status.PhaseReady, runAt: resync, keep: true, msgPrefix: "in sync",
				conds: map[string]string{status.Ready: "True/Reconciled", status.Reconciling: absent}},
		},
		{
			name: "resync finds nothing but a new generation arrived",
			c:    claimed(readyGen1, 1, false),
			cur:  func(c store.Claimed) store.Current { return specChanged(c, 2) },
			a:    attempt{op: "reconcile", trigger: "resync", inSync: true},
			want: wantUpdate{phase: status.PhaseReconciling, runAt: resync, keep: true, msgPrefix: "in sync",
				conds: map[string]string{status.Ready: "Unknown/NewGeneration", status.Reconciling: "True/NewGeneration"}},
		},
		{
			name: "delete succeeds: the row goes",
			c:    claimed(readyGen1, 1, true, withState(`{"id":"b-1"}`)),
			a:    attempt{op: "delete", trigger: "deleted", res: actions.Result{Done: true}},
			want: wantUpdate{phase: status.PhaseDeleting, result: resultSucceeded, events: []string{"Normal/Deleted"}, runAt: never,
				remove: true,
				check: func(t *testing.T, u store.Update) {
					if want := "deleted by action bucket"; u.Events[0].Message != want {
						t.Errorf("Deleted message = %q, want %q", u.Events[0].Message, want)
					}
				}},
		},
		{
			name: "delete fails: backs off, still Deleting",
			c:    claimed(readyGen1, 1, true, withState(`{"id":"b-1"}`)),
			a:    attempt{op: "delete", trigger: "deleted", err: errMsg("DELETE https://admin:" + secret + "@api.example/buckets/logs: 500")},
			want: wantUpdate{phase: status.PhaseDeleting, result: resultFailed, events: []string{"Warning/DeleteFailed"}, attempt: 1,
				runAt: between(800*ms, 1200*ms), keep: true, msgPrefix: "delete failed: DELETE https://admin:***@",
				conds: map[string]string{status.Ready: "False/DeleteFailed", status.Reconciling: "True/RetryingAfterFailure",
					status.Synced: "False/ActionFailed"}},
		},
		{
			name: "delete fails again: doubled backoff",
			c:    claimed(readyGen1, 1, true, withAttempt(2)),
			a:    attempt{op: "delete", trigger: "deleted", err: errMsg("500")},
			want: wantUpdate{phase: status.PhaseDeleting, result: resultFailed, events: []string{"Warning/DeleteFailed"}, attempt: 3,
				runAt: between(3200*ms, 4800*ms), keep: true, msgPrefix: "delete failed: 500",
				conds: map[string]string{status.Synced: "False/ActionFailed"}},
		},
		{
			name: "terminal delete error is retried, never Stalled",
			c:    claimed(readyGen1, 1, true),
			a:    attempt{op: "delete", trigger: "deleted", err: actions.Terminalf("bucket not empty")},
			want: wantUpdate{phase: status.PhaseDeleting, result: resultFailed, events: []string{"Warning/DeleteFailed"}, attempt: 1,
				runAt: between(800*ms, 1200*ms), keep: true, msgPrefix: "delete failed: bucket not empty",
				conds: map[string]string{status.Stalled: absent, status.Reconciling: "True/RetryingAfterFailure"}},
		},
		{
			name: "delete in progress: requeued, not removed",
			c:    claimed(readyGen1, 1, true),
			a:    attempt{op: "delete", trigger: "deleted", res: actions.Result{State: json.RawMessage(`{"job":1}`)}},
			want: wantUpdate{phase: status.PhaseDeleting, result: resultInProgress, runAt: after(defaultRequeue), state: `{"job":1}`,
				msgPrefix: "deletion in progress", conds: map[string]string{status.Reconciling: "True/Deleting", status.Synced: "True/ActionSucceeded"}},
		},
		{
			name: "delete in progress with RequeueAfter",
			c:    claimed(readyGen1, 1, true),
			a:    attempt{op: "delete", trigger: "deleted", res: actions.Result{RequeueAfter: 20 * time.Second, Message: "emptying"}},
			want: wantUpdate{phase: status.PhaseDeleting, result: resultInProgress, runAt: after(20 * time.Second), msgPrefix: "emptying"},
		},
		{
			name: "delete finished but the manifest came back: reconcile from scratch",
			c:    claimed(readyGen1, 1, true, withAttempt(2), withState(`{"id":"b-1"}`)),
			cur:  manifestBack,
			a:    attempt{op: "delete", trigger: "deleted", res: actions.Result{Done: true, State: json.RawMessage(`{"id":"b-1"}`)}},
			want: wantUpdate{phase: status.PhaseReconciling, result: resultSucceeded, events: []string{"Normal/Deleted"}, runAt: immediately,
				conds: map[string]string{status.Reconciling: "True/NewGeneration", status.Synced: "True/ActionSucceeded"}},
		},
		{
			name: "delete failed and the manifest came back: reconcile from scratch",
			c:    claimed(readyGen1, 1, true, withAttempt(2), withState(`{"id":"b-1"}`)),
			cur:  manifestBack,
			a:    attempt{op: "delete", trigger: "deleted", err: errMsg("500")},
			want: wantUpdate{phase: status.PhaseReconciling, result: resultFailed, events: []string{"Warning/DeleteFailed"},
				runAt: immediately, msgPrefix: "delete failed: 500", conds: map[string]string{status.Reconciling: "True/NewGeneration"}},
		},
		{
			name: "plugin conditions kept and scrubbed; standard ones ignored",
			c:    claimed(fresh, 1, false),
			a: attempt{op: "reconcile", trigger: "created", res: actions.Result{Done: true, Conditions: []actions.Condition{
				{Type: "BackupConfigured", Status: status.True, Reason: "Enabled", Message: "key " + secret + " rotated"},
				{Type: status.Ready, Status: status.False, Reason: "PluginSaysNo"},
				{Type: status.Stalled, Status: status.True, Reason: "PluginSaysNo"},
				{Type: status.Synced, Status: status.False, Reason: "PluginSaysNo"},
				{Type: status.Reconciling, Status: status.True, Reason: "PluginSaysNo"},
			}}},
			want: wantUpdate{phase: status.PhaseReady, result: resultSucceeded, events: []string{"Normal/Reconciled"}, runAt: resync,
				outputs: map[string]any{},
				conds: map[string]string{"BackupConfigured": "True/Enabled", status.Ready: "True/Reconciled", status.Stalled: absent,
					status.Synced: "True/ActionSucceeded", status.Reconciling: absent},
				check: func(t *testing.T, u store.Update) {
					c, _ := status.Get(u.Conditions, "BackupConfigured")
					if c.Message != "key *** rotated" || c.ObservedGeneration != 1 || c.LastTransitionTime.IsZero() {
						t.Errorf("BackupConfigured = %+v", c)
					}
				}},
		},
		{
			name: "plugin setting Ready=True while in progress is ignored",
			c:    claimed(fresh, 1, false),
			a: attempt{op: "reconcile", trigger: "created", res: actions.Result{Conditions: []actions.Condition{
				{Type: status.Ready, Status: status.True, Reason: "PluginSaysYes"},
				{Type: "Replicated", Status: status.False, Reason: "Waiting"},
			}}},
			want: wantUpdate{phase: status.PhaseReconciling, result: resultInProgress, runAt: after(defaultRequeue),
				conds: map[string]string{status.Ready: "Unknown/Progressing", "Replicated": "False/Waiting"}},
		},
		{
			name: "outputs over 64 KiB are replaced by a note",
			c:    claimed(fresh, 1, false),
			a:    attempt{op: "reconcile", trigger: "created", res: actions.Result{Done: true, Outputs: map[string]any{"blob": bigBlob}}},
			want: wantUpdate{phase: status.PhaseReady, result: resultSucceeded, events: []string{"Normal/Reconciled"}, runAt: resync,
				outputs: map[string]any{"error": fmt.Sprintf("outputs of %d bytes were not stored (limit %d)", bigLen, maxOutputs)},
				check: func(t *testing.T, u store.Update) {
					if len(u.History.Outputs) > 1000 {
						t.Errorf("History.Outputs holds %d bytes", len(u.History.Outputs))
					}
				}},
		},
		{
			name: "outputs of exactly 64 KiB are stored",
			c:    claimed(fresh, 1, false),
			a:    attempt{op: "reconcile", trigger: "created", res: actions.Result{Done: true, Outputs: map[string]any{"blob": exact}}},
			want: wantUpdate{phase: status.PhaseReady, result: resultSucceeded, events: []string{"Normal/Reconciled"}, runAt: resync,
				outputs: map[string]any{"blob": exact}},
		},
		{
			name: "outputs over 64 KiB while in progress are replaced too",
			c:    claimed(fresh, 1, false),
			a:    attempt{op: "reconcile", trigger: "created", res: actions.Result{Outputs: map[string]any{"blob": bigBlob}}},
			want: wantUpdate{phase: status.PhaseReconciling, result: resultInProgress, runAt: after(defaultRequeue),
				outputs: map[string]any{"error": fmt.Sprintf("outputs of %d bytes were not stored (limit %d)", bigLen, maxOutputs)}},
		},
		{
			name: "outputs holding a secret are scrubbed",
			c:    claimed(fresh, 1, false),
			a: attempt{op: "reconcile", trigger: "created", res: actions.Result{Done: true,
				Outputs: map[string]any{"url": "https://u:" + secret + "@h.example", "n": 3}}},
			want: wantUpdate{phase: status.PhaseReady, result: resultSucceeded, events: []string{"Normal/Reconciled"}, runAt: resync,
				outputs: map[string]any{"url": "https://u:***@h.example", "n": json.Number("3")}},
		},
		{
			name: "outputs holding a number PostgreSQL cannot store are replaced by a note",
			c:    claimed(fresh, 1, false),
			a:    attempt{op: "reconcile", trigger: "created", res: actions.Result{Done: true, Outputs: map[string]any{"x": json.Number("1e131072")}}},
			want: wantUpdate{phase: status.PhaseReady, result: resultSucceeded, events: []string{"Normal/Reconciled"}, runAt: resync,
				outputs: map[string]any{"error": "outputs were not stored: a number beyond PostgreSQL's numeric (more than 131072 digits before the decimal point)"}},
		},
		{
			name: "outputs that are not JSON are replaced by a note",
			c:    claimed(fresh, 1, false),
			a:    attempt{op: "reconcile", trigger: "created", res: actions.Result{Done: true, Outputs: map[string]any{"x": math.Inf(1)}}},
			want: wantUpdate{phase: status.PhaseReady, result: resultSucceeded, events: []string{"Normal/Reconciled"}, runAt: resync,
				outputs: map[string]any{"error": "outputs could not be encoded as JSON"}},
		},
	}
	r := newTestReconciler()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cur := unchanged(tc.c)
			if tc.cur != nil {
				cur = tc.cur(tc.c)
			}
			tc.a.started = time.Now().Add(-time.Second)
			tc.a.ended = time.Now()
			before := time.Now()
			u := r.update(tc.c, tc.a, cur)
			afterCall := time.Now()
			w := tc.want

			if u.Phase != w.phase {
				t.Errorf("Phase = %q, want %q", u.Phase, w.phase)
			}
			if u.Remove != w.remove {
				t.Errorf("Remove = %v, want %v", u.Remove, w.remove)
			}
			if u.Attempt != w.attempt {
				t.Errorf("Attempt = %d, want %d", u.Attempt, w.attempt)
			}
			if u.KeepActionState != w.keep {
				t.Errorf("KeepActionState = %v, want %v", u.KeepActionState, w.keep)
			}
			if string(u.ActionState) != w.state {
				t.Errorf("ActionState = %s, want %s", u.ActionState, w.state)
			}
			if !reflect.DeepEqual(u.Outputs, w.outputs) {
				t.Errorf("Outputs = %#v, want %#v", u.Outputs, w.outputs)
			}
			if !strings.HasPrefix(u.Message, w.msgPrefix) {
				t.Errorf("Message = %q, want it to start with %q", u.Message, w.msgPrefix)
			}
			switch {
			case w.runAt.never && u.RunAt != nil:
				t.Errorf("RunAt = now+%s, want nil", u.RunAt.Sub(before))
			case !w.runAt.never && u.RunAt == nil:
				t.Errorf("RunAt = nil, want now+[%s, %s]", w.runAt.lo, w.runAt.hi)
			case !w.runAt.never && (u.RunAt.Before(before.Add(w.runAt.lo)) || u.RunAt.After(afterCall.Add(w.runAt.hi))):
				t.Errorf("RunAt = now+%s, want now+[%s, %s]", u.RunAt.Sub(before), w.runAt.lo, w.runAt.hi)
			}

			if w.result == "" {
				if u.History != nil {
					t.Errorf("History = %+v, want none", u.History)
				}
			} else if h := u.History; h == nil {
				t.Errorf("History = nil, want result %s", w.result)
			} else {
				if h.Result != w.result || h.Operation != tc.a.op || h.Trigger != tc.a.trigger || h.Generation != tc.c.Generation ||
					h.UID != tc.c.UID || h.Replica != "replica-a" {
					t.Errorf("History = result %s op %s trigger %s gen %d uid %s replica %s, want %s %s %s %d %s replica-a",
						h.Result, h.Operation, h.Trigger, h.Generation, h.UID, h.Replica, w.result, tc.a.op, tc.a.trigger, tc.c.Generation, tc.c.UID)
				}
				if h.FinishedAt.Before(before) || !h.StartedAt.Equal(tc.a.started) {
					t.Errorf("History times: started %s finished %s", h.StartedAt, h.FinishedAt)
				}
			}

			var events []string
			for _, e := range u.Events {
				events = append(events, e.Type+"/"+e.Reason)
				if e.Namespace != tc.c.Namespace || e.Kind != tc.c.Kind || e.Name != tc.c.Name || e.Source != tc.c.Source || e.Replica != "replica-a" {
					t.Errorf("event %s/%s names %s/%s/%s from %s by %s", e.Type, e.Reason, e.Namespace, e.Kind, e.Name, e.Source, e.Replica)
				}
			}
			if !reflect.DeepEqual(events, w.events) {
				t.Errorf("Events = %v, want %v", events, w.events)
			}

			for typ, want := range w.conds {
				c, ok := status.Get(u.Conditions, typ)
				switch {
				case want == absent && ok:
					t.Errorf("condition %s = %s/%s, want absent", typ, c.Status, c.Reason)
				case want != absent && !ok:
					t.Errorf("condition %s absent, want %s", typ, want)
				case want != absent && c.Status+"/"+c.Reason != want:
					t.Errorf("condition %s = %s/%s, want %s", typ, c.Status, c.Reason, want)
				}
			}

			// Whatever the outcome, the written status keeps the model's invariants for the
			// resource as it is now.
			st := status.State{Phase: u.Phase, Conditions: u.Conditions, ObservedGeneration: u.ObservedGeneration}
			stalled, _ := status.Get(u.Conditions, status.Stalled)
			settled := (u.Phase == status.PhaseReady && u.ObservedGeneration == cur.Generation) || stalled.Status == status.True || u.Remove
			if err := status.Check(st, cur.Generation, !settled); err != nil {
				t.Errorf("status.Check: %v (phase %s, conditions %+v)", err, u.Phase, u.Conditions)
			}

			b, err := json.Marshal(u)
			if err != nil {
				t.Fatalf("marshal update: %v", err)
			}
			if strings.Contains(string(b), secret) {
				t.Errorf("update holds the secret: %s", b)
			}
			if w.check != nil {
				w.check(t, u)
			}
		})
	}
}

func manual(c store.Claimed, actor string) store.Claimed { c.ManualBy = actor; return c }

func TestTrigger(t *testing.T) {
	t.Parallel()
	// A Ready resource whose action keeps a handle after Done (as ghactions does), and then:
	readyWithState := claimed(readyGen1, 1, false, withState(`{"runId":1}`))
	cur := specChanged(readyWithState, 2)
	afterSpecChange := status.State{Phase: cur.Phase, Conditions: cur.Conditions, ObservedGeneration: cur.ObservedGeneration}
	// ... the first call on generation 2 answered "in progress" and is called again.
	inProgressGen2 := mustResult(claimState(afterSpecChange, 2, false), status.Outcome{Generation: 2, CurrentGeneration: 2, InProgress: true})
	stalledGen1 := mustResult(claimState(fresh, 1, false), status.Outcome{Generation: 1, CurrentGeneration: 1, Err: "bad", Terminal: true})

	cases := []struct {
		name string
		c    store.Claimed
		want string
	}{
		{"first reconcile", claimed(fresh, 1, false), "created"},
		{"first reconcile, after a failure", claimed(failedG1, 1, false, withAttempt(1)), "retry"},
		{"first reconcile in progress, called again", claimed(mustResult(claimState(fresh, 1, false),
			status.Outcome{Generation: 1, CurrentGeneration: 1, InProgress: true}), 1, false, withState(`{"op":1}`)), "requeue"},
		{"spec changed on a Ready resource", claimed(readyGen1, 2, false), "spec-changed"},
		{"spec changed on a Stalled resource", claimed(stalledGen1, 2, false, withState(`{"op":1}`)), "spec-changed"},
		{"spec changed on a resource whose action keeps state after Done", claimed(afterSpecChange, 2, false, withState(`{"runId":1}`)), "spec-changed"},
		{"new generation in progress, called again", claimed(inProgressGen2, 2, false, withState(`{"runId":2}`)), "requeue"},
		{"resync of a Ready resource", claimed(readyGen1, 1, false), "resync"},
		{"resync of a Ready resource with state", readyWithState, "resync"},
		{"retry at the same generation", claimed(failedG1, 1, false, withAttempt(3), withState(`{"op":1}`)), "retry"},
		{"deleted", claimed(readyGen1, 1, true), "deleted"},
		{"deleted after failures", claimed(failedG1, 1, true, withAttempt(2)), "deleted"},
		{"manual reconcile of a Ready resource", manual(claimed(readyGen1, 1, false), "token:ci-bot"), "manual"},
		{"manual reconcile of a Stalled resource", manual(claimed(stalledGen1, 1, false, withAttempt(1)), "user:ann"), "manual"},
		{"manual reconcile of a failing resource", manual(claimed(failedG1, 1, false, withAttempt(3)), "user:ann"), "manual"},
		{"annotation changed in Git", manual(claimed(readyGen1, 1, false), "git:abc1234"), "manual"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := trigger(tc.c); got != tc.want {
				t.Errorf("trigger(phase %s, gen %d, observed %d, attempt %d, state %s, deleting %v) = %q, want %q",
					tc.c.Phase, tc.c.Generation, tc.c.ObservedGeneration, tc.c.Attempt, tc.c.ActionState, tc.c.Deleting, got, tc.want)
			}
		})
	}
}

func applied(rev string) func(*store.Claimed) {
	return func(c *store.Claimed) { c.AppliedRevision = rev }
}

func TestCallRevision(t *testing.T) {
	t.Parallel()
	// The row's revision is abc1234 (claimed): the revision that last wrote it, or removed it.
	// The source's newest revision is n3wn3w0 (set by the claim for deletes only).
	head := func(rev string) func(*store.Claimed) { return func(c *store.Claimed) { c.SourceRevision = rev } }
	cases := []struct {
		name                string
		c                   store.Claimed
		want, why, fallback string
	}{
		{"reconcile of a new resource", claimed(fresh, 1, false), "abc1234", "", ""},
		{"reconcile after an earlier apply at another revision", claimed(readyGen1, 2, false, applied("0ld0ld0")), "abc1234", "", ""},
		{"reconcile retried", claimed(failedG1, 2, false, withAttempt(1), applied("0ld0ld0"), head("n3wn3w0")), "abc1234", "", ""},
		{"first delete of a resource applied at an earlier revision", claimed(readyGen1, 1, true, applied("0ld0ld0"), head("n3wn3w0")), "0ld0ld0", atApplied, "n3wn3w0"},
		{"delete after one failure: the newest revision", claimed(failedG1, 1, true, withAttempt(1), applied("0ld0ld0"), head("n3wn3w0")), "n3wn3w0", atNewest, ""},
		{"delete after two failures: the applied revision again", claimed(failedG1, 1, true, withAttempt(2), applied("0ld0ld0"), head("n3wn3w0")), "0ld0ld0", atApplied, "n3wn3w0"},
		{"delete after three failures: the newest again", claimed(failedG1, 1, true, withAttempt(3), applied("0ld0ld0"), head("n3wn3w0")), "n3wn3w0", atNewest, ""},
		{"delete retried, nothing pushed after the removing commit", claimed(failedG1, 1, true, withAttempt(1), applied("0ld0ld0"), head("abc1234")), "0ld0ld0", atApplied, "abc1234"},
		{"delete retried, applied at the newest", claimed(failedG1, 1, true, withAttempt(1), applied("n3wn3w0"), head("n3wn3w0")), "n3wn3w0", atApplied, ""},
		{"delete retried, source gone", claimed(failedG1, 1, true, withAttempt(1), applied("0ld0ld0")), "0ld0ld0", atApplied, ""},
		{"delete of a resource never applied", claimed(failedG1, 1, true, head("n3wn3w0")), "abc1234", atRemoving, "n3wn3w0"},
		{"delete retried of a resource never applied", claimed(failedG1, 1, true, withAttempt(1), head("n3wn3w0")), "abc1234", atRemoving, "n3wn3w0"},
		{"delete of a resource applied at the source's newest revision", claimed(readyGen1, 1, true, applied("n3wn3w0"), head("n3wn3w0")), "n3wn3w0", atApplied, ""},
		{"delete of a resource whose source is gone", claimed(readyGen1, 1, true, applied("0ld0ld0")), "0ld0ld0", atApplied, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, why := callRevision(tc.c)
			if got, fb := revisionOf(tc.c), fallbackRevision(tc.c); got != tc.want || why != tc.why || fb != tc.fallback {
				t.Errorf("(deleting %v, attempt %d, revision %s, applied %q, source at %q) = %q (%s), fallback %q; want %q (%s), %q",
					tc.c.Deleting, tc.c.Attempt, tc.c.Revision, tc.c.AppliedRevision, tc.c.SourceRevision, got, why, fb, tc.want, tc.why, tc.fallback)
			}
		})
	}
}

// The delete gets the spec the resource was applied with, not a later desired state that
// never applied (issue 19, 7: a variable renamed in a commit that failed to apply).
func TestDeleteSpec(t *testing.T) {
	t.Parallel()
	spec := func(s string) func(*store.Claimed) { return func(c *store.Claimed) { c.Spec = json.RawMessage(s) } }
	aspec := func(s string) func(*store.Claimed) {
		return func(c *store.Claimed) { c.AppliedSpec = json.RawMessage(s) }
	}
	rspec := func(s string) func(*store.Claimed) {
		return func(c *store.Claimed) { c.ResolvedSpec = json.RawMessage(s) }
	}
	for _, tc := range []struct {
		name string
		c    store.Claimed
		want string
	}{
		{"applied spec", claimed(failedG1, 2, true, spec(`{"instance_size":"l"}`), rspec(`{"instance_size":"l","x":1}`), aspec(`{"size":"m","x":1}`)), `{"size":"m","x":1}`},
		{"applied before it was recorded, with references", claimed(failedG1, 2, true, spec(`{"size":"${{ A/n/a.outputs.x }}"}`), rspec(`{"size":"m"}`)), `{"size":"m"}`},
		{"applied before it was recorded", claimed(failedG1, 2, true, spec(`{"size":"m"}`)), `{"size":"m"}`},
	} {
		if got := string(deleteSpec(tc.c)); got != tc.want {
			t.Errorf("%s: deleteSpec = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestUpdateRecordsAppliedRevision: only a successful reconcile (or a resync that found the
// resource in sync) records the revision it ran at; failures, calls in progress and deletes
// keep the stored one.
func TestUpdateRecordsAppliedRevision(t *testing.T) {
	t.Parallel()
	r := newTestReconciler()
	cases := []struct {
		name string
		c    store.Claimed
		a    attempt
		want string
	}{
		{"reconcile succeeds", claimed(fresh, 1, false), attempt{op: "reconcile", trigger: "created", res: actions.Result{Done: true}}, "abc1234"},
		{"resync in sync", claimed(readyGen1, 1, false, applied("0ld0ld0")), attempt{op: "reconcile", trigger: "resync", inSync: true}, "abc1234"},
		{"reconcile fails", claimed(readyGen1, 2, false, applied("0ld0ld0")), attempt{op: "reconcile", trigger: "spec-changed", err: errMsg("boom")}, ""},
		{"reconcile fails terminally", claimed(readyGen1, 2, false), attempt{op: "reconcile", trigger: "spec-changed", err: actions.Terminalf("bad")}, ""},
		{"reconcile in progress", claimed(fresh, 1, false), attempt{op: "reconcile", trigger: "created", res: actions.Result{RequeueAfter: time.Second}}, ""},
		{"delete succeeds", claimed(readyGen1, 1, true, applied("0ld0ld0")), attempt{op: "delete", trigger: "deleted", res: actions.Result{Done: true}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u := r.update(tc.c, tc.a, unchanged(tc.c))
			if u.AppliedRevision != tc.want {
				t.Errorf("AppliedRevision = %q, want %q", u.AppliedRevision, tc.want)
			}
			if wantSpec := map[bool]string{true: string(tc.c.Spec)}[tc.want != ""]; string(u.AppliedSpec) != wantSpec {
				t.Errorf("AppliedSpec = %s, want %s", u.AppliedSpec, wantSpec)
			}
		})
	}
}

// A delete's history row names the revision the call ran at, and which one it is.
func TestDeleteHistoryRevision(t *testing.T) {
	t.Parallel()
	r := newTestReconciler()
	c := claimed(failedG1, 1, true, withAttempt(1), applied("0ld0ld0"), func(c *store.Claimed) { c.SourceRevision = "n3wn3w0" })
	a := attempt{op: "delete", trigger: "deleted", err: errMsg("boom")}
	a.revision, a.revisionWhy = callRevision(c)
	u := r.update(c, a, unchanged(c))
	if u.History == nil || u.History.Revision != "n3wn3w0" || u.History.Message != "at "+atNewest+": boom" {
		t.Fatalf("history of a delete at the newest revision: %+v", u.History)
	}
	u = r.update(claimed(fresh, 1, false), attempt{op: "reconcile", trigger: "created", err: errMsg("boom")}, unchanged(claimed(fresh, 1, false)))
	if u.History.Revision != "abc1234" || u.History.Message != "boom" {
		t.Fatalf("history of a reconcile: %+v", u.History)
	}
}

// TestBoundOutputsConfigSecrets: the config's secrets are checked against output numbers as
// a call's are: a number that is a secret as written or in its canonical form is replaced
// (secret "1e3" and output 1000 included), a number that merely contains one is kept.
func TestBoundOutputsConfigSecrets(t *testing.T) {
	t.Parallel()
	secrets := []string{"1e3", "5432"}
	r := New(nil, nil, Options{Replica: "replica-a", Redact: redact.New(secrets...)},
		slog.New(slog.DiscardHandler))
	for _, c := range []struct {
		out  any
		want any
	}{
		{1000, "***"},  // the canonical form of secret 1e3
		{1e3, "***"},   // the same number
		{5432, "***"},  // written as the secret
		{15432, 15432}, // contains a secret's digits: another number
		{1001, 1001},
	} {
		got := r.boundOutputs(map[string]any{"n": c.out})
		b, _ := json.Marshal(got["n"])
		w, _ := json.Marshal(c.want)
		if string(b) != string(w) {
			t.Errorf("output %v: stored %s, want %s", c.out, b, w)
		}
	}
}
