package store

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/policy"
)

// insertVote stores a vote as the API's Vote does, at a given time.
func insertVote(t *testing.T, st *Store, id, gen int64, deleting bool, hash string, v Vote) {
	t.Helper()
	approver, err := encodeApprover(v.Approver)
	if err != nil {
		t.Fatal(err)
	}
	verdict := map[bool]string{true: "approve", false: "reject"}[v.Approve]
	if _, err := st.pool.Exec(context.Background(), `INSERT INTO approvals (resource_id, generation, deleting, plan_hash, verdict, actor, approver, reason, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, id, gen, deleting, hash, verdict, v.Actor, approver, v.Reason, v.At); err != nil {
		t.Fatal(err)
	}
}

// The fenced write of a result upserts and removes the resource's approval request; Votes
// reads the votes of one generation and plan that have not expired; RequeueGated makes the
// gated resources due.
func TestApprovalRequestsInResults(t *testing.T) {
	st := openTest(t, "s")
	ctx := context.Background()
	applyRefreshed(t, st, "s", "r1", chainSet("App", "Database"))
	_, cs := claimNames(t, st)
	c := cs[0]
	req := &ApprovalRequest{Generation: c.Generation, ChangeType: policy.ChangeCreate, Revision: "r1", PlanHash: "h1",
		Plan:     ApprovalPlan{Available: true, Changes: true, Counted: true, Replace: 1, Summary: "1 to replace", Text: "-/+ db"},
		Decision: policy.RequireApproval, Policy: "dba", Message: "needs a DBA",
		Requirements: []policy.Requirement{{Policy: "dba", Approvals: policy.Approvals{Count: 1, NotAuthor: true,
			From: []policy.Principal{{Group: "dba"}, {Token: "release-bot"}}}}},
		Author: policy.Author{Name: "Ann", Email: "ann@example.com"}, State: ApprovalPending}
	write := func(c Claimed, u Update) {
		t.Helper()
		if _, err := st.CompleteBatch(ctx, []Completion{{ID: c.ID, Token: c.LeaseToken, Namespace: c.Namespace, Kind: c.Kind, Name: c.Name,
			Fn: func(cur Current) Update {
				u.Phase, u.Conditions, u.ObservedGeneration = cur.Phase, cur.Conditions, cur.ObservedGeneration
				return u
			}}}); err != nil {
			t.Fatal(err)
		}
	}
	read := func() (*ApprovalRequest, time.Time, bool) {
		t.Helper()
		var a ApprovalRequest
		var plan, reqs []byte
		var decision string
		err := st.pool.QueryRow(ctx, `SELECT generation, deleting, change_type, revision, plan_hash, plan, decision, policy, message,
			requirements, author_name, author_email, state, requested_at FROM approval_requests WHERE resource_id = $1`, c.ID).
			Scan(&a.Generation, &a.Deleting, &a.ChangeType, &a.Revision, &a.PlanHash, &plan, &decision, &a.Policy, &a.Message,
				&reqs, &a.Author.Name, &a.Author.Email, &a.State, &a.RequestedAt)
		if err != nil {
			return nil, time.Time{}, false
		}
		a.Decision = policy.Effect(decision)
		if a.Plan, err = decodeApprovalPlan(plan); err != nil {
			t.Fatal(err)
		}
		if a.Requirements, err = decodeRequirements(reqs); err != nil {
			t.Fatal(err)
		}
		at := a.RequestedAt
		a.RequestedAt = time.Time{}
		return &a, at, true
	}

	write(c, Update{Approval: req})
	got, first, ok := read()
	if !ok || !reflect.DeepEqual(got, req) {
		t.Fatalf("stored request %+v; want %+v", got, req)
	}
	due := func() {
		t.Helper()
		if _, err := st.pool.Exec(ctx, `UPDATE resource_queue SET run_at = now() WHERE id = $1`, c.ID); err != nil {
			t.Fatal(err)
		}
	}
	// The same plan again keeps when it was asked for; another plan is a request of its own.
	due()
	_, cs = claimNames(t, st)
	write(cs[0], Update{Approval: req})
	if _, at, _ := read(); !at.Equal(first) {
		t.Errorf("requested_at moved from %v to %v for the same plan", first, at)
	}
	next := *req
	next.PlanHash, next.State = "h2", ApprovalRejected
	due()
	_, cs = claimNames(t, st)
	write(cs[0], Update{Approval: &next})
	if got, at, _ := read(); got.PlanHash != "h2" || got.State != ApprovalRejected || !at.After(first) {
		t.Errorf("request after a new plan: %+v requested at %v (first %v)", got, at, first)
	}

	// Votes: of this generation, operation and plan, not expired, oldest first.
	now := time.Now()
	dba := Vote{Approve: true, Actor: "user:sub-1", Approver: policy.Approver{User: "sub-1", Email: "d@example.com", Groups: []string{"dba"}},
		Reason: "ok", At: now.Add(-time.Minute).UTC().Truncate(time.Microsecond)}
	bot := Vote{Actor: "token:release-bot", Approver: policy.Approver{Token: "release-bot"}, Reason: "no", At: now.Add(-time.Second).UTC().Truncate(time.Microsecond)}
	insertVote(t, st, c.ID, c.Generation, false, "h2", dba)
	insertVote(t, st, c.ID, c.Generation, false, "h2", bot)
	insertVote(t, st, c.ID, c.Generation, false, "h1", dba)                                                                  // another plan
	insertVote(t, st, c.ID, c.Generation+1, false, "h2", dba)                                                                // another generation
	insertVote(t, st, c.ID, c.Generation, true, "h2", dba)                                                                   // the delete
	insertVote(t, st, c.ID, c.Generation, false, "h2", Vote{Approve: true, Actor: "token:old", At: now.Add(-2 * time.Hour)}) // expired
	votes, err := st.Votes(ctx, c.ID, c.Generation, false, "h2", now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for i := range votes {
		votes[i].At = votes[i].At.UTC()
	}
	if want := []Vote{dba, bot}; !reflect.DeepEqual(votes, want) {
		t.Errorf("Votes = %+v; want %+v", votes, want)
	}

	// RequeueGated: the gated resource is due again, the others are not touched.
	if _, err := st.pool.Exec(ctx, `UPDATE resource_queue SET run_at = NULL`); err != nil {
		t.Fatal(err)
	}
	if n, err := st.RequeueGated(ctx); err != nil || n != 1 {
		t.Fatalf("RequeueGated = %d, %v; want 1", n, err)
	}
	_, cs = claimNames(t, st)
	if len(cs) != 1 || cs[0].ID != c.ID {
		t.Fatalf("claimed after RequeueGated: %+v", cs)
	}
	// Allowed: the request goes.
	write(cs[0], Update{ClearApproval: true})
	if _, _, ok := read(); ok {
		t.Error("the request is still there after ClearApproval")
	}
	if n, err := st.RequeueGated(ctx); err != nil || n != 0 {
		t.Fatalf("RequeueGated without requests = %d, %v; want 0", n, err)
	}
}

// WorkInFlight: the last call of an operation at a generation that neither failed nor was
// interrupted left work in progress.
func TestWorkInFlight(t *testing.T) {
	st := openTest(t, "s")
	ctx := context.Background()
	const uid = "00000000-0000-0000-0000-000000000001"
	add := func(gen int64, op, result string) {
		t.Helper()
		if _, err := st.pool.Exec(ctx, `INSERT INTO reconcile_history (resource_uid, namespace, kind, name, generation, operation, trigger,
			result, started_at, finished_at) VALUES ($1, 'default', 'Widget', 'db', $2, $3, 'x', $4, now(), now())`, uid, gen, op, result); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string, gen int64, op string, want bool) {
		t.Helper()
		got, err := st.WorkInFlight(ctx, uid, "default", "widget", "db", gen, op)
		if err != nil || got != want {
			t.Errorf("%s: WorkInFlight(%d, %s) = %v, %v; want %v", what, gen, op, got, err, want)
		}
	}
	check("no history", 1, "reconcile", false)
	add(1, "reconcile", "ApprovalRequired")
	add(1, "reconcile", "InProgress")
	check("in progress", 1, "reconcile", true)
	add(1, "reconcile", "Failed")
	add(1, "reconcile", HistoryInterrupted)
	check("a failed poll, an interrupted one", 1, "reconcile", true)
	check("another generation", 2, "reconcile", false)
	check("another operation", 1, "delete", false)
	add(1, "reconcile", "Succeeded")
	check("done", 1, "reconcile", false)
}
