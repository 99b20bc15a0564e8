package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/policy"
)

// insertApprovalRequest writes q as the approval request of the resource it names, as the
// reconciler's write does.
func insertApprovalRequest(t *testing.T, st *Store, q ApprovalRequest) {
	t.Helper()
	plan, err := encodeApprovalPlan(q.Plan)
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := encodeRequirements(q.Requirements)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.pool.Exec(context.Background(), `INSERT INTO approval_requests (resource_id, generation, deleting, change_type,
		revision, plan_hash, plan, decision, policy, message, requirements, author_name, author_email, state)
		SELECT id, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16 FROM resources
		WHERE namespace = $1 AND kind = $2 AND name = $3
		ON CONFLICT (resource_id) DO UPDATE SET plan_hash = EXCLUDED.plan_hash, state = EXCLUDED.state`,
		q.Namespace, q.Kind, q.Name, q.Generation, q.Deleting, q.ChangeType, q.Revision, q.PlanHash, plan,
		string(q.Decision), q.Policy, q.Message, reqs, q.Author.Name, q.Author.Email, q.State)
	if err != nil {
		t.Fatal(err)
	}
}

func TestApprovalRequests(t *testing.T) {
	st := openTest(t, "s")
	ctx := context.Background()
	applyRefreshed(t, st, "s", "r1", chainSet())
	dba := policy.Requirement{Policy: "needs-dba", Approvals: policy.Approvals{Count: 1, NotAuthor: true,
		From: []policy.Principal{{Group: "dba"}, {Token: "release-bot"}}}}
	want := ApprovalRequest{Namespace: "prod", Kind: "Database", Name: "database", Source: "s", Generation: 1,
		ChangeType: policy.ChangeUpdate, Revision: "r1", PlanHash: "abcdef0123456789",
		Plan:     ApprovalPlan{Available: true, Changes: true, Counted: true, Replace: 1, Summary: "1 to replace", Text: "-/+ db"},
		Decision: policy.RequireApproval, Policy: "needs-dba", Message: "a DBA approves", Requirements: []policy.Requirement{dba},
		Author: policy.Author{Name: "Ann", Email: "ann@example.com"}, State: ApprovalPending}
	insertApprovalRequest(t, st, want)
	network := want
	network.Kind, network.Name, network.State, network.Decision = "Network", "network", ApprovalDenied, policy.Deny
	insertApprovalRequest(t, st, network)

	got, err := st.ApprovalRequest(ctx, "prod", "database", "database", time.Time{})
	if err != nil || got == nil {
		t.Fatalf("approval request: %v, %v", got, err)
	}
	if got.Plan != want.Plan || got.Author != want.Author || got.Policy != "needs-dba" || got.Decision != policy.RequireApproval ||
		len(got.Requirements) != 1 || got.Requirements[0].String() != dba.String() || got.Source != "s" || got.ResourceID == 0 {
		t.Fatalf("approval request read back as %+v", got)
	}
	if q, err := st.ApprovalRequest(ctx, "prod", "App", "app", time.Time{}); q != nil || err != nil {
		t.Fatalf("a resource without a request: %v, %v", q, err)
	}

	// Lists are scoped and filtered.
	for _, c := range []struct {
		name string
		sc   Scope
		f    ApprovalFilter
		want int
	}{
		{"everything", Everything, ApprovalFilter{}, 2},
		{"its namespace", InNamespaces("prod"), ApprovalFilter{}, 2},
		{"another namespace", InNamespaces("dev"), ApprovalFilter{}, 0},
		{"nothing", Scope{}, ApprovalFilter{}, 0},
		{"pending", Everything, ApprovalFilter{State: ApprovalPending}, 1},
		{"a namespace filter", Everything, ApprovalFilter{Namespace: "dev"}, 0},
	} {
		qs, err := st.ListApprovalRequests(ctx, c.sc, c.f, time.Time{})
		if err != nil || len(qs) != c.want {
			t.Errorf("%s: %d requests, %v; want %d", c.name, len(qs), err, c.want)
		}
	}
	for sc, want := range map[*Scope]int{&Everything: 1, {}: 0} {
		if n, err := st.CountPendingApprovals(ctx, *sc); n != want || err != nil {
			t.Errorf("pending in %v: %d, %v; want %d", sc, n, err, want)
		}
	}

	// The dashboard's table filters on the request's state.
	for state, want := range map[string]int{ApprovalPending: 1, ApprovalDenied: 1, ApprovalRejected: 0} {
		rs, _, err := st.ListResourceSummaries(ctx, InNamespaces("prod"), SummaryFilter{Approval: state})
		if err != nil || len(rs) != want {
			t.Errorf("resources with a %s approval request: %d, %v; want %d", state, len(rs), err, want)
		}
	}
	if _, _, err := st.ListResourceSummaries(ctx, Everything, SummaryFilter{Approval: "maybe"}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("an unknown approval state: %v", err)
	}

	// A vote the check refuses writes nothing.
	refused := errors.New("may not")
	vote := func(kind, hash string, approve bool, check func(*ApprovalRequest) error) (*ApprovalRequest, error) {
		return st.Vote(ctx, VoteParams{Namespace: "prod", Kind: kind, Name: strings.ToLower(kind), PlanHash: hash,
			Vote: Vote{Approve: approve, Actor: "token:dba", Approver: policy.Approver{Token: "dba"}, Reason: "fine"}, Check: check})
	}
	if _, err := vote("Database", "", true, func(*ApprovalRequest) error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("a refused vote: %v", err)
	}
	for _, c := range []struct {
		kind, hash string
		want       error
	}{
		{"Database", "other", ErrPlanChanged},
		{"Network", "", ErrNoApprovalRequest}, // denied: nothing waits for a vote
		{"App", "", ErrNoApprovalRequest},
		{"Nothing", "", ErrNotFound},
	} {
		if _, err := vote(c.kind, c.hash, true, nil); !errors.Is(err, c.want) {
			t.Errorf("vote on %s with hash %q: %v, want %v", c.kind, c.hash, err, c.want)
		}
	}
	var runAt *time.Time
	if err := st.pool.QueryRow(ctx, "UPDATE resource_queue SET run_at = NULL WHERE id IN (SELECT id FROM resources WHERE kind = 'Database') RETURNING run_at").Scan(&runAt); err != nil {
		t.Fatal(err)
	}

	q, err := vote("Database", want.PlanHash, true, func(q *ApprovalRequest) error {
		return policy.Decision{Action: policy.RequireApproval, Approvals: q.Requirements}.Permits(policy.Approver{Token: "release-bot"}, q.Author)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Votes) != 1 || !q.Votes[0].Approve || q.Votes[0].Actor != "token:dba" || q.Votes[0].Approver.Token != "dba" ||
		q.Votes[0].Reason != "fine" || q.Votes[0].At.IsZero() {
		t.Fatalf("votes after the vote: %+v", q.Votes)
	}
	if err := st.pool.QueryRow(ctx, "SELECT run_at FROM resources JOIN resource_queue USING (id) WHERE kind = 'Database'").Scan(&runAt); err != nil || runAt == nil {
		t.Fatalf("run_at after the vote: %v, %v", runAt, err)
	}
	evs, err := st.ListEvents(ctx, Everything, EventFilter{Kind: "Database", Name: "database"})
	if err != nil || len(evs) == 0 || evs[0].Reason != ReasonApprovalGiven || evs[0].Message != "approved by token:dba (policy needs-dba, plan abcdef012345): fine" {
		t.Fatalf("events after the vote: %+v, %v", evs, err)
	}

	// A rejection is recorded alike; votes read back with the request, and older ones than
	// since are left out.
	if _, err := vote("Database", "", false, nil); err != nil {
		t.Fatal(err)
	}
	got, err = st.ApprovalRequest(ctx, "prod", "Database", "database", time.Time{})
	if err != nil || len(got.Votes) != 2 || got.Votes[1].Approve {
		t.Fatalf("votes read back: %+v, %v", got, err)
	}
	if got, err = st.ApprovalRequest(ctx, "prod", "Database", "database", time.Now().Add(time.Hour)); err != nil || len(got.Votes) != 0 {
		t.Fatalf("votes since an hour ahead: %+v, %v", got, err)
	}
	// Votes bind to the plan: a new plan hash has none.
	want.PlanHash = "fedcba"
	insertApprovalRequest(t, st, want)
	if qs, err := st.ListApprovalRequests(ctx, Everything, ApprovalFilter{State: ApprovalPending}, time.Time{}); err != nil || len(qs) != 1 || len(qs[0].Votes) != 0 {
		t.Fatalf("votes of a new plan: %+v, %v", qs, err)
	}
}

// TestVoteBinding: a vote names the generation and plan it was given for; a request the
// resource's desired state has moved past (a new generation, its delete) takes no vote.
func TestVoteBinding(t *testing.T) {
	st := openTest(t, "s")
	ctx := context.Background()
	applyRefreshed(t, st, "s", "r1", chainSet())
	req := ApprovalRequest{Namespace: "prod", Kind: "Database", Name: "database", Generation: 1, ChangeType: policy.ChangeUpdate,
		PlanHash: "abc", Decision: policy.RequireApproval, Policy: "p", State: ApprovalPending,
		Requirements: []policy.Requirement{{Policy: "p", Approvals: policy.Approvals{Count: 1, From: []policy.Principal{{Token: "dba"}}}}}}
	insertApprovalRequest(t, st, req)
	vote := func(gen int64, hash string) error {
		_, err := st.Vote(ctx, VoteParams{Namespace: "prod", Kind: "Database", Name: "database", Generation: gen, PlanHash: hash,
			Vote: Vote{Approve: true, Actor: "token:dba", Approver: policy.Approver{Token: "dba"}}})
		return err
	}
	for _, c := range []struct {
		name string
		gen  int64
		hash string
		want error
	}{
		{"another generation", 2, "abc", ErrPlanChanged},
		{"another plan", 1, "abd", ErrPlanChanged},
	} {
		if err := vote(c.gen, c.hash); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// The desired state moves on: the request waits for a generation the resource left.
	if _, err := st.pool.Exec(ctx, `UPDATE resources SET generation = 2 WHERE namespace = 'prod' AND kind = 'Database'`); err != nil {
		t.Fatal(err)
	}
	if err := vote(0, ""); !errors.Is(err, ErrPlanChanged) || !strings.Contains(err.Error(), "generation 1") {
		t.Errorf("a vote on a request the resource moved past: %v", err)
	}
	if _, err := st.pool.Exec(ctx, `UPDATE resources SET generation = 1, deletion_timestamp = now() WHERE namespace = 'prod' AND kind = 'Database'`); err != nil {
		t.Fatal(err)
	}
	if err := vote(1, "abc"); !errors.Is(err, ErrPlanChanged) || !strings.Contains(err.Error(), "its delete") {
		t.Errorf("a vote on an update's request once the resource is being deleted: %v", err)
	}
	var n int
	if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM approvals`).Scan(&n); err != nil || n != 0 {
		t.Errorf("votes recorded: %d, %v", n, err)
	}
	if _, err := st.pool.Exec(ctx, `UPDATE resources SET deletion_timestamp = NULL WHERE namespace = 'prod' AND kind = 'Database'`); err != nil {
		t.Fatal(err)
	}
	if err := vote(1, "abc"); err != nil {
		t.Errorf("the vote for the generation and plan that wait: %v", err)
	}
}
