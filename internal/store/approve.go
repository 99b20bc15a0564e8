package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/notify"
	"github.com/trueup-dev/trueup/internal/policy"
)

// The API's side of approvals (issue 22): reading what waits, and votes. The reconciler
// writes the requests (approvals.go); a vote only records itself and makes the resource due,
// and the reconciler decides with it.

// Errors of Vote.
var (
	// ErrNoApprovalRequest: no approval request of the resource is pending.
	ErrNoApprovalRequest = errors.New("no change waits for approval")
	// ErrPlanChanged: the vote names a plan hash other than the one that waits.
	ErrPlanChanged = errors.New("the plan changed")
)

// Event reasons of votes.
const (
	ReasonApprovalGiven  = "ApprovalGiven"
	ReasonRejectionGiven = "RejectionGiven"
)

const approvalRequestColumns = `r.namespace, r.kind, r.name, r.source, a.resource_id, a.generation, a.deleting, a.change_type,
	a.revision, a.plan_hash, a.plan, a.decision, a.policy, a.message, a.requirements, a.author_name, a.author_email, a.state,
	a.requested_at`

func scanApprovalRequest(row pgx.Row) (ApprovalRequest, error) {
	var q ApprovalRequest
	var plan, reqs []byte
	var decision string
	if err := row.Scan(&q.Namespace, &q.Kind, &q.Name, &q.Source, &q.ResourceID, &q.Generation, &q.Deleting, &q.ChangeType,
		&q.Revision, &q.PlanHash, &plan, &decision, &q.Policy, &q.Message, &reqs, &q.Author.Name, &q.Author.Email, &q.State,
		&q.RequestedAt); err != nil {
		return q, err
	}
	q.Decision = policy.Effect(decision)
	var err error
	if q.Plan, err = decodeApprovalPlan(plan); err != nil {
		return q, fmt.Errorf("approval request of %s/%s/%s: plan: %w", q.Namespace, q.Kind, q.Name, err)
	}
	if q.Requirements, err = decodeRequirements(reqs); err != nil {
		return q, fmt.Errorf("approval request of %s/%s/%s: requirements: %w", q.Namespace, q.Kind, q.Name, err)
	}
	return q, nil
}

// attachVotes fills the Votes of qs: those given for each one's generation and plan hash
// since since, oldest first, in one query.
func attachVotes(ctx context.Context, db DB, qs []ApprovalRequest, since time.Time) error {
	if len(qs) == 0 {
		return nil
	}
	ids, gens, hashes, deleting := make([]int64, len(qs)), make([]int64, len(qs)), make([]string, len(qs)), make([]bool, len(qs))
	at := make(map[int64]int, len(qs))
	for i, q := range qs {
		ids[i], gens[i], hashes[i], deleting[i] = q.ResourceID, q.Generation, q.PlanHash, q.Deleting
		at[q.ResourceID] = i
	}
	rows, err := db.Query(ctx, `SELECT v.resource_id, v.verdict, v.actor, v.approver, v.reason, v.created_at
		FROM approvals v JOIN unnest($1::bigint[], $2::bigint[], $3::text[], $5::boolean[]) AS q(id, generation, plan_hash, deleting)
		  ON v.resource_id = q.id AND v.generation = q.generation AND v.plan_hash = q.plan_hash AND v.deleting = q.deleting
		WHERE v.created_at >= $4 ORDER BY v.created_at, v.id`, ids, gens, hashes, since, deleting)
	if err != nil {
		return err
	}
	var id int64
	var verdict string
	var approver []byte
	var v Vote
	_, err = pgx.ForEachRow(rows, []any{&id, &verdict, &v.Actor, &approver, &v.Reason, &v.At}, func() error {
		a, err := decodeApprover(approver)
		if err != nil {
			return fmt.Errorf("vote of %s: approver: %w", v.Actor, err)
		}
		v.Approve, v.Approver = verdict == "approve", a
		q := &qs[at[id]]
		q.Votes = append(q.Votes, v)
		return nil
	})
	return err
}

// ApprovalRequest returns the approval request of a resource (kind is case-insensitive)
// with the votes given since since, or nil when it has none.
func (s *Store) ApprovalRequest(ctx context.Context, namespace, kind, name string, since time.Time) (*ApprovalRequest, error) {
	q, err := scanApprovalRequest(s.pool.QueryRow(ctx, "SELECT "+approvalRequestColumns+
		` FROM approval_requests a JOIN resources r ON r.id = a.resource_id
		WHERE r.namespace = $1 AND lower(r.kind) = lower($2) AND r.name = $3`, namespace, kind, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err == nil {
		qs := []ApprovalRequest{q}
		err = attachVotes(ctx, s.pool, qs, since)
		q = qs[0]
	}
	if err != nil {
		return nil, fmt.Errorf("approval request of %s/%s/%s: %w", namespace, kind, name, err)
	}
	return &q, nil
}

// ApprovalFilter selects approval requests; empty fields match every one.
type ApprovalFilter struct {
	Namespace string
	State     string // ApprovalPending, ApprovalRejected or ApprovalDenied
}

// maxApprovalRequests bounds a list of approval requests (they are few: each is a change a
// person has to look at).
const maxApprovalRequests = 1000

// ListApprovalRequests returns the approval requests in scope, oldest first, with the votes
// given since since.
func (s *Store) ListApprovalRequests(ctx context.Context, sc Scope, f ApprovalFilter, since time.Time) ([]ApprovalRequest, error) {
	var args params
	var where []string
	if w := sc.where("r.namespace", args.add); w != "" {
		where = append(where, w)
	}
	if f.Namespace != "" {
		where = append(where, "r.namespace = "+args.add(f.Namespace))
	}
	if f.State != "" {
		where = append(where, "a.state = "+args.add(f.State))
	}
	q := "SELECT " + approvalRequestColumns + " FROM approval_requests a JOIN resources r ON r.id = a.resource_id"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	rows, err := s.pool.Query(ctx, q+" ORDER BY a.requested_at, r.namespace, lower(r.kind), r.name LIMIT "+args.add(maxApprovalRequests), args...)
	if err != nil {
		return nil, fmt.Errorf("list approval requests: %w", err)
	}
	qs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ApprovalRequest, error) { return scanApprovalRequest(r) })
	if err == nil {
		err = attachVotes(ctx, s.pool, qs, since)
	}
	if err != nil {
		return nil, fmt.Errorf("list approval requests: %w", err)
	}
	return qs, nil
}

// CountPendingApprovals counts the approval requests in scope that wait for approvals.
func (s *Store) CountPendingApprovals(ctx context.Context, sc Scope) (int, error) {
	args := params{ApprovalPending}
	q := "SELECT count(*) FROM approval_requests a JOIN resources r ON r.id = a.resource_id WHERE a.state = $1"
	if w := sc.where("r.namespace", args.add); w != "" {
		q += " AND " + w
	}
	var n int
	if err := s.pool.QueryRow(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count pending approvals: %w", err)
	}
	return n, nil
}

// VoteParams is one vote on the approval request of a resource.
type VoteParams struct {
	Namespace, Kind, Name string
	// PlanHash is the plan the voter saw ("": whichever waits); another hash is
	// ErrPlanChanged.
	PlanHash string
	// Generation is the generation the voter saw (0: whichever waits); another is
	// ErrPlanChanged.
	Generation int64
	Vote       Vote // Approve, Actor, Approver and Reason; the database's clock sets At
	// Since is when the votes still valid were given (now minus approvalTTL), for the votes
	// of the request returned.
	Since time.Time
	// Check decides whether the voter may vote on the request; its error is returned
	// (wrapped) and nothing is written.
	Check func(*ApprovalRequest) error
}

// Vote records an approval or a rejection of the pending approval request of a resource, in
// one transaction with the request locked: the vote, bound to the request's generation and
// plan hash; the resource due now (the reconciler decides with the vote; every replica's
// claimer is woken); and an event ApprovalGiven or RejectionGiven. It returns the request
// with its votes, this one included. A resource that does not exist is ErrNotFound; one
// with no pending request ErrNoApprovalRequest; a PlanHash other than the request's
// ErrPlanChanged.
func (s *Store) Vote(ctx context.Context, p VoteParams) (*ApprovalRequest, error) {
	var out ApprovalRequest
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// The resource's row first, then its request: the order of the reconciler's result
		// write, which locks the resource and then writes the request (the other order
		// deadlocks with it).
		var id, generation int64
		var deleting bool
		err := tx.QueryRow(ctx, `SELECT id, generation, deletion_timestamp IS NOT NULL FROM resources
			WHERE namespace = $1 AND lower(kind) = lower($2) AND name = $3 FOR UPDATE`, p.Namespace, p.Kind, p.Name).Scan(&id, &generation, &deleting)
		if errors.Is(err, pgx.ErrNoRows) {
			return resourceNotFound(p.Namespace, p.Kind, p.Name)
		}
		if err != nil {
			return err
		}
		q, err := scanApprovalRequest(tx.QueryRow(ctx, "SELECT "+approvalRequestColumns+
			` FROM approval_requests a JOIN resources r ON r.id = a.resource_id
			WHERE a.resource_id = $1 FOR UPDATE OF a`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNoApprovalRequest
		}
		if err != nil {
			return err
		}
		switch {
		case q.State != ApprovalPending:
			return fmt.Errorf("%w (the change is %s)", ErrNoApprovalRequest, q.State)
		case q.Generation != generation || q.Deleting != deleting:
			// The desired state moved on since the request was made: the next decision
			// asks again, for what the resource holds now.
			return fmt.Errorf("%w: the request is for generation %d%s, the resource is at generation %d%s", ErrPlanChanged,
				q.Generation, deletingWord(q.Deleting), generation, deletingWord(deleting))
		case p.Generation != 0 && p.Generation != q.Generation:
			return fmt.Errorf("%w: generation %d waits, not %d", ErrPlanChanged, q.Generation, p.Generation)
		case p.PlanHash != "" && p.PlanHash != q.PlanHash:
			return fmt.Errorf("%w: %s waits, not %s", ErrPlanChanged, q.PlanHash, p.PlanHash)
		}
		if p.Check != nil {
			if err := p.Check(&q); err != nil {
				return err
			}
		}
		verdict, reason, did := "reject", ReasonRejectionGiven, "rejected"
		if p.Vote.Approve {
			verdict, reason, did = "approve", ReasonApprovalGiven, "approved"
		}
		approver, err := encodeApprover(p.Vote.Approver)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO approvals (resource_id, generation, plan_hash, deleting, verdict, actor, approver, reason)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, q.ResourceID, q.Generation, q.PlanHash, q.Deleting, verdict, p.Vote.Actor,
			approver, p.Vote.Reason); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE resource_queue SET run_at = now(), dirty = dirty OR lease_owner IS NOT NULL WHERE id = $1`,
			q.ResourceID); err != nil {
			return err
		}
		msg := fmt.Sprintf("%s by %s (policy %s, plan %s)", did, p.Vote.Actor, q.Policy, notify.Short(q.PlanHash))
		if p.Vote.Reason != "" {
			msg += ": " + p.Vote.Reason
		}
		if err := insertEvent(ctx, tx, Event{Namespace: q.Namespace, Kind: q.Kind, Name: q.Name, Source: q.Source, Type: EventNormal,
			Reason: reason, Message: msg}); err != nil {
			return err
		}
		qs := []ApprovalRequest{q}
		if err := attachVotes(ctx, tx, qs, p.Since); err != nil {
			return err
		}
		out = qs[0]
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, '')", WorkChannel)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("vote on %s/%s/%s: %w", p.Namespace, p.Kind, p.Name, err)
	}
	return &out, nil
}

// deletingWord says, in a message about a generation, that it is being deleted.
func deletingWord(deleting bool) string {
	if deleting {
		return " (its delete)"
	}
	return ""
}
