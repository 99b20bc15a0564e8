package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trueup-dev/trueup/internal/clip"
)

// Votes returns the votes given for a resource's generation, operation (its delete, or not)
// and plan hash since since (the ones not expired), oldest first.
func (s *Store) Votes(ctx context.Context, resourceID, generation int64, deleting bool, planHash string, since time.Time) ([]Vote, error) {
	qs := []ApprovalRequest{{ResourceID: resourceID, Generation: generation, Deleting: deleting, PlanHash: planHash}}
	if err := attachVotes(ctx, s.pool, qs, since); err != nil {
		return nil, fmt.Errorf("votes: %w", err)
	}
	return qs[0].Votes, nil
}

// RequeueGated makes every resource with an approval request due now (a reload changed the
// policies: their changes are decided again); it returns how many.
func (s *Store) RequeueGated(ctx context.Context) (int, error) {
	n, err := s.requeueWhere(ctx, "id IN (SELECT resource_id FROM approval_requests)")
	if err != nil {
		return 0, fmt.Errorf("requeue gated resources: %w", err)
	}
	return n, nil
}

// WorkInFlight reports whether the last call of operation (reconcile or delete) at a
// resource's generation that neither failed nor was interrupted left work in progress: the
// failures since (a poll that failed) kept its handle.
func (s *Store) WorkInFlight(ctx context.Context, uid, namespace, kind, name string, generation int64, operation string) (bool, error) {
	var result string
	err := s.pool.QueryRow(ctx, `SELECT result FROM reconcile_history
		WHERE namespace = $1 AND lower(kind) = lower($2) AND name = $3 AND resource_uid = $4::uuid AND generation = $5
		  AND operation = $6 AND result NOT IN ('Failed', $7) ORDER BY id DESC LIMIT 1`,
		namespace, kind, name, uid, generation, operation, HistoryInterrupted).Scan(&result)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("work in flight: %w", err)
	}
	return result == "InProgress", nil
}

// AppliedSpec is the spec a resource was last applied with (nil when never, or unknown).
func (s *Store) AppliedSpec(ctx context.Context, resourceID int64) (json.RawMessage, error) {
	var spec json.RawMessage
	if err := s.pool.QueryRow(ctx, `SELECT applied_spec FROM resources WHERE id = $1`, resourceID).Scan(&spec); err != nil {
		return nil, fmt.Errorf("applied spec: %w", err)
	}
	return spec, nil
}

// approvalBatch gathers the approval requests a batch of results upserts and removes.
type approvalBatch struct {
	ids, gens                                                     []int64
	deleting                                                      []bool
	change, rev, hash, plan, decision, pol, msg, reqs, an, ae, st []string
	clear                                                         []int64
}

func (b *approvalBatch) add(id int64, u Update) error {
	if u.ClearApproval {
		b.clear = append(b.clear, id)
	}
	a := u.Approval
	if a == nil {
		return nil
	}
	plan, err := encodeApprovalPlan(a.Plan)
	if err != nil {
		return err
	}
	reqs, err := encodeRequirements(a.Requirements)
	if err != nil {
		return err
	}
	b.ids, b.gens, b.deleting = append(b.ids, id), append(b.gens, a.Generation), append(b.deleting, a.Deleting)
	b.change, b.rev, b.hash = append(b.change, a.ChangeType), append(b.rev, a.Revision), append(b.hash, a.PlanHash)
	b.plan, b.decision, b.pol = append(b.plan, string(storableJSON(plan))), append(b.decision, string(a.Decision)), append(b.pol, a.Policy)
	b.msg, b.reqs = append(b.msg, clip.Storable(a.Message, 8000)), append(b.reqs, string(reqs))
	b.an, b.ae, b.st = append(b.an, a.Author.Name), append(b.ae, a.Author.Email), append(b.st, a.State)
	return nil
}

// write removes, then upserts, the batch's approval requests. A request keeps when it was
// asked for while it is for the same generation and plan.
func (b *approvalBatch) write(ctx context.Context, tx pgx.Tx) error {
	if len(b.clear) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM approval_requests WHERE resource_id = ANY($1::bigint[])`, b.clear); err != nil {
			return fmt.Errorf("remove approval requests: %w", err)
		}
	}
	if len(b.ids) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO approval_requests AS a (resource_id, generation, deleting, change_type, revision, plan_hash, plan,
		  decision, policy, message, requirements, author_name, author_email, state)
		SELECT x.id, x.gen, x.del, x.change, x.rev, x.hash, x.plan::jsonb, x.decision, x.pol, x.msg, x.reqs::jsonb, x.an, x.ae, x.st
		FROM unnest($1::bigint[], $2::bigint[], $3::bool[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
		  $10::text[], $11::text[], $12::text[], $13::text[], $14::text[])
		  AS x(id, gen, del, change, rev, hash, plan, decision, pol, msg, reqs, an, ae, st)
		ON CONFLICT (resource_id) DO UPDATE SET generation = EXCLUDED.generation, deleting = EXCLUDED.deleting,
		  change_type = EXCLUDED.change_type, revision = EXCLUDED.revision, plan_hash = EXCLUDED.plan_hash, plan = EXCLUDED.plan,
		  decision = EXCLUDED.decision, policy = EXCLUDED.policy, message = EXCLUDED.message, requirements = EXCLUDED.requirements,
		  author_name = EXCLUDED.author_name, author_email = EXCLUDED.author_email, state = EXCLUDED.state,
		  requested_at = CASE WHEN a.generation = EXCLUDED.generation AND a.plan_hash = EXCLUDED.plan_hash AND a.deleting = EXCLUDED.deleting
		    THEN a.requested_at ELSE now() END`,
		b.ids, b.gens, b.deleting, b.change, b.rev, b.hash, b.plan, b.decision, b.pol, b.msg, b.reqs, b.an, b.ae, b.st)
	if err != nil {
		return fmt.Errorf("write approval requests: %w", err)
	}
	return nil
}
