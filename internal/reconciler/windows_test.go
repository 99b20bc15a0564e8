package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/changewindow"
	"github.com/trueup-dev/trueup/internal/policy"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
)

// windowFixture is a gate fixture without policies whose change windows the test sets.
type windowFixture struct {
	*gateFixture
	windows atomic.Pointer[changewindow.Set]
}

func newWindowFixture(t *testing.T, act actions.Action, ws ...changewindow.Window) *windowFixture {
	t.Helper()
	wf := &windowFixture{}
	wf.setWindows(t, ws...)
	wf.gateFixture = newGateFixtureWith(t, act, func(o *Options) { o.Windows = wf.windows.Load })
	return wf
}

func (f *windowFixture) setWindows(t *testing.T, ws ...changewindow.Window) {
	t.Helper()
	set, err := changewindow.Compile(ws)
	if err != nil {
		t.Fatal(err)
	}
	f.windows.Store(set)
}

// freeze is a deny window selecting db, open from the start of the current minute (UTC)
// until until.
func freeze(until time.Time, allowOperators bool) changewindow.Window {
	start := time.Now().UTC().Truncate(time.Minute)
	return changewindow.Window{Name: "freeze", Kind: changewindow.Deny, Schedule: start.Format("4 15 * * *"), Duration: until.Sub(start),
		Match: critical, AllowOperators: allowOperators}
}

// waitHeld waits until db shows the window's hold.
func (f *windowFixture) waitHeld() store.Resource {
	f.t.Helper()
	var res store.Resource
	waitFor(f.t, "db held by a window", func() (bool, string) {
		res = f.get("db")
		rec, _ := status.Get(res.Status.Conditions, status.Reconciling)
		return rec.Reason == status.ReasonWindowClosed, shows(res)
	})
	return res
}

func (f *windowFixture) runAt() *time.Time {
	f.t.Helper()
	var at *time.Time
	if err := f.db.QueryRow(f.ctx, `SELECT run_at FROM resources JOIN resource_queue USING (id) WHERE name = 'db'`).Scan(&at); err != nil {
		f.t.Fatal(err)
	}
	return at
}

func (f *windowFixture) history(result string) []store.HistoryEntry {
	f.t.Helper()
	hs, err := f.st.ListHistory(f.ctx, "default", "Widget", "db", 100)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []store.HistoryEntry
	for _, h := range hs {
		if h.Result == result {
			out = append(out, h)
		}
	}
	return out
}

// A create under a deny window is not called: it shows the window and when it may proceed,
// is due then, and runs once the windows let it (here a reload that moves the window's end
// closer: RequeueWindowed looks at it again); a resource no window selects runs as before.
func TestWindowHoldsCreate(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	until := time.Now().Add(time.Hour)
	f := newWindowFixture(t, callsOnly{rec}, freeze(until, false))
	f.waitPhase("other", status.PhaseReady)
	res := f.waitHeld()
	v := f.windows.Load().Check(windowResourceOf(res), time.Now())
	rc, _ := status.Get(res.Status.Conditions, status.Reconciling)
	ready, _ := status.Get(res.Status.Conditions, status.Ready)
	if res.Status.Phase != status.PhasePending || rc.Message != v.Message() || ready.Status != status.Unknown || !strings.Contains(rc.Message, v.Until.Format(time.RFC3339)) {
		t.Errorf("held: %s (verdict %s)", shows(res), v.Message())
	}
	if err := status.Check(status.State{Phase: res.Status.Phase, Conditions: res.Status.Conditions, ObservedGeneration: res.Status.ObservedGeneration}, res.Metadata.Generation, true); err != nil {
		t.Error(err)
	}
	if at := f.runAt(); at == nil || !at.Equal(v.Until.Truncate(time.Microsecond)) {
		t.Errorf("run_at %v; want %v", at, v.Until)
	}
	if n := rec.count("reconcile db"); n != 0 {
		t.Errorf("a held create was called %d times", n)
	}
	if hs := f.history(resultWindowClosed); len(hs) != 1 || hs[0].Message != v.Message() || hs[0].Trigger != "created" {
		t.Errorf("history %+v", hs)
	}
	if evs := f.events(status.ReasonWindowClosed); len(evs) != 1 || evs[0].Type != store.EventNormal || evs[0].Message != v.Message() {
		t.Errorf("WindowClosed events %+v", evs)
	}

	// The window is reloaded to close in a moment: db is looked at again, held until then,
	// and applied once it closed.
	soon := time.Now().Add(time.Second)
	f.setWindows(t, freeze(soon, false))
	if n, err := f.st.RequeueWindowed(f.ctx); err != nil || n != 1 {
		t.Fatalf("RequeueWindowed = %d, %v", n, err)
	}
	f.waitPhase("db", status.PhaseReady)
	ok := f.history(resultSucceeded)
	if len(ok) != 1 || ok[0].StartedAt.Before(soon) {
		t.Errorf("applied %+v; want once, after %v", ok, soon)
	}
	if n := rec.count("reconcile db"); n != 1 {
		t.Errorf("db called %d times", n)
	}
	res = f.get("db")
	if rc, ok := status.Get(res.Status.Conditions, status.Reconciling); ok {
		t.Errorf("Reconciling left after the apply: %+v", rc)
	}
}

func windowResourceOf(res store.Resource) *policy.Resource {
	return &policy.Resource{Namespace: res.Metadata.Namespace, Kind: res.Kind, Name: res.Metadata.Name, Labels: res.Metadata.Labels}
}

// inFlight answers its first reconcile with work in progress (and a handle), the next ones
// with success.
type inFlight struct{ *recorder }

func (a inFlight) Reconcile(_ context.Context, req actions.Request) (actions.Result, error) {
	a.record("reconcile %s", req.Resource.Name)
	if len(req.State) == 0 {
		return actions.Result{State: json.RawMessage(`{"op":"1"}`), RequeueAfter: time.Hour}, nil
	}
	return actions.Result{Done: true, State: req.State}, nil
}

func (a inFlight) Delete(_ context.Context, req actions.Request) (actions.Result, error) {
	a.record("delete %s", req.Resource.Name)
	return actions.Result{Done: true}, nil
}

// A window that opens while work is in flight lets it finish: its requeue is never held.
func TestWindowNeverHoldsRequeue(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	f := newWindowFixture(t, inFlight{rec})
	waitFor(t, "db in progress", func() (bool, string) {
		return rec.count("reconcile db") == 1 && f.get("db").Status.Phase == status.PhaseReconciling, shows(f.get("db"))
	})
	f.setWindows(t, freeze(time.Now().Add(time.Hour), true))
	f.due()
	f.waitPhase("db", status.PhaseReady)
	if hs := f.history(resultWindowClosed); len(hs) != 0 || rec.count("reconcile db") != 2 {
		t.Errorf("held %+v; calls %q", hs, rec.log())
	}
}

// An override lets exactly one call through the window, is named in its history and
// cleared; the next change is held again.
func TestWindowOverride(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	f := newWindowFixture(t, callsOnly{rec}, freeze(time.Now().Add(time.Hour), true))
	f.waitHeld()
	if _, err := f.db.Exec(f.ctx, `WITH r AS (UPDATE resources SET window_override = jsonb_build_object('actor', 'token:ops', 'reason', 'hotfix', 'at', now())
		WHERE name = 'db' RETURNING id) UPDATE resource_queue q SET manual_requested_by = 'token:ops', run_at = now() FROM r WHERE q.id = r.id`); err != nil {
		t.Fatal(err)
	}
	f.waitPhase("db", status.PhaseReady)
	h := f.history(resultSucceeded)
	if len(h) != 1 || !strings.HasPrefix(h[0].Message, "change window freeze overridden by token:ops: hotfix; ") || h[0].Actor != "token:ops" {
		t.Errorf("history %+v", h)
	}
	var cleared bool
	if err := f.db.QueryRow(f.ctx, `SELECT window_override IS NULL FROM resources WHERE name = 'db'`).Scan(&cleared); err != nil || !cleared {
		t.Errorf("override cleared %v, %v", cleared, err)
	}
	// Another operator's request without an override is held.
	if _, err := f.db.Exec(f.ctx, `UPDATE resource_queue SET manual_requested_by = 'token:ops', run_at = now() WHERE id IN (SELECT id FROM resources WHERE name = 'db')`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the manual request held", func() (bool, string) {
		hs := f.history(resultWindowClosed)
		return len(hs) == 2 && hs[0].Trigger == "manual", shows(f.get("db"))
	})
	if n := rec.count("reconcile db"); n != 1 {
		t.Errorf("db called %d times; want 1", n)
	}
	if res := f.get("db"); res.Status.Phase != status.PhaseReady {
		t.Errorf("a held request of a Ready resource: %s", shows(res))
	}
}

// A window does not stop drift detection: Observe runs, the drift correction is held (the
// resource stays Ready), and a reload that removes the window corrects it at once.
func TestWindowHoldsDriftCorrection(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	f := newWindowFixture(t, planner{callsOnly{rec}})
	f.waitPhase("db", status.PhaseReady)
	f.setWindows(t, freeze(time.Now().Add(time.Hour), true))
	rec.setDrift(true)
	f.due()
	res := f.waitHeld()
	ready, _ := status.Get(res.Status.Conditions, status.Ready)
	if res.Status.Phase != status.PhaseReady || ready.Status != status.True || rec.count("observe db") != 1 || rec.count("reconcile db") != 1 {
		t.Errorf("held drift: %s; calls %q", shows(res), rec.log())
	}
	if hs := f.history(resultWindowClosed); len(hs) != 1 || hs[0].Trigger != "resync" {
		t.Errorf("history %+v", hs)
	}

	f.setWindows(t)
	if n, err := f.st.RequeueWindowed(f.ctx); err != nil || n != 1 {
		t.Fatalf("RequeueWindowed = %d, %v", n, err)
	}
	waitFor(t, "drift corrected", func() (bool, string) {
		res = f.get("db")
		_, rec2 := status.Get(res.Status.Conditions, status.Reconciling)
		return rec.count("reconcile db") == 2 && !rec2 && res.Status.Phase == status.PhaseReady, shows(res)
	})
}

// alwaysOpen is a deny window open at any time (hourly, for two hours) selecting namespace
// ns.
func alwaysOpen(t testing.TB, ns string, allowOperators bool) *changewindow.Set {
	t.Helper()
	set, err := changewindow.Compile([]changewindow.Window{{Name: "freeze", Kind: changewindow.Deny, Schedule: "@hourly", Duration: 2 * time.Hour,
		Match: policy.Match{Namespaces: []string{ns}}, AllowOperators: allowOperators}})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestCheckWindows: which calls a window holds before the call, which are checked once
// Observe found drift, and which an override lets through.
func TestCheckWindows(t *testing.T) {
	t.Parallel()
	deleting, inFlight := deleteClaims()
	override := func(c *store.Claimed) {
		c.ManualBy = "token:ops"
		c.WindowOverride = &store.WindowOverride{Actor: "token:ops", Reason: "hotfix", At: tPrev}
	}
	for _, tc := range []struct {
		name       string
		c          store.Claimed
		operators  bool
		held       bool
		recheck    bool
		overridden string
	}{
		{name: "first apply", c: claimed(fresh, 1, false), held: true},
		{name: "new generation", c: claimed(readyGen1, 2, false), held: true},
		{name: "retry", c: claimed(failedG1, 1, false, withAttempt(1)), held: true},
		{name: "operator's request", c: claimed(readyGen1, 1, false, func(c *store.Claimed) { c.ManualBy = "token:ops" }), held: true},
		{name: "dependency's outputs", c: claimed(readyGen1, 1, false, func(c *store.Claimed) { c.DependencyBy = "default/Bucket/b" }), held: true},
		{name: "delete", c: deleting, held: true},
		{name: "delete in progress", c: inFlight},
		{name: "requeue of work in flight", c: claimed(mustResult(claimState(readyGen1, 2, false), status.Outcome{Generation: 2, CurrentGeneration: 2, InProgress: true}),
			2, false, withState(`{"op":"x"}`))},
		{name: "resync: checked once Observe found drift", c: claimed(readyGen1, 1, false), recheck: true},
		{name: "override", c: claimed(readyGen1, 2, false, override), operators: true, overridden: "change window freeze overridden by token:ops: hotfix; "},
		{name: "override of a window that refuses it", c: claimed(readyGen1, 2, false, override), held: true},
	} {
		r := newTestReconciler()
		set := alwaysOpen(t, "default", tc.operators)
		r.opts.Windows = func() *changewindow.Set { return set }
		a := attempt{trigger: trigger(tc.c)}
		r.checkWindows(&tc.c, &a)
		if (a.window.held != nil) != tc.held || (a.window.recheck != nil) != tc.recheck || a.window.overridden != tc.overridden {
			t.Errorf("%s (trigger %s): held %v recheck %v overridden %q", tc.name, a.trigger, a.window.held, a.window.recheck != nil, a.window.overridden)
		}
		if a.window.recheck != nil && !r.windowHolds(a.window.recheck, &a) {
			t.Errorf("%s: drift found, not held", tc.name)
		}
	}
}

// The claim found the work due by the database's clock: a controller clock behind it does
// not see the window that closed at the work's due time still open (and hold it again, at
// once due again, until the controller's clock catches up).
func TestWindowCheckedAtDatabaseTime(t *testing.T) {
	t.Parallel()
	until := time.Now().Add(time.Hour).Truncate(time.Second)
	set, err := changewindow.Compile([]changewindow.Window{freeze(until, false)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		dbNow time.Time
		held  bool
	}{
		{"no database time", time.Time{}, true},
		{"database clock behind the controller's", time.Now().Add(-time.Minute), true},
		{"database clock at the window's end", until, false},
		{"database clock past the window's end", until.Add(time.Second), false},
	} {
		r := newTestReconciler()
		r.opts.Windows = func() *changewindow.Set { return set }
		c := claimed(readyGen1, 2, false, func(c *store.Claimed) { c.DBNow, c.Labels = tc.dbNow, map[string]string{"tier": "critical"} })
		a := attempt{trigger: trigger(c)}
		r.checkWindows(&c, &a)
		if (a.window.held != nil) != tc.held {
			t.Errorf("%s: held %v; want %v", tc.name, a.window.held, tc.held)
		}
	}
}

// A resource no window selects pays the windows' match, without allocating.
func TestCheckWindowsUnselectedAllocatesNothing(t *testing.T) {
	r := newTestReconciler()
	set := alwaysOpen(t, "production", true)
	r.opts.Windows = func() *changewindow.Set { return set }
	c := claimed(readyGen1, 2, false)
	var a attempt
	if n := testing.AllocsPerRun(100, func() {
		a = attempt{trigger: "spec-changed"}
		r.checkWindows(&c, &a)
	}); n != 0 || a.window.held != nil {
		t.Errorf("%v allocations, held %v", n, a.window.held)
	}
}

// TestWindowClosedUpdate: what the write of a held change stores, and of a call an override
// let through.
func TestWindowClosedUpdate(t *testing.T) {
	t.Parallel()
	until := time.Now().Add(time.Hour).Truncate(time.Second)
	verdict := changewindow.Verdict{Closed: true, Window: "freeze", Kind: changewindow.Deny, Until: until}
	msg := verdict.Message()
	// A claim of a resource created and never called: its status as the syncer stored it.
	created := claimed(fresh, 1, false)
	created.Phase, created.Conditions = fresh.Phase, fresh.Conditions
	heldBefore := created
	heldBefore.Conditions = status.WindowHeld(fresh, false, msg, tPrev).Conditions
	failedG2 := mustResult(claimState(readyGen1, 2, false), status.Outcome{Generation: 2, CurrentGeneration: 2, Err: "boom"})
	forever := verdict
	forever.Until, forever.Forever = time.Time{}, true
	for _, tc := range []struct {
		name    string
		c       store.Claimed
		v       changewindow.Verdict
		cur     func(store.Claimed) store.Current
		phase   string
		reason  string
		runAt   *time.Time // nil: none; the zero time: about now
		attempt int
		events  int
		quiet   bool // no history row
	}{
		{"held create", created, verdict, unchanged, status.PhasePending, status.ReasonWindowClosed, &until, 0, 1, false},
		{"held again, the same message", heldBefore, verdict, unchanged, status.PhasePending, status.ReasonWindowClosed, &until, 0, 0, true},
		{"held with no opening known", created, forever, unchanged, status.PhasePending, status.ReasonWindowClosed, nil, 0, 1, false},
		{"a newer generation arrived", created, verdict, func(c store.Claimed) store.Current { return specChanged(c, 2) }, status.PhasePending,
			status.ReasonNewGeneration, &time.Time{}, 0, 1, false},
		{"a deletion arrived", created, verdict, markedDeleted, status.PhaseDeleting, status.ReasonDeletionRequested, &time.Time{}, 0, 1, false},
		{"held retry of a first apply keeps its attempt", claimed(failedG1, 1, false, withAttempt(3)), verdict, unchanged, status.PhasePending,
			status.ReasonWindowClosed, &until, 3, 1, false},
		{"held retry of a change keeps its phase", claimed(failedG2, 2, false, withAttempt(1)), verdict, unchanged, status.PhaseFailed,
			status.ReasonWindowClosed, &until, 1, 1, false},
	} {
		v := tc.v
		a := attempt{op: "reconcile", trigger: trigger(tc.c), window: windowCheck{held: &v}}
		u := newTestReconciler().update(tc.c, a, tc.cur(tc.c))
		rec, _ := status.Get(u.Conditions, status.Reconciling)
		if u.Phase != tc.phase || rec.Reason != tc.reason || u.Attempt != tc.attempt || len(u.Events) != tc.events ||
			(u.History == nil) != tc.quiet || u.History != nil && (u.History.Result != resultWindowClosed || u.History.Message != v.Message()) ||
			u.ClearWindowOverride != nil || !u.KeepActionState {
			t.Errorf("%s: phase %s Reconciling %s attempt %d events %+v history %+v", tc.name, u.Phase, rec.Reason, u.Attempt, u.Events, u.History)
		}
		switch {
		case tc.runAt == nil && u.RunAt != nil, tc.runAt != nil && u.RunAt == nil:
			t.Errorf("%s: run at %v; want %v", tc.name, u.RunAt, tc.runAt)
		case tc.runAt != nil && tc.runAt.IsZero() && time.Since(*u.RunAt) > time.Minute, tc.runAt != nil && !tc.runAt.IsZero() && !u.RunAt.Equal(*tc.runAt):
			t.Errorf("%s: run at %v; want %v", tc.name, u.RunAt, tc.runAt)
		}
	}

	// A call an override let through: named in history, and the override cleared.
	o := &store.WindowOverride{Actor: "token:ops", Reason: "hotfix", At: tPrev}
	c := claimed(readyGen1, 2, false, func(c *store.Claimed) { c.ManualBy, c.WindowOverride = "token:ops", o })
	u := newTestReconciler().update(c, attempt{op: "reconcile", trigger: "manual", res: actions.Result{Done: true, Message: "applied"},
		window: windowCheck{overridden: "change window freeze overridden by token:ops: hotfix; "}}, unchanged(c))
	if u.History.Message != "change window freeze overridden by token:ops: hotfix; applied" || u.ClearWindowOverride != o || u.Phase != status.PhaseReady {
		t.Errorf("overridden: %s %+v %s", u.History.Message, u.ClearWindowOverride, u.Phase)
	}
}

// A delete under a window waits (phase Deleting, not called) and runs once a reload removes
// the window; an override of a window that refuses operators lets nothing through and is
// used up.
func TestWindowHoldsDelete(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	f := newWindowFixture(t, callsOnly{rec})
	f.waitPhase("db", status.PhaseReady)
	f.setWindows(t, freeze(time.Now().Add(time.Hour), false))
	f.apply(gateManifests(1, false))
	res := f.waitHeld()
	if res.Status.Phase != status.PhaseDeleting || rec.count("delete db") != 0 {
		t.Errorf("held delete: %s; calls %q", shows(res), rec.log())
	}
	if _, err := f.db.Exec(f.ctx, `WITH r AS (UPDATE resources SET window_override = jsonb_build_object('actor', 'token:ops', 'reason', 'hotfix', 'at', now())
		WHERE name = 'db' RETURNING id) UPDATE resource_queue q SET manual_requested_by = 'token:ops', run_at = now() FROM r WHERE q.id = r.id`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the override refused", func() (bool, string) {
		hs := f.history(resultWindowClosed)
		return len(hs) == 2 && hs[0].Trigger == "manual" &&
			strings.HasPrefix(hs[0].Message, "override by token:ops refused: window freeze does not allow operators; "), shows(f.get("db"))
	})
	var cleared bool
	if err := f.db.QueryRow(f.ctx, `SELECT window_override IS NULL FROM resources WHERE name = 'db'`).Scan(&cleared); err != nil || !cleared {
		t.Errorf("override cleared %v, %v", cleared, err)
	}
	f.setWindows(t)
	if n, err := f.st.RequeueWindowed(f.ctx); err != nil || n != 1 {
		t.Fatalf("RequeueWindowed = %d, %v", n, err)
	}
	waitFor(t, "db deleted", func() (bool, string) {
		_, err := f.st.GetResource(f.ctx, "default", "Widget", "db")
		return err != nil && rec.count("delete db") == 1, strings.Join(rec.log(), ", ")
	})
}

// An operator's request held by a window stays one: when the windows let it proceed, it
// runs as a manual reconcile naming the operator, not as a resync that may find nothing to
// do.
func TestWindowKeepsManualRequest(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	f := newWindowFixture(t, callsOnly{rec})
	f.waitPhase("db", status.PhaseReady)
	f.setWindows(t, freeze(time.Now().Add(time.Hour), false))
	if _, err := f.db.Exec(f.ctx, `UPDATE resource_queue SET manual_requested_by = 'token:ops', run_at = now() WHERE id IN (SELECT id FROM resources WHERE name = 'db')`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the manual request held", func() (bool, string) {
		hs := f.history(resultWindowClosed)
		return len(hs) == 1 && hs[0].Trigger == "manual" && hs[0].Actor == "token:ops", shows(f.get("db"))
	})
	var by *string
	if err := f.db.QueryRow(f.ctx, `SELECT manual_requested_by FROM resources JOIN resource_queue USING (id) WHERE name = 'db'`).Scan(&by); err != nil || by == nil || *by != "token:ops" {
		t.Fatalf("held request: manual_requested_by %v, %v", by, err)
	}
	f.setWindows(t)
	if n, err := f.st.RequeueWindowed(f.ctx); err != nil || n != 1 {
		t.Fatalf("RequeueWindowed = %d, %v", n, err)
	}
	waitFor(t, "the manual request run", func() (bool, string) {
		hs := f.history(resultSucceeded)
		return len(hs) == 2 && hs[0].Trigger == "manual" && hs[0].Actor == "token:ops", shows(f.get("db"))
	})
}

// One override serves the next call of the resource whatever comes of it: only a change that
// waits for approvals keeps it (for the approved call). A window that refuses it uses it up,
// and history says so.
func TestOverrideServesOneCall(t *testing.T) {
	t.Parallel()
	o := &store.WindowOverride{Actor: "token:ops", Reason: "hotfix", At: tPrev}
	c := claimed(readyGen1, 2, false, func(c *store.Claimed) { c.ManualBy, c.WindowOverride = "token:ops", o })
	refused := changewindow.Verdict{Closed: true, Window: "freeze", Kind: changewindow.Deny, Until: time.Now().Add(time.Hour).Truncate(time.Second),
		Refusing: "freeze"}
	denied := policy.Decision{Action: policy.Deny, Policy: "p", Message: "no"}
	waiting := policy.Decision{Action: policy.RequireApproval, Policy: "p", Message: "needs a DBA",
		Approvals: []policy.Requirement{{Policy: "p", Approvals: policy.Approvals{Count: 1, From: []policy.Principal{{Group: "dba"}}}}}}
	for _, tc := range []struct {
		name    string
		a       attempt
		cleared bool
		history string // prefix of the history message ("": not checked)
	}{
		{"applied", attempt{res: actions.Result{Done: true}, window: windowCheck{overridden: "change window freeze overridden by token:ops: hotfix; "}}, true, ""},
		{"failed", attempt{err: errors.New("boom"), window: windowCheck{overridden: "change window freeze overridden by token:ops: hotfix; "}}, true, ""},
		{"denied by a policy", attempt{gate: ptr(with(gate{}, gateDenied, denied))}, true, ""},
		{"waits for approvals", attempt{gate: ptr(with(gate{}, gateWaiting, waiting))}, false, ""},
		{"refused by a window", attempt{window: windowCheck{held: &refused}}, true,
			"override by token:ops refused: window freeze does not allow operators; change window freeze (deny) holds changes until "},
	} {
		tc.a.op, tc.a.trigger = "reconcile", "manual"
		u := newTestReconciler().update(c, tc.a, unchanged(c))
		if (u.ClearWindowOverride == o) != tc.cleared {
			t.Errorf("%s: cleared %+v; want %v", tc.name, u.ClearWindowOverride, tc.cleared)
		}
		if tc.history != "" && (u.History == nil || !strings.HasPrefix(u.History.Message, tc.history)) {
			t.Errorf("%s: history %+v", tc.name, u.History)
		}
	}
}

// slowObserver is a planner whose Observe takes a while, so that the call's start is
// written before its result.
type slowObserver struct{ planner }

func (a slowObserver) Observe(ctx context.Context, req actions.Request) (actions.Observation, error) {
	select {
	case <-time.After(300 * time.Millisecond):
	case <-ctx.Done():
	}
	return a.planner.Observe(ctx, req)
}

// A drift correction held by a window, whose drift is gone by the time the window is: the
// resync finds nothing to do and leaves db Ready with no Reconciling of any kind, uncalled.
func TestWindowHeldDriftVanishes(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	f := newWindowFixture(t, slowObserver{planner{callsOnly{rec}}})
	f.waitPhase("db", status.PhaseReady)
	f.setWindows(t, freeze(time.Now().Add(time.Hour), true))
	rec.setDrift(true)
	f.due()
	res := f.waitHeld()
	if ready, _ := status.Get(res.Status.Conditions, status.Ready); res.Status.Phase != status.PhaseReady || ready.Status != status.True {
		t.Errorf("held drift: %s", shows(res))
	}

	rec.setDrift(false)
	f.setWindows(t)
	if n, err := f.st.RequeueWindowed(f.ctx); err != nil || n != 1 {
		t.Fatalf("RequeueWindowed = %d, %v", n, err)
	}
	waitFor(t, "db resynced after the window", func() (bool, string) {
		return rec.count("observe db") >= 2, fmt.Sprint(rec.log())
	})
	f.waitIdle()
	res = f.get("db")
	ready, _ := status.Get(res.Status.Conditions, status.Ready)
	if res.Status.Phase != status.PhaseReady || ready.Status != status.True {
		t.Errorf("db after the resync: %s", shows(res))
	}
	if rc, ok := status.Get(res.Status.Conditions, status.Reconciling); ok {
		t.Errorf("Reconciling left after the resync: %+v", rc)
	}
	if n := rec.count("reconcile db"); n != 1 {
		t.Errorf("db called %d times; want only the first apply: %q", n, rec.log())
	}
}

// Drift left in place under detect or notify is no change a window holds: under a closed
// deny window the resync records it (Drifted, its history row, a notification under
// notify) and shows no WindowClosed; remediate's correction is held.
func TestDriftDetectUnderFreeze(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"notify", "detect"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			var windows atomic.Pointer[changewindow.Set]
			f, act, rec := newDriftFixtureWith(t, "{mode: "+mode+"}", func(o *Options) { o.Windows = windows.Load })
			set, err := changewindow.Compile([]changewindow.Window{freeze(time.Now().Add(time.Hour), false)})
			if err != nil {
				t.Fatal(err)
			}
			windows.Store(set)
			act.set(actions.Observation{Drift: []actions.DriftPath{{Path: "/size", Expected: 1, Actual: 2}}})
			msg := "drift detected, not corrected (drift mode " + mode + "): /size: expected 1, found 2"
			if h := f.resync(); h.Result != resultDrifted || h.Message != msg {
				t.Errorf("history %s %q", h.Result, h.Message)
			}
			if c := f.drifted(); c.Status != status.True || c.Message != msg {
				t.Errorf("Drifted %+v", c)
			}
			res := f.get("db")
			if rc, ok := status.Get(res.Status.Conditions, status.Reconciling); ok {
				t.Errorf("Reconciling under %s: %+v", mode, rc)
			}
			want := map[string]int{"notify": 1, "detect": 0}[mode]
			if n := f.notifications("Drifted"); len(n) != want {
				t.Errorf("notifications %q; want %d", n, want)
			}
			var held int
			for _, h := range f.history() {
				if h.Result == resultWindowClosed {
					held++
				}
			}
			if held != 0 || rec.count("reconcile db") != 1 {
				t.Errorf("%d WindowClosed rows; calls %q", held, rec.log())
			}

			// Under remediate the same drift's correction is held.
			f.apply(strings.Replace(gateManifests(1, true), "  action: {name: act}\n", "  action: {name: act}\n  drift: {mode: remediate}\n", 1))
			f.due()
			waitFor(t, "the correction held", func() (bool, string) {
				res := f.get("db")
				rc, _ := status.Get(res.Status.Conditions, status.Reconciling)
				return rc.Reason == status.ReasonWindowClosed, shows(res)
			})
			if n := rec.count("reconcile db"); n != 1 {
				t.Errorf("db called %d times under the window: %q", n, rec.log())
			}
		})
	}
}

// A change that needs approval under an open deny window is held by the window first: no
// plan, no approval request; once the window is gone the gate asks, and an approval lets it
// through once.
func TestApprovalDuringFreeze(t *testing.T) {
	t.Parallel()
	rec := &recorder{plan: replacePlan}
	wf := &windowFixture{}
	wf.setWindows(t, freeze(time.Now().Add(time.Hour), false))
	wf.gateFixture = newGateFixtureWith(t, planner{callsOnly{rec}}, func(o *Options) { o.Windows = wf.windows.Load }, needsDBA("plan.replace > 0"))
	f := wf
	f.waitHeld()
	f.waitIdle()
	if state, _, _, _, _ := f.request(); state != "" || rec.count("plan db") != 0 || rec.count("reconcile db") != 0 {
		t.Errorf("under the window: request %q, calls %q", state, rec.log())
	}
	if res := f.get("db"); hasCondition(res, status.Approved) {
		t.Errorf("Approved while the window holds: %s", shows(res))
	}

	f.setWindows(t)
	if n, err := f.st.RequeueWindowed(f.ctx); err != nil || n != 1 {
		t.Fatalf("RequeueWindowed = %d, %v", n, err)
	}
	f.waitApproved("db", status.False, status.ReasonApprovalRequired)
	state, hash, _, _, _ := f.request()
	if state != store.ApprovalPending || hash != replacePlan.Hash || rec.count("reconcile db") != 0 {
		t.Fatalf("request %s %s; calls %q", state, hash, rec.log())
	}
	f.vote(true, "dba", hash, "ok", 0)
	f.waitApproved("db", status.True, status.ReasonApproved)
	f.waitPhase("db", status.PhaseReady)
	f.waitIdle()
	if n := rec.count("reconcile db approved=" + replacePlan.Hash); n != 1 || rec.count("reconcile db") != 1 {
		t.Errorf("calls %q; want one reconcile with the approved plan", rec.log())
	}
}

func hasCondition(res store.Resource, typ string) bool {
	_, ok := status.Get(res.Status.Conditions, typ)
	return ok
}
