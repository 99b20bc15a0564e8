package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/policy"
	"github.com/trueup-dev/trueup/internal/redact"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
)

// recorder counts what a test action was asked to do, one line per call:
// "plan db keep", "planDelete db keep", "reconcile db approved=HASH", "delete db approved=",
// "observe db".
type recorder struct {
	mu    sync.Mutex
	calls []string
	plan  actions.Plan // what Plan and PlanDelete return
	drift bool         // what Observe finds
}

func (r *recorder) record(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf(format, args...))
}

func (r *recorder) setPlan(p actions.Plan) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.plan = p
}

func (r *recorder) setDrift(drift bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drift = drift
}

// count is how many calls of the recorder start with prefix.
func (r *recorder) count(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

func (r *recorder) log() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// callsOnly is an action that cannot plan.
type callsOnly struct{ *recorder }

func (a callsOnly) Reconcile(_ context.Context, req actions.Request) (actions.Result, error) {
	a.record("reconcile %s approved=%s", req.Resource.Name, req.ApprovedPlan)
	return actions.Result{Done: true}, nil
}

func (a callsOnly) Delete(_ context.Context, req actions.Request) (actions.Result, error) {
	a.record("delete %s approved=%s", req.Resource.Name, req.ApprovedPlan)
	return actions.Result{Done: true}, nil
}

// planner plans reconciles and deletes with counts, and observes drift.
type planner struct{ callsOnly }

func (a planner) Plan(_ context.Context, req actions.Request) (actions.Plan, error) {
	a.record("plan %s keep=%v", req.Resource.Name, req.KeepPlan)
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.plan, nil
}

func (a planner) PlanDelete(_ context.Context, req actions.Request) (actions.Plan, error) {
	a.record("planDelete %s keep=%v", req.Resource.Name, req.KeepPlan)
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.plan, nil
}

func (a planner) Observe(_ context.Context, req actions.Request) (actions.Observation, error) {
	a.record("observe %s", req.Resource.Name)
	a.mu.Lock()
	defer a.mu.Unlock()
	return actions.Observation{InSync: !a.drift, Message: "size differs"}, nil
}

var (
	_ actions.DeletePlanner = planner{}
	_ actions.Observer      = planner{}
)

// gateManifests: db is critical (the policies select it), other is not.
func gateManifests(size int, withDB bool) string {
	out := widgetType + `---
apiVersion: gate.example.com/v1
kind: Widget
metadata: {name: other, namespace: default}
spec: {size: 1}
`
	if withDB {
		out += fmt.Sprintf(`---
apiVersion: gate.example.com/v1
kind: Widget
metadata: {name: db, namespace: default, labels: {tier: critical}}
spec: {size: %d}
`, size)
	}
	return out
}

var critical = policy.Match{Selector: "tier=critical"}

var ann = policy.Author{Name: "Ann", Email: "ann@example.com"}

// gateFixture is a store, a running reconciler with live policies, and a connection for the
// votes an API would insert.
type gateFixture struct {
	t        *testing.T
	ctx      context.Context
	st       *store.Store
	db       *pgx.Conn
	policies atomic.Pointer[policy.Set]
	rev      int
}

const testTTL = time.Hour

func newGateFixture(t *testing.T, act actions.Action, policies ...policy.Policy) *gateFixture {
	t.Helper()
	return newGateFixtureWith(t, act, func(*Options) {}, policies...)
}

// newGateFixtureWith is newGateFixture with the reconciler's options changed by tweak.
func newGateFixtureWith(t *testing.T, act actions.Action, tweak func(*Options), policies ...policy.Policy) *gateFixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	url := pgtest.NewDatabase(t, store.MigrateURL)
	st, err := store.Open(ctx, url, store.Options{MaxConns: 6})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	if err := st.RegisterSource(ctx, store.SourceConfig{Name: "infra"}); err != nil {
		t.Fatal(err)
	}
	f := &gateFixture{t: t, ctx: ctx, st: st, db: db}
	f.setPolicies(policies...)
	log := slog.New(slog.DiscardHandler)
	opts := Options{Replica: "r1", Workers: 2, LeaseTTL: time.Minute,
		BackoffInitial: time.Hour, BackoffMax: time.Hour, PollInterval: 50 * time.Millisecond,
		Policies: func() (*policy.Set, time.Duration) { return f.policies.Load(), testTTL },
		Author: func(_ context.Context, source, revision string) (policy.Author, error) {
			if source != "infra" || !strings.HasPrefix(revision, "r") {
				return policy.Author{}, fmt.Errorf("unexpected revision %s/%s", source, revision)
			}
			return ann, nil
		}}
	tweak(&opts)
	r := New(st, map[string]actions.Action{"act": act}, opts, log)
	var bg sync.WaitGroup
	t.Cleanup(bg.Wait)
	t.Cleanup(cancel)
	f.apply(gateManifests(1, true))
	bg.Go(func() { _ = r.Run(ctx) })
	return f
}

func (f *gateFixture) setPolicies(ps ...policy.Policy) {
	f.t.Helper()
	set, err := policy.Compile(ps)
	if err != nil {
		f.t.Fatal(err)
	}
	f.policies.Store(set)
}

// apply applies manifests as the source's next revision.
func (f *gateFixture) apply(yaml string) {
	f.t.Helper()
	f.rev++
	set, err := manifest.NewLoader().Load([]sources.File{{Path: "widgets.yaml", Data: []byte(yaml)}}, manifest.Options{})
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.st.ApplyRevision(f.ctx, store.ApplyParams{Source: "infra", Revision: fmt.Sprintf("r%d", f.rev), Set: set, Prune: true, MaxPruneFraction: 1}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *gateFixture) get(name string) store.Resource {
	f.t.Helper()
	res, err := f.st.GetResource(f.ctx, "default", "Widget", name)
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

func shows(res store.Resource) string {
	var parts []string
	for _, c := range res.Status.Conditions {
		parts = append(parts, c.Type+"="+c.Status+"/"+c.Reason+" "+c.Message)
	}
	return res.Status.Phase + " " + strings.Join(parts, "; ")
}

// waitApproved waits until name's Approved condition is status/reason.
func (f *gateFixture) waitApproved(name, st, reason string) store.Resource {
	f.t.Helper()
	var res store.Resource
	waitFor(f.t, name+" Approved="+st+"/"+reason, func() (bool, string) {
		res = f.get(name)
		c, _ := status.Get(res.Status.Conditions, status.Approved)
		return c.Status == st && c.Reason == reason, shows(res)
	})
	return res
}

func (f *gateFixture) waitPhase(name, phase string) store.Resource {
	f.t.Helper()
	var res store.Resource
	waitFor(f.t, name+" "+phase, func() (bool, string) {
		res = f.get(name)
		return res.Status.Phase == phase, shows(res)
	})
	return res
}

// request reads db's approval request: state, plan hash, change type, plan text, author
// ("" state when none).
func (f *gateFixture) request() (state, hash, change, text, author string) {
	f.t.Helper()
	err := f.db.QueryRow(f.ctx, `SELECT a.state, a.plan_hash, a.change_type, a.plan->>'text', a.author_email FROM approval_requests a
		JOIN resources r ON r.id = a.resource_id WHERE r.name = 'db'`).Scan(&state, &hash, &change, &text, &author)
	if err == pgx.ErrNoRows {
		return "", "", "", "", ""
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return state, hash, change, text, author
}

// vote inserts a vote on db as the API's Vote does, dated ago, and makes db due.
func (f *gateFixture) vote(approve bool, token, hash, reason string, ago time.Duration) {
	f.t.Helper()
	verdict := map[bool]string{true: "approve", false: "reject"}[approve]
	if _, err := f.db.Exec(f.ctx, `INSERT INTO approvals (resource_id, generation, deleting, plan_hash, verdict, actor, approver, reason, created_at)
		SELECT id, generation, deletion_timestamp IS NOT NULL, $1, $2, 'token:' || $3, jsonb_build_object('token', $3::text), $4, now() - $5 * interval '1 millisecond'
		FROM resources WHERE name = 'db'`, hash, verdict, token, reason, ago.Milliseconds()); err != nil {
		f.t.Fatal(err)
	}
	f.due()
}

// waitIdle waits until db is neither leased nor due.
func (f *gateFixture) waitIdle() {
	f.t.Helper()
	waitFor(f.t, "db idle", func() (bool, string) {
		var idle bool
		if err := f.db.QueryRow(f.ctx, `SELECT lease_owner IS NULL AND NOT dirty AND (run_at IS NULL OR run_at > now())
			FROM resources JOIN resource_queue USING (id) WHERE name = 'db'`).Scan(&idle); err != nil {
			f.t.Fatal(err)
		}
		return idle, "leased or due"
	})
}

// due makes db due now (as a vote, or a resync, does).
func (f *gateFixture) due() {
	f.t.Helper()
	if _, err := f.db.Exec(f.ctx, `UPDATE resource_queue SET run_at = now(), dirty = dirty OR lease_owner IS NOT NULL WHERE id IN (SELECT id FROM resources WHERE name = 'db')`); err != nil {
		f.t.Fatal(err)
	}
}

// driftWaitGone makes db drift, waits until the drift waits for approvals, then makes the
// drift go away and waits until db is Ready again, waiting no more.
func (f *gateFixture) driftWaitGone(rec *recorder) {
	f.t.Helper()
	rec.setDrift(true)
	f.due()
	f.waitApproved("db", status.False, status.ReasonApprovalRequired)
	rec.setDrift(false)
	f.due()
	waitFor(f.t, "db Ready, waiting no more", func() (bool, string) {
		res := f.get("db")
		_, ok := status.Get(res.Status.Conditions, status.Approved)
		return res.Status.Phase == status.PhaseReady && !ok, shows(res)
	})
}

func (f *gateFixture) events(reason string) []store.Event {
	f.t.Helper()
	evs, err := f.st.ListEvents(f.ctx, store.Everything, store.EventFilter{Namespace: "default", Name: "db"})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []store.Event
	for _, e := range evs {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

func (f *gateFixture) lastHistory() store.HistoryEntry {
	f.t.Helper()
	h, err := f.st.ListHistory(f.ctx, "default", "Widget", "db", 1)
	if err != nil || len(h) == 0 {
		f.t.Fatalf("history of db: %v %v", h, err)
	}
	return h[0]
}

var replacePlan = actions.Plan{Changes: true, Summary: "0 to add, 0 to change, 0 to destroy, 1 to replace", Text: "-/+ widget db",
	Counted: true, Replace: 1, Hash: "hash-replace-0123456789"}

var updatePlan = actions.Plan{Changes: true, Summary: "0 to add, 1 to change, 0 to destroy", Text: "~ widget db", Counted: true,
	Change: 1, Hash: "hash-update-0123456789"}

func needsDBA(when string) policy.Policy {
	return policy.Policy{Name: "needs-dba", Match: critical, When: when, Action: policy.RequireApproval,
		Approvals: &policy.Approvals{Count: 1, From: []policy.Principal{{Token: "dba"}, {Token: "ann@example.com"}}, NotAuthor: true},
		Message:   "replacing a critical widget needs a DBA"}
}

// A change the policies allow after its plan is applied with that plan (KeepPlan, then
// ApprovedPlan); a resource no policy selects runs as before: no plan, no Approved.
func TestGateAllowsAfterPlan(t *testing.T) {
	t.Parallel()
	rec := &recorder{plan: updatePlan}
	f := newGateFixture(t, planner{callsOnly{rec}}, policy.Policy{Name: "no-replace", Match: critical,
		When: "plan.replace > 0", Action: policy.Deny})
	f.waitApproved("db", status.True, status.ReasonPolicyAllowed)
	f.waitPhase("db", status.PhaseReady)
	other := f.waitPhase("other", status.PhaseReady)
	if _, ok := status.Get(other.Status.Conditions, status.Approved); ok {
		t.Errorf("other, which no policy selects, has an Approved condition: %s", shows(other))
	}
	calls := rec.log()
	want := []string{"plan db keep=true", "reconcile db approved=" + updatePlan.Hash, "reconcile other approved="}
	slices.Sort(calls)
	if !slices.Equal(calls, want) {
		t.Errorf("calls %q; want %q", calls, want)
	}
	if h := f.lastHistory(); h.Result != resultSucceeded || !strings.Contains(h.Message, "plan hash-update") {
		t.Errorf("history %s: %s", h.Result, h.Message)
	}
	if state, _, _, _, _ := f.request(); state != "" {
		t.Errorf("an allowed change left a request %s", state)
	}
}

// A deny stalls the resource with the policy's message and never calls it; a reload that
// changes the policies decides again (RequeueGated).
func TestGateDenies(t *testing.T) {
	t.Parallel()
	rec := &recorder{plan: replacePlan}
	deny := policy.Policy{Name: "no-replace", Match: critical, When: "plan.replace > 0", Action: policy.Deny, Message: "no replacing widgets"}
	f := newGateFixture(t, planner{callsOnly{rec}}, deny)
	res := f.waitApproved("db", status.False, status.ReasonPolicyDenied)
	ready, _ := status.Get(res.Status.Conditions, status.Ready)
	stalled, _ := status.Get(res.Status.Conditions, status.Stalled)
	if ready.Status != status.False || stalled.Status != status.True || stalled.Message != "no replacing widgets" || res.Status.Phase != status.PhaseFailed {
		t.Errorf("denied: %s", shows(res))
	}
	if err := status.Check(status.State{Phase: res.Status.Phase, Conditions: res.Status.Conditions, ObservedGeneration: res.Status.ObservedGeneration}, res.Metadata.Generation, false); err != nil {
		t.Error(err)
	}
	if n := rec.count("reconcile db"); n != 0 {
		t.Errorf("a denied change was applied %d times", n)
	}
	if state, hash, change, _, _ := f.request(); state != store.ApprovalDenied || hash != replacePlan.Hash || change != policy.ChangeCreate {
		t.Errorf("request %s %s %s", state, hash, change)
	}
	if evs := f.events(status.ReasonPolicyDenied); len(evs) != 1 || evs[0].Type != store.EventWarning {
		t.Errorf("PolicyDenied events %+v", evs)
	}
	if h := f.lastHistory(); h.Result != resultPolicyDenied || h.Message != "policy no-replace: no replacing widgets (plan hash-replace: 0 to add, 0 to change, 0 to destroy, 1 to replace)" {
		t.Errorf("history %s: %s", h.Result, h.Message)
	}

	// The reload lifts the deny: the change is decided again and applied.
	deny.When = "plan.destroy > 0"
	f.setPolicies(deny)
	if n, err := f.st.RequeueGated(f.ctx); err != nil || n != 1 {
		t.Fatalf("RequeueGated = %d, %v", n, err)
	}
	f.waitApproved("db", status.True, status.ReasonPolicyAllowed)
	f.waitPhase("db", status.PhaseReady)
	if state, _, _, _, _ := f.request(); state != "" {
		t.Errorf("request %s left after the change was allowed", state)
	}
}

// requireApproval waits, visibly, without calling; the author's approval and an expired one
// do not count; an approval of another plan lapses (a new request); the approval of a
// permitted approver for this plan applies exactly it.
func TestGateWaitsForApproval(t *testing.T) {
	t.Parallel()
	rec := &recorder{plan: replacePlan}
	f := newGateFixture(t, planner{callsOnly{rec}}, needsDBA("plan.replace > 0"))
	res := f.waitApproved("db", status.False, status.ReasonApprovalRequired)
	recCond, _ := status.Get(res.Status.Conditions, status.Reconciling)
	appr, _ := status.Get(res.Status.Conditions, status.Approved)
	wantMsg := "replacing a critical widget needs a DBA — plan hash-replace: 0 to add, 0 to change, 0 to destroy, 1 to replace; " +
		"needs 1 approval from token dba or token ann@example.com, not by the commit's author"
	if res.Status.Phase != status.PhasePending || recCond.Reason != status.ReasonApprovalRequired || appr.Message != wantMsg {
		t.Errorf("waiting: %s", shows(res))
	}
	state, hash, change, text, author := f.request()
	if state != store.ApprovalPending || hash != replacePlan.Hash || change != policy.ChangeCreate || text != "-/+ widget db" || author != ann.Email {
		t.Errorf("request %s %s %s %q %s", state, hash, change, text, author)
	}
	if evs := f.events(status.ReasonApprovalRequired); len(evs) != 1 {
		t.Errorf("ApprovalRequired events %+v", evs)
	}
	if h := f.lastHistory(); h.Result != resultApprovalRequired || h.Message != "policy needs-dba: "+wantMsg {
		t.Errorf("history %s: %s", h.Result, h.Message)
	}

	// The author's approval, and an expired one, do not count: it waits on.
	plans := rec.count("plan db")
	f.vote(true, "ann@example.com", replacePlan.Hash, "mine", 0)
	f.vote(true, "dba", replacePlan.Hash, "old", 2*testTTL)
	waitFor(t, "db decided again after the votes", func() (bool, string) { return rec.count("plan db") >= plans+1, fmt.Sprint(rec.log()) })
	f.waitIdle() // each vote made it due: no decision with the old plan is left to run
	f.waitApproved("db", status.False, status.ReasonApprovalRequired)

	// The world moved: the approval given for the old plan lapses, a new request asks again.
	rec.setPlan(actions.Plan{Changes: true, Summary: "1 to replace, 1 to destroy", Text: "-/+ widget db; - widget cache",
		Counted: true, Replace: 1, Destroy: 1, Hash: "hash-moved-0123456789"})
	f.vote(true, "dba", replacePlan.Hash, "looks fine", 0)
	waitFor(t, "a request for the new plan", func() (bool, string) {
		state, hash, _, _, _ := f.request()
		return state == store.ApprovalPending && hash == "hash-moved-0123456789", state + " " + hash
	})
	if n := rec.count("reconcile db"); n != 0 {
		t.Fatalf("applied %d times without an approval of its plan", n)
	}

	// Approved for this plan: applied with it.
	f.vote(true, "dba", "hash-moved-0123456789", "ok", 0)
	res = f.waitApproved("db", status.True, status.ReasonApproved)
	f.waitPhase("db", status.PhaseReady)
	if calls := rec.log(); !slices.Contains(calls, "reconcile db approved=hash-moved-0123456789") {
		t.Errorf("calls %q", calls)
	}
	if n := rec.count("reconcile db"); n != 1 {
		t.Errorf("applied %d times", n)
	}
	if c, _ := status.Get(res.Status.Conditions, status.Approved); c.Message != "approved by token:dba (policy needs-dba, plan hash-moved-0)" {
		t.Errorf("Approved message %q", c.Message)
	}
	if state, _, _, _, _ := f.request(); state != "" {
		t.Errorf("request %s left after the approved change was applied", state)
	}
	if evs := f.events(status.ReasonApproved); len(evs) != 1 {
		t.Errorf("Approved events %+v", evs)
	}
	if h := f.lastHistory(); h.Result != resultSucceeded || !strings.HasPrefix(h.Message, "approved by token:dba") {
		t.Errorf("history %s: %s", h.Result, h.Message)
	}
}

// A rejection stalls the change.
func TestGateRejected(t *testing.T) {
	t.Parallel()
	rec := &recorder{plan: replacePlan}
	f := newGateFixture(t, planner{callsOnly{rec}}, needsDBA(""))
	f.waitApproved("db", status.False, status.ReasonApprovalRequired)
	// A rejection by an actor the requirements do not permit does not count.
	f.vote(false, "mallory", replacePlan.Hash, "no", 0)
	waitFor(t, "decided again with mallory's rejection", func() (bool, string) {
		h, err := f.st.ListHistory(f.ctx, "default", "Widget", "db", 10)
		return err == nil && len(h) == 2 && h[0].Result == resultApprovalRequired, fmt.Sprint(h)
	})
	f.vote(false, "dba", replacePlan.Hash, "not during the freeze", 0)
	res := f.waitApproved("db", status.False, status.ReasonRejected)
	stalled, _ := status.Get(res.Status.Conditions, status.Stalled)
	if stalled.Status != status.True || stalled.Message != "rejected by token:dba: not during the freeze" {
		t.Errorf("rejected: %s", shows(res))
	}
	if h := f.lastHistory(); h.Result != resultRejected ||
		h.Message != "rejected by token:dba: not during the freeze (policy needs-dba, plan hash-replace: 0 to add, 0 to change, 0 to destroy, 1 to replace)" {
		t.Errorf("history %s: %s", h.Result, h.Message)
	}
	if state, _, _, _, _ := f.request(); state != store.ApprovalRejected {
		t.Errorf("request %s", state)
	}
	if evs := f.events(status.ReasonRejected); len(evs) != 1 || evs[0].Type != store.EventWarning {
		t.Errorf("Rejected events %+v", evs)
	}
	if n := rec.count("reconcile db"); n != 0 {
		t.Errorf("a rejected change was applied %d times", n)
	}
}

// A plugin that cannot plan gives plan.available false; the approval binds to the
// generation ("unplanned") and the call carries no ApprovedPlan.
func TestGateWithoutPlanner(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	f := newGateFixture(t, callsOnly{rec}, needsDBA("!plan.available"))
	res := f.waitApproved("db", status.False, status.ReasonApprovalRequired)
	if c, _ := status.Get(res.Status.Conditions, status.Approved); !strings.Contains(c.Message, "no plan (the action cannot plan)") {
		t.Errorf("Approved message %q", c.Message)
	}
	var available bool
	if err := f.db.QueryRow(f.ctx, `SELECT (plan->>'available')::bool FROM approval_requests`).Scan(&available); err != nil || available {
		t.Errorf("plan.available %v %v", available, err)
	}
	f.vote(true, "dba", unplannedHash, "", 0)
	f.waitApproved("db", status.True, status.ReasonApproved)
	f.waitPhase("db", status.PhaseReady)
	if !slices.Contains(rec.log(), "reconcile db approved=") {
		t.Errorf("calls %q", rec.log())
	}
}

// Drift found at a resync is remediated only through the gate.
func TestGateDriftRemediation(t *testing.T) {
	t.Parallel()
	rec := &recorder{plan: updatePlan}
	f := newGateFixture(t, planner{callsOnly{rec}}, needsDBA("change.type == 'drift'"))
	f.waitApproved("db", status.True, status.ReasonPolicyAllowed)
	f.waitPhase("db", status.PhaseReady)
	rec.setDrift(true)
	f.due()
	res := f.waitApproved("db", status.False, status.ReasonApprovalRequired)
	if _, _, change, _, _ := f.request(); change != policy.ChangeDrift {
		t.Errorf("request for change %q; want drift (%s)", change, shows(res))
	}
	if n := rec.count("reconcile db"); n != 1 {
		t.Errorf("drift remediated without approval: %d reconciles", n)
	}
	f.vote(true, "dba", updatePlan.Hash, "", 0)
	f.waitApproved("db", status.True, status.ReasonApproved)
	waitFor(t, "the drift remediated", func() (bool, string) { return rec.count("reconcile db") == 2, fmt.Sprint(rec.log()) })
}

// A delete is planned (PlanDelete) and gated like any change.
func TestGateDelete(t *testing.T) {
	t.Parallel()
	rec := &recorder{plan: updatePlan}
	f := newGateFixture(t, planner{callsOnly{rec}}, needsDBA("change.type == 'delete'"))
	f.waitApproved("db", status.True, status.ReasonPolicyAllowed)
	f.waitPhase("db", status.PhaseReady)
	destroy := actions.Plan{Changes: true, Summary: "1 to destroy", Counted: true, Destroy: 1, Hash: "hash-destroy-0123456789"}
	rec.setPlan(destroy)
	f.apply(gateManifests(1, false))
	res := f.waitApproved("db", status.False, status.ReasonApprovalRequired)
	if res.Status.Phase != status.PhaseDeleting || rec.count("delete db") != 0 || rec.count("planDelete db keep=true") != 1 {
		t.Errorf("delete waiting: %s; calls %q", shows(res), rec.log())
	}
	if _, hash, change, _, _ := f.request(); change != policy.ChangeDelete || hash != destroy.Hash {
		t.Errorf("request %s %s", change, hash)
	}
	var revision string
	if err := f.db.QueryRow(f.ctx, `SELECT revision FROM approval_requests`).Scan(&revision); err != nil || revision != "r2" {
		t.Errorf("the delete's request names revision %q (%v); want r2, which removed the manifest", revision, err)
	}
	f.vote(true, "dba", destroy.Hash, "", 0)
	waitFor(t, "db deleted", func() (bool, string) {
		_, err := f.st.GetResource(f.ctx, "default", "Widget", "db")
		return err != nil, fmt.Sprint(rec.log())
	})
	if !slices.Contains(rec.log(), "delete db approved="+destroy.Hash) {
		t.Errorf("calls %q", rec.log())
	}
}

// A decision cut short by the end of the call's context is an attempt error (released at
// shutdown), not a deny.
func TestGateContextEnded(t *testing.T) {
	t.Parallel()
	set, err := policy.Compile([]policy.Policy{{Name: "p", When: "spec.items.all(x, spec.items.all(y, x == y || x != y))", Action: policy.Allow}})
	if err != nil {
		t.Fatal(err)
	}
	items := make([]int, 50)
	spec, _ := json.Marshal(map[string]any{"items": items})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a := attempt{gate: &gate{set: set, in: policy.Input{Spec: spec}}}
	var req actions.Request
	if newTestReconciler().decide(ctx, nil, "act", &req, false, &a) || !errors.Is(a.err, context.Canceled) || a.gate.outcome != 0 {
		t.Errorf("decide with the context ended: err %v, outcome %d", a.err, a.gate.outcome)
	}
}

// deleteClaims are the claims of a Ready resource's delete not started yet, and of one in
// progress. A claim holds the conditions stored before its call started.
func deleteClaims() (deleting, inFlight store.Claimed) {
	deleting = claimed(readyGen1, 1, true)
	deleting.Conditions = status.DeletionRequested(readyGen1, tPrev).Conditions
	inFlight = deleting
	inFlight.Conditions = mustResult(claimState(readyGen1, 1, true), status.Outcome{Generation: 1, CurrentGeneration: 1, Delete: true, Deleting: true}).Conditions
	return deleting, inFlight
}

// TestGatedTrigger: which calls the gate decides, and the change type rules read.
func TestGatedTrigger(t *testing.T) {
	t.Parallel()
	deleting, inFlight := deleteClaims()
	failedDelete := inFlight
	failedDelete.Attempt = 1
	// approved: the conditions after the gate let generation gen's call through, then
	// outcome o.
	approved := func(prev status.State, gen int64, deleting bool, o status.Outcome) status.State {
		s := claimState(prev, gen, deleting)
		s.Conditions = status.Allowed(s.Conditions, gen, status.ReasonApproved, "approved by token:dba", tPrev)
		return mustResult(s, o)
	}
	pollFailed := approved(fresh, 1, false, status.Outcome{Generation: 1, CurrentGeneration: 1, Err: "poll: connection reset"})
	deleteFailed := approved(status.DeletionRequested(readyGen1, tPrev), 1, true, status.Outcome{Generation: 1, CurrentGeneration: 1, Delete: true, Deleting: true, Err: "boom"})
	for _, tc := range []struct {
		name   string
		c      store.Claimed
		gated  bool
		change string
		// continues: the call may continue work the gate let through (history decides).
		continues bool
	}{
		{"first apply", claimed(fresh, 1, false), true, policy.ChangeCreate, false},
		{"new generation", claimed(readyGen1, 2, false), true, policy.ChangeUpdate, false},
		{"retry of a first apply", claimed(failedG1, 1, false, withAttempt(2)), true, policy.ChangeCreate, false},
		{"resync (decided once Observe found drift)", claimed(readyGen1, 1, false), true, policy.ChangeDrift, false},
		{"requeue of work in flight", claimed(mustResult(claimState(readyGen1, 2, false), status.Outcome{Generation: 2, CurrentGeneration: 2, InProgress: true}), 2, false, withState(`{"op":"x"}`)), false, "", false},
		{"delete", deleting, true, policy.ChangeDelete, false},
		{"delete in progress", inFlight, false, "", false},
		{"delete retried after a failure", failedDelete, true, policy.ChangeDelete, false},
		{"retry of approved work in flight", claimed(pollFailed, 1, false, withAttempt(1), withState(`{"job":1}`)), true, policy.ChangeCreate, true},
		{"retry of an approved call that failed, no state", claimed(pollFailed, 1, false, withAttempt(1)), true, policy.ChangeCreate, false},
		{"an operator's request during approved work in flight", claimed(pollFailed, 1, false, withState(`{"job":1}`), func(c *store.Claimed) { c.ManualBy = "token:ops" }), true, policy.ChangeCreate, true},
		{"approved for an older generation", claimed(approved(readyGen1, 1, false, status.Outcome{Generation: 1, CurrentGeneration: 2, InProgress: true}), 2, false, withAttempt(1), withState(`{"job":1}`)), true, policy.ChangeUpdate, false},
		{"resync of an approved resource", claimed(approved(fresh, 1, false, status.Outcome{Generation: 1, CurrentGeneration: 1, Done: true}), 1, false, withState(`{"id":1}`)), true, policy.ChangeDrift, false},
		{"retry of an approved delete in flight", claimed(deleteFailed, 1, true, withAttempt(1), withState(`{"job":1}`)), true, policy.ChangeDelete, true},
	} {
		trig := trigger(tc.c)
		if got := gatedTrigger(trig, &tc.c); got != tc.gated {
			t.Errorf("%s (trigger %s): gated %v; want %v", tc.name, trig, got, tc.gated)
		}
		if tc.gated {
			if got := changeType(&tc.c, trig); got != tc.change {
				t.Errorf("%s: change %s; want %s", tc.name, got, tc.change)
			}
		}
		if got := mayContinue(&tc.c, trig); got != tc.continues {
			t.Errorf("%s (trigger %s): continues %v; want %v", tc.name, trig, got, tc.continues)
		}
	}
}

// TestGateMessage: what conditions and history say of each decision.
func TestGateMessage(t *testing.T) {
	t.Parallel()
	req := policy.Requirement{Policy: "p", Approvals: policy.Approvals{Count: 1, From: []policy.Principal{{Group: "dba"}}}}
	planned := gate{planned: true, hash: "0123456789abcdef", plan: store.ApprovalPlan{Summary: "1 to replace"},
		in: policy.Input{Change: policy.Change{Author: ann}}}
	unknownAuthor := planned
	unknownAuthor.in.Change.Author = policy.Author{}
	for _, tc := range []struct {
		name string
		g    gate
		want string
	}{
		{"waiting", with(planned, gateWaiting, policy.Decision{Action: policy.RequireApproval, Policy: "p", Message: "needs a DBA",
			Approvals: []policy.Requirement{req, {Policy: "q", Approvals: policy.Approvals{Count: 2, From: []policy.Principal{{Token: "bot"}}, NotAuthor: true}}}}),
			"needs a DBA — plan 0123456789ab: 1 to replace; needs 1 approval from group dba and 2 approvals from token bot, not by the commit's author"},
		{"waiting, notAuthor and the author unknown", with(unknownAuthor, gateWaiting, policy.Decision{Action: policy.RequireApproval, Policy: "p", Message: "m",
			Approvals: []policy.Requirement{{Policy: "q", Approvals: policy.Approvals{Count: 1, From: []policy.Principal{{Token: "bot"}}, NotAuthor: true}}}}),
			"m — plan 0123456789ab: 1 to replace; needs 1 approval from token bot, not by the commit's author; the commit's author is unknown: notAuthor cannot be checked"},
		{"waiting without a plan", with(gate{hash: unplannedHash}, gateWaiting, policy.Decision{Action: policy.RequireApproval, Policy: "p", Message: "m", Approvals: []policy.Requirement{req}}),
			"m — no plan (the action cannot plan); needs 1 approval from group dba"},
		{"denied", with(planned, gateDenied, policy.Decision{Action: policy.Deny, Policy: "p", Message: "no"}), "no"},
		{"rejected", func() gate {
			g := with(planned, gateRejected, policy.Decision{Action: policy.RequireApproval, Policy: "p"})
			g.rejection = &store.Vote{Actor: "user:sub", Reason: "freeze"}
			return g
		}(), "rejected by user:sub: freeze"},
		{"approved", func() gate {
			g := with(planned, gateApproved, policy.Decision{Action: policy.RequireApproval, Policy: "p"})
			g.approvers = []string{"token:a", "user:b"}
			return g
		}(), "approved by token:a, user:b (policy p, plan 0123456789ab)"},
		{"allowed after a plan", with(planned, gateAllowed, policy.Decision{Action: policy.Allow}), "allowed by policies (plan 0123456789ab: 1 to replace)"},
		{"allowed without a plan", with(gate{}, gateAllowed, policy.Decision{Action: policy.Allow}), "allowed by policies"},
		{"allowed, a long summary", with(gate{planned: true, hash: "0123456789abcdef", plan: store.ApprovalPlan{Summary: strings.Repeat("x", 600)}}, gateAllowed,
			policy.Decision{Action: policy.Allow}), "allowed by policies (plan 0123456789ab: " + strings.Repeat("x", maxSummary) + "…)"},
	} {
		if got := tc.g.message(); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

func with(g gate, o gateOutcome, d policy.Decision) gate {
	g.outcome, g.decision = o, d
	return g
}

// What the gate left goes when it no longer applies: the Approved condition of a resource
// no policy selects any more, and the wait for approving drift that went away.
func TestGateLetsGo(t *testing.T) {
	t.Parallel()
	rec := &recorder{plan: updatePlan}
	dba := needsDBA("change.type == 'drift'")
	f := newGateFixture(t, planner{callsOnly{rec}}, dba)
	f.waitApproved("db", status.True, status.ReasonPolicyAllowed)
	f.waitPhase("db", status.PhaseReady)

	f.setPolicies()
	f.apply(gateManifests(2, true))
	waitFor(t, "db applied at generation 2 without Approved", func() (bool, string) {
		res := f.get("db")
		_, ok := status.Get(res.Status.Conditions, status.Approved)
		return res.Status.Phase == status.PhaseReady && res.Status.ObservedGeneration == 2 && !ok, shows(res)
	})

	f.setPolicies(dba)
	f.driftWaitGone(rec)
	if state, _, _, _, _ := f.request(); state != "" {
		t.Errorf("request %s left", state)
	}
	if n := rec.count("reconcile db"); n != 2 {
		t.Errorf("%d reconciles; want 2 (create, generation 2)", n)
	}
}

// tenPolicies select production databases only.
func tenPolicies(t testing.TB) *policy.Set {
	var ps []policy.Policy
	for i := range 10 {
		ps = append(ps, policy.Policy{Name: fmt.Sprintf("p%d", i), Match: policy.Match{Namespaces: []string{"production"}, Kinds: []string{"Database"},
			Selector: "tier=critical"}, When: "plan.destroy > 0", Action: policy.Deny})
	}
	set, err := policy.Compile(ps)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// A change of a resource no policy selects costs the gate no allocation (and no query: the
// store is nil here).
func TestGateUnselectedAllocatesNothing(t *testing.T) {
	set := tenPolicies(t)
	r := newTestReconciler()
	r.opts.Policies = func() (*policy.Set, time.Duration) { return set, time.Hour }
	c := claimed(readyGen1, 2, false)
	c.Labels = map[string]string{"tier": "critical"}
	if n := testing.AllocsPerRun(100, func() {
		if g, unselected := r.gateFor(&c, "spec-changed"); g != nil || !unselected {
			t.Fatal("selected")
		}
	}); n != 0 {
		t.Errorf("gateFor of an unselected resource allocates %v times", n)
	}
}

func BenchmarkGateUnselected(b *testing.B) {
	set := tenPolicies(b)
	r := newTestReconciler()
	r.opts.Policies = func() (*policy.Set, time.Duration) { return set, time.Hour }
	c := claimed(readyGen1, 2, false)
	b.ReportAllocs()
	for b.Loop() {
		r.gateFor(&c, "spec-changed")
	}
}

// BenchmarkGateAllowAfterPlan: the whole gate of a change allowed after a plan (as the
// gated throughput benchmark runs it), without the call.
func BenchmarkGateAllowAfterPlan(b *testing.B) {
	set, err := policy.Compile([]policy.Policy{{Name: "no-destroy", When: "plan.destroy > 0 || plan.replace > 0", Action: policy.Deny}})
	if err != nil {
		b.Fatal(err)
	}
	r := newTestReconciler()
	r.opts.Policies = func() (*policy.Set, time.Duration) { return set, time.Hour }
	act := planner{callsOnly{&recorder{plan: actions.Plan{Summary: "no changes", Counted: true}}}}
	c := claimed(readyGen1, 2, false)
	b.ReportAllocs()
	for b.Loop() {
		a := attempt{op: "reconcile", trigger: "spec-changed"}
		a.gate, _ = r.gateFor(&c, a.trigger)
		req := actions.Request{}
		if !r.decide(context.Background(), act, "act", &req, false, &a) || req.ApprovedPlan == "" {
			b.Fatal("not allowed")
		}
		act.calls = act.calls[:0]
	}
}

// A held change superseded during its gate (a new generation, a deletion) stores no request
// and runs the newer work at once; otherwise it waits with no run scheduled.
func TestHeldUpdate(t *testing.T) {
	t.Parallel()
	r := newTestReconciler()
	c := claimed(readyGen1, 2, false)
	g := with(gate{planned: true, hash: "0123456789abcdef", in: policy.Input{Change: policy.Change{Type: policy.ChangeUpdate, Generation: 2}}},
		gateWaiting, policy.Decision{Action: policy.RequireApproval, Policy: "p", Message: "m", Approvals: []policy.Requirement{
			{Policy: "p", Approvals: policy.Approvals{Count: 1, From: []policy.Principal{{Token: "dba"}}}}}})
	for _, tc := range []struct {
		name    string
		cur     store.Current
		phase   string
		request bool
		runAt   window
	}{
		{"waits", unchanged(c), status.PhasePending, true, never},
		{"a new generation arrived", specChanged(c, 3), status.PhaseReconciling, false, immediately},
		{"the manifest was removed", markedDeleted(c), status.PhaseDeleting, false, immediately},
	} {
		gc := g
		u := r.update(c, attempt{op: "reconcile", trigger: "spec-changed", gate: &gc}, tc.cur)
		if u.Phase != tc.phase || (u.Approval != nil) != tc.request || u.ClearApproval == tc.request || u.History.Result != resultApprovalRequired {
			t.Errorf("%s: phase %s, request %v, clear %v, history %s", tc.name, u.Phase, u.Approval != nil, u.ClearApproval, u.History.Result)
		}
		if (u.RunAt == nil) != tc.runAt.never || u.RunAt != nil && time.Until(*u.RunAt) > time.Second {
			t.Errorf("%s: runAt %v", tc.name, u.RunAt)
		}
		if err := status.Check(status.State{Phase: u.Phase, Conditions: u.Conditions, ObservedGeneration: u.ObservedGeneration}, tc.cur.Generation, true); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// The plan text and summary an approval request stores, and the messages naming them, are
// scrubbed of the call's revealed values and of the controller's kept secrets.
func TestGatePlanScrubbed(t *testing.T) {
	t.Parallel()
	rec := &recorder{plan: actions.Plan{Changes: true, Summary: "1 to replace (password hunter22)",
		Text: "-/+ dsn = " + keptDSN + "\n~ password = hunter22", Counted: true, Replace: 1}}
	f := newGateFixtureWith(t, planner{callsOnly{rec}}, func(o *Options) {
		o.Redact = redact.New(keptDSN)
		o.Reveal = func(_ context.Context, c store.Claimed) (json.RawMessage, []string, error) {
			return c.Spec, []string{"hunter22"}, nil
		}
	}, needsDBA(""))
	res := f.waitApproved("db", status.False, status.ReasonApprovalRequired)
	_, _, _, text, _ := f.request()
	var summary string
	if err := f.db.QueryRow(f.ctx, `SELECT plan->>'summary' FROM approval_requests`).Scan(&summary); err != nil {
		t.Fatal(err)
	}
	c, _ := status.Get(res.Status.Conditions, status.Approved)
	for what, s := range map[string]string{"text": text, "summary": summary, "condition": c.Message, "history": f.lastHistory().Message} {
		if strings.Contains(s, "hunter22") || strings.Contains(s, "db.internal") {
			t.Errorf("%s not scrubbed: %q", what, s)
		}
	}
	if text != "-/+ dsn = ***\n~ password = ***" {
		t.Errorf("text %q", text)
	}
	// The hash the host derives (the plugin gives none) is taken over the scrubbed plan: it
	// does not change with the secret, so no guess of it can be checked against the hash.
	_, hash, _, _, _ := f.request()
	if want := actions.PlanHash(actions.Plan{Changes: true, Summary: "1 to replace (password ***)", Text: text, Counted: true, Replace: 1}); hash != want {
		t.Errorf("plan hash %s; want %s, the scrubbed plan's", hash, want)
	}
}

// An approval of a create (the action cannot plan: hash "unplanned") does not let the delete
// of the same generation through: a delete does not raise the generation, and votes are
// bound to the operation too.
func TestGateCreateApprovalNotDelete(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	f := newGateFixture(t, callsOnly{rec}, needsDBA(""))
	f.waitApproved("db", status.False, status.ReasonApprovalRequired)
	f.vote(true, "dba", unplannedHash, "create ok", 0)
	f.waitApproved("db", status.True, status.ReasonApproved)
	f.waitPhase("db", status.PhaseReady)
	f.apply(gateManifests(1, false))
	waitFor(t, "delete decided", func() (bool, string) {
		res, err := f.st.GetResource(f.ctx, "default", "Widget", "db")
		if err != nil {
			return true, "gone"
		}
		c, _ := status.Get(res.Status.Conditions, status.Approved)
		return res.Status.Phase == status.PhaseDeleting && c.Status == status.False, shows(res)
	})
	if n := rec.count("delete db"); n != 0 {
		t.Fatalf("the delete ran without any approval of it (the create's approval counted): %q", rec.log())
	}
	// An approval of the delete lets it through.
	f.vote(true, "dba", unplannedHash, "delete ok", 0)
	waitFor(t, "db deleted", func() (bool, string) {
		res, err := f.st.GetResource(f.ctx, "default", "Widget", "db")
		return err != nil, shows(res)
	})
}

// stateful: Reconcile keeps state (a resource id), as most plugins do.
type stateful struct{ planner }

func (a stateful) Reconcile(_ context.Context, req actions.Request) (actions.Result, error) {
	a.record("reconcile %s", req.Resource.Name)
	return actions.Result{Done: true, State: json.RawMessage(`{"id":"i-123"}`)}, nil
}

// A drift wait that ends because the drift went away keeps the plugin's state and the
// applied spec, and its history says nothing was applied.
func TestGateDriftGoneKeepsState(t *testing.T) {
	t.Parallel()
	rec := &recorder{plan: updatePlan}
	f := newGateFixture(t, stateful{planner{callsOnly{rec}}}, needsDBA("change.type == 'drift'"))
	f.waitApproved("db", status.True, status.ReasonPolicyAllowed)
	f.waitPhase("db", status.PhaseReady)
	var applied string
	if err := f.db.QueryRow(f.ctx, `SELECT applied_spec::text FROM resources WHERE name = 'db'`).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	f.driftWaitGone(rec)
	var state *string
	var after string
	if err := f.db.QueryRow(f.ctx, `SELECT action_state::text, applied_spec::text FROM resources WHERE name = 'db'`).Scan(&state, &after); err != nil {
		t.Fatal(err)
	}
	if state == nil || !strings.Contains(*state, "i-123") {
		t.Errorf("action_state after the drift wait ended: %v; want the plugin's {\"id\":\"i-123\"}", state)
	}
	if after != applied {
		t.Errorf("applied spec %s after the drift wait ended; want %s", after, applied)
	}
	if h := f.lastHistory(); h.Trigger != "resync" || h.Result != resultInSync || h.Message != msgDriftGone {
		t.Errorf("last history: %s %s: %q", h.Trigger, h.Result, h.Message)
	}
	if s, _, _, _, _ := f.request(); s != "" {
		t.Errorf("request %q after the drift wait ended", s)
	}
	if res := f.get("db"); status.Check(status.State{Phase: res.Status.Phase, Conditions: res.Status.Conditions, ObservedGeneration: res.Status.ObservedGeneration}, res.Metadata.Generation, false) != nil {
		t.Errorf("status after the drift wait ended: %s", shows(res))
	}
}

// A drift wait whose policy a reload removes, and whose drift is gone when it runs again,
// ends: db is Ready, its request removed.
func TestGateUnselectedDriftWaitInSync(t *testing.T) {
	t.Parallel()
	rec := &recorder{plan: updatePlan}
	f := newGateFixture(t, planner{callsOnly{rec}}, needsDBA("change.type == 'drift'"))
	f.waitPhase("db", status.PhaseReady)
	rec.setDrift(true)
	f.due()
	f.waitApproved("db", status.False, status.ReasonApprovalRequired)
	rec.setDrift(false)
	f.setPolicies()
	if _, err := f.st.RequeueGated(f.ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the request cleared", func() (bool, string) { s, _, _, _, _ := f.request(); return s == "", s })
	res := f.get("db")
	if _, ok := status.Get(res.Status.Conditions, status.Approved); res.Status.Phase != status.PhaseReady || ok {
		t.Errorf("nothing waits any more, yet db shows %s", shows(res))
	}
	if err := status.Check(status.State{Phase: res.Status.Phase, Conditions: res.Status.Conditions, ObservedGeneration: res.Status.ObservedGeneration}, res.Metadata.Generation, false); err != nil {
		t.Errorf("Check: %v", err)
	}
	if rec.count("reconcile db") != 1 {
		t.Errorf("calls %q", rec.log())
	}
}

// failing: an approved apply fails.
type failing struct{ planner }

func (a failing) Reconcile(_ context.Context, req actions.Request) (actions.Result, error) {
	a.record("reconcile %s approved=%s", req.Resource.Name, req.ApprovedPlan)
	if req.Resource.Name == "db" {
		return actions.Result{}, errors.New("apply failed half way")
	}
	return actions.Result{Done: true}, nil
}

// An approved call that fails shows Approved=True, its request removed, and its history
// names who approved the call that ran; a retry is approved by the same votes, told once.
func TestGateApprovedCallFails(t *testing.T) {
	t.Parallel()
	rec := &recorder{plan: replacePlan}
	f := newGateFixture(t, failing{planner{callsOnly{rec}}}, needsDBA(""))
	f.waitApproved("db", status.False, status.ReasonApprovalRequired)
	f.vote(true, "dba", replacePlan.Hash, "ok", 0)
	waitFor(t, "the approved call ran", func() (bool, string) { return rec.count("reconcile db") == 1, fmt.Sprint(rec.log()) })
	res := f.waitPhase("db", status.PhaseFailed)
	c, _ := status.Get(res.Status.Conditions, status.Approved)
	state, _, _, _, _ := f.request()
	if c.Status != status.True || c.Reason != status.ReasonApproved || state != "" {
		t.Errorf("the approved, applied (and failed) change shows Approved=%s/%s and request %q", c.Status, c.Reason, state)
	}
	want := "approved by token:dba (policy needs-dba, plan " + replacePlan.Hash[:12] + "): apply failed half way"
	if h := f.lastHistory(); h.Result != resultFailed || h.Message != want {
		t.Errorf("history %s: %q; want Failed: %q", h.Result, h.Message, want)
	}
	f.due() // the retry
	waitFor(t, "the retry ran", func() (bool, string) { return rec.count("reconcile db") == 2, fmt.Sprint(rec.log()) })
	waitFor(t, "the retry written", func() (bool, string) {
		h, err := f.st.ListHistory(f.ctx, "default", "Widget", "db", 10)
		return err == nil && len(h) >= 3 && h[0].Trigger == "retry", fmt.Sprint(len(h))
	})
	if n := len(f.events(status.ReasonApproved)); n != 1 {
		t.Errorf("%d Approved events; want 1", n)
	}
}

// blocking plans only when released.
type blocking struct {
	planner
	entered chan struct{}
	release chan struct{}
}

func (a blocking) Plan(ctx context.Context, req actions.Request) (actions.Plan, error) {
	if req.Resource.Name == "db" {
		select {
		case a.entered <- struct{}{}:
		default:
		}
		<-a.release
	}
	return a.planner.Plan(ctx, req)
}

// A reload that changes the policies while a change is in its gate (no request stored yet
// for RequeueGated to find) has the change decided again with the policies in force.
func TestGateReloadDuringGate(t *testing.T) {
	t.Parallel()
	rec := &recorder{plan: replacePlan}
	act := blocking{planner: planner{callsOnly{rec}}, entered: make(chan struct{}, 1), release: make(chan struct{})}
	deny := policy.Policy{Name: "no-replace", Match: critical, When: "plan.replace > 0", Action: policy.Deny, Message: "no"}
	f := newGateFixture(t, act, deny)
	<-act.entered
	f.setPolicies() // the reload removes the deny
	if n, err := f.st.RequeueGated(f.ctx); err != nil || n != 0 {
		t.Fatalf("RequeueGated = %d, %v; want 0 (no request yet)", n, err)
	}
	close(act.release)
	waitFor(t, "db decided again with the policies in force", func() (bool, string) {
		res := f.get("db")
		return res.Status.Phase == status.PhaseReady, shows(res)
	})
	h, err := f.st.ListHistory(f.ctx, "default", "Widget", "db", 10)
	if err != nil || len(h) != 2 || h[1].Result != resultPolicyDenied || h[0].Result != resultSucceeded {
		t.Errorf("history %+v, %v; want the denial under the old policies, then the apply", h, err)
	}
}

// Every held outcome, superseded or not, keeps status.Check.
func TestHeldChecks(t *testing.T) {
	t.Parallel()
	r := newTestReconciler()
	for _, del := range []bool{false, true} {
		c := claimed(readyGen1, 2, false)
		if del {
			c = claimed(readyGen1, 1, true)
		}
		for _, o := range []gateOutcome{gateWaiting, gateDenied, gateRejected} {
			g := with(gate{planned: true, hash: "0123456789abcdef", in: policy.Input{Change: policy.Change{Type: policy.ChangeUpdate, Generation: c.Generation}}},
				o, policy.Decision{Action: policy.RequireApproval, Policy: "p", Message: "m", Approvals: []policy.Requirement{
					{Policy: "p", Approvals: policy.Approvals{Count: 1, From: []policy.Principal{{Token: "dba"}}}}}})
			g.rejection = &store.Vote{Actor: "token:x"}
			curs := map[string]store.Current{"same": unchanged(c), "newgen": specChanged(c, c.Generation+1)}
			if !del {
				curs["deleted"] = markedDeleted(c)
			}
			for name, cur := range curs {
				u := r.update(c, attempt{op: map[bool]string{true: "delete", false: "reconcile"}[del], trigger: "spec-changed", gate: &g}, cur)
				pending := u.RunAt != nil || o == gateWaiting
				if err := status.Check(status.State{Phase: u.Phase, Conditions: u.Conditions, ObservedGeneration: u.ObservedGeneration}, cur.Generation, pending); err != nil {
					t.Errorf("delete=%v outcome %s cur %s: %v (phase %s)", del, o.metric(), name, err, u.Phase)
				}
			}
		}
	}
}

// inflight: Reconcile starts work (InProgress with a handle) and its next poll fails.
type inflight struct {
	planner
	n atomic.Int32
}

func (a *inflight) Reconcile(_ context.Context, req actions.Request) (actions.Result, error) {
	a.record("reconcile %s approved=%s state=%s", req.Resource.Name, req.ApprovedPlan, string(req.State))
	if req.Resource.Name != "db" {
		return actions.Result{Done: true}, nil
	}
	switch a.n.Add(1) {
	case 1:
		a.setPlan(updatePlan) // the job started: the world moves, a plan now differs
		return actions.Result{State: json.RawMessage(`{"job":1}`), RequeueAfter: 1}, nil
	case 2:
		return actions.Result{}, errors.New("poll: connection reset")
	}
	return actions.Result{Done: true}, nil
}

func (a *inflight) Plan(ctx context.Context, req actions.Request) (actions.Plan, error) {
	a.record("plan %s state=%s", req.Resource.Name, string(req.State))
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.plan, nil
}

// A retry of a call whose approved work is in flight (the handle in ActionState) is not
// planned nor held again: the poll continues the approved job.
func TestGateRetryOfInflightWork(t *testing.T) {
	t.Parallel()
	rec := &recorder{plan: replacePlan}
	act := &inflight{planner: planner{callsOnly{rec}}}
	f := newGateFixture(t, act, needsDBA(""))
	f.waitApproved("db", status.False, status.ReasonApprovalRequired)
	f.vote(true, "dba", replacePlan.Hash, "ok", 0)
	waitFor(t, "db Failed", func() (bool, string) { r := f.get("db"); return r.Status.Phase == status.PhaseFailed, shows(r) })
	f.due() // the retry
	res := f.waitPhase("db", status.PhaseReady)
	if rec.count(`plan db state={"job": 1}`) > 0 || act.n.Load() != 3 {
		t.Errorf("the job in flight was planned again on a retry of its poll: %q", rec.log())
	}
	if c, _ := status.Get(res.Status.Conditions, status.Approved); c.Status != status.True || c.Reason != status.ReasonApproved {
		t.Errorf("after the approved job: %s", shows(res))
	}
}
