package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/trueup-dev/trueup/internal/auth"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// The dashboard's side of approvals: the resource page shows what the resource waits for,
// with Approve and Reject buttons that lead to a confirmation page whose form votes (CSRF as
// the operator commands: dashboard_operate.go).

// approvalView is the approval block of a resource page.
type approvalView struct {
	*wire.Approval
	Base    string // the resource's page
	CanVote bool   // the caller may vote on it now
	Why     string // why the caller may not vote on a pending request
}

// resourceApproval is the approval block of the resource (nil: nothing gates it); n says
// whether the plan's text may be shown to sc.
func (s *Server) resourceApproval(ctx context.Context, id auth.Identity, res store.Resource, n store.Neighbours, sc store.Scope) (*approvalView, error) {
	m := res.Metadata
	q, err := s.store.ApprovalRequest(ctx, m.Namespace, res.Kind, m.Name, s.votesSince())
	if err != nil || q == nil {
		return nil, err
	}
	v := &approvalView{Approval: s.approvalWire(q, planTextVisible(n, sc)), Base: resourcePath(m.Namespace, res.Kind, m.Name)}
	if q.State == store.ApprovalPending {
		if err := mayVote(id.Approver(), q); err != nil {
			v.Why = err.Error()
		} else {
			v.CanVote = true
		}
	}
	return v, nil
}

// voteForm records the vote of a confirmed approve or reject form and sends the browser back
// to the resource's page; a refusal is a page saying why.
func (s *Server) voteForm(w http.ResponseWriter, r *http.Request, c command) {
	body := wire.Vote{Reason: r.PostFormValue("reason"), PlanHash: r.PostFormValue("planHash")}
	// The generation confirmed; a form without one (or a bad one) binds to the plan alone.
	body.Generation, _ = strconv.ParseInt(r.PostFormValue("generation"), 10, 64)
	_, err := s.vote(r.Context(), r, c.NS, c.Kind, c.Name, c.Action == "approve", body)
	var refused voteRefused
	switch {
	case errors.As(err, &refused):
		s.errorPage(w, r, http.StatusForbidden, "Not allowed", refused.Error())
	case errors.Is(err, store.ErrPlanChanged):
		s.errorPage(w, r, http.StatusConflict, "The plan changed",
			"The change waiting has another plan or generation than the one you confirmed: nothing was recorded. Go back to the resource and look at the plan again.")
	case errors.Is(err, store.ErrNoApprovalRequest):
		s.errorPage(w, r, http.StatusConflict, "Nothing waits for approval", "This resource has no change waiting for approval: nothing was recorded.")
	case !s.pageFailed(w, r, err):
		http.Redirect(w, r, c.Base, http.StatusSeeOther)
	}
}

// pendingApproval is the request a vote's confirmation page confirms, or a 409 page.
func (s *Server) pendingApproval(w http.ResponseWriter, r *http.Request, c command) (*store.ApprovalRequest, bool) {
	q, err := s.store.ApprovalRequest(r.Context(), c.NS, c.Kind, c.Name, s.votesSince())
	if s.pageFailed(w, r, err) {
		return nil, false
	}
	if q == nil || q.State != store.ApprovalPending {
		s.errorPage(w, r, http.StatusConflict, "Nothing waits for approval", "This resource has no change waiting for approval.")
		return nil, false
	}
	return q, true
}
