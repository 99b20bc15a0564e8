package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/policy"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// Approvals (issue 22): what resources gated by policies wait for, and the votes on them.
// Reading needs the namespace, like every read. Voting needs the namespace too, and then the
// right the waiting request names (its policies' approvals.from and notAuthor), not a role:
// a DBA with the viewer role approves, an operator outside approvals.from does not.

func (s *Server) approvalRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /api/v1/approvals", s.listApprovals)
	m.HandleFunc("POST /api/v1/resources/{namespace}/{kind}/{name}/approve", s.voteAPI(true))
	m.HandleFunc("POST /api/v1/resources/{namespace}/{kind}/{name}/reject", s.voteAPI(false))
}

// votesSince is when the votes still valid were given: approvalTTL ago.
func (s *Server) votesSince() time.Time {
	ttl := config.DefaultApprovalTTL
	if s.opts.ApprovalTTL != nil {
		if d := s.opts.ApprovalTTL(); d > 0 {
			ttl = d
		}
	}
	return time.Now().Add(-ttl)
}

// approvalWire is q as the caller sees it. The plan text is left in only with text true
// (GET of one resource, which knows where the resource's resolved values came from); the
// plan, the message and the reasons are scrubbed of the controller's secrets.
func (s *Server) approvalWire(q *store.ApprovalRequest, text bool) *wire.Approval {
	if q == nil {
		return nil
	}
	p := q.Plan
	a := &wire.Approval{Namespace: q.Namespace, Kind: q.Kind, Name: q.Name, Source: q.Source, Generation: q.Generation,
		Deleting: q.Deleting, ChangeType: q.ChangeType, Revision: q.Revision, State: q.State, Decision: string(q.Decision),
		Policy: q.Policy, Message: s.opts.Redact.Scrub(q.Message), Requires: make([]string, len(q.Requirements)),
		Author: wire.ApprovalAuthor(q.Author), PlanHash: q.PlanHash, Approvals: make([]wire.ApprovalVote, len(q.Votes)),
		Plan: wire.ApprovalPlan{Available: p.Available, Changes: p.Changes, Counted: p.Counted, Add: p.Add, Change: p.Change,
			Destroy: p.Destroy, Replace: p.Replace, Summary: s.opts.Redact.Scrub(p.Summary)},
		RequestedAt: q.RequestedAt}
	if text {
		a.Plan.Text = s.opts.Redact.Scrub(p.Text)
	}
	for i, r := range q.Requirements {
		a.Requires[i] = r.String()
	}
	for i, v := range q.Votes {
		a.Approvals[i] = wire.ApprovalVote{Actor: v.Actor, Verdict: verdict(v.Approve), Reason: s.opts.Redact.Scrub(v.Reason), At: v.At}
	}
	return a
}

func verdict(approve bool) string {
	if approve {
		return "approve"
	}
	return "reject"
}

// planTextVisible reports whether a caller who sees sc may read the plan of the resource
// with neighbours n: a plan prints the spec as called, so it may quote values resolved from
// other namespaces (STYLE 24), and is shown only when the caller reads all of them (known
// origins) or every namespace.
func planTextVisible(n store.Neighbours, sc store.Scope) bool {
	if sc.All() {
		return true
	}
	if n.ResolvedOrigins == nil && len(n.ResolvedSpec) > 0 {
		return false
	}
	for _, nss := range n.ResolvedOrigins {
		for _, ns := range nss {
			if !sc.Contains(ns) {
				return false
			}
		}
	}
	return true
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = store.ApprovalPending // what waits
	}
	switch state {
	case store.ApprovalPending, store.ApprovalRejected, store.ApprovalDenied:
	default:
		writeError(w, http.StatusBadRequest, "state must be pending, rejected or denied")
		return
	}
	items, err := s.store.ListApprovalRequests(r.Context(), scope(r), store.ApprovalFilter{Namespace: q.Get("namespace"), State: state}, s.votesSince())
	if s.fail(w, err) {
		return
	}
	out := make([]*wire.Approval, len(items))
	for i := range items {
		out[i] = s.approvalWire(&items[i], false)
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": out})
}

// voteRefused is a vote the request's policies do not allow (403), with why.
type voteRefused struct{ err error }

func (e voteRefused) Error() string { return e.err.Error() }

// vote records the caller's vote on the approval request of a resource. The caller must see
// the namespace (else ErrNotFound, as for a missing resource); a caller the request's
// policies do not name, or its commit's author under notAuthor, gets voteRefused.
func (s *Server) vote(ctx context.Context, r *http.Request, ns, kind, name string, approve bool, body wire.Vote) (*store.ApprovalRequest, error) {
	id := identity(r)
	if !id.Sees(ns) {
		return nil, resourceHidden(ns, kind, name)
	}
	approver := id.Approver()
	// An operator may paste an error that quotes a secret: the reason is kept for good.
	reason := strings.TrimSpace(body.Reason)
	reason = clip.Storable(s.opts.Redact.Scrub(reason), maxReason) // scrubbed whole, then cut
	q, err := s.store.Vote(ctx, store.VoteParams{Namespace: ns, Kind: kind, Name: name, PlanHash: body.PlanHash, Generation: body.Generation, Since: s.votesSince(),
		Vote: store.Vote{Approve: approve, Actor: id.Actor(), Approver: approver, Reason: reason},
		Check: func(q *store.ApprovalRequest) error {
			if err := mayVote(approver, q); err != nil {
				return voteRefused{err}
			}
			return nil
		}})
	if err == nil {
		s.log.Info("approval request "+verdict(approve)+"d", "resource", ns+"/"+q.Kind+"/"+name, "actor", id.Actor(),
			"policy", q.Policy, "plan", q.PlanHash)
	}
	return q, err
}

// mayVote returns nil when approver may vote on the pending request q, or why not: the
// request's policies do not name it, or it is the commit's author under notAuthor.
func mayVote(approver policy.Approver, q *store.ApprovalRequest) error {
	return policy.Decision{Action: policy.RequireApproval, Policy: q.Policy, Approvals: q.Requirements}.Permits(approver, q.Author)
}

// resourceHidden is the error of a resource the caller may not see: that of a missing one.
func resourceHidden(ns, kind, name string) error {
	return fmt.Errorf("resource %s/%s/%s: %w", ns, kind, name, store.ErrNotFound)
}

func (s *Server) voteAPI(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ns, kind, name := r.PathValue("namespace"), r.PathValue("kind"), r.PathValue("name")
		if !identity(r).Sees(ns) {
			s.fail(w, resourceHidden(ns, kind, name)) // before reading a body it may not send
			return
		}
		var body wire.Vote
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil && !errors.Is(err, io.EOF) {
			writeError(w, http.StatusBadRequest, `the body must be JSON {"reason": "...", "planHash": "...", "generation": N}: `+err.Error())
			return
		}
		q, err := s.vote(r.Context(), r, ns, kind, name, approve, body)
		var refused voteRefused
		switch {
		case errors.As(err, &refused):
			writeError(w, http.StatusForbidden, refused.Error())
			return
		case errors.Is(err, store.ErrNoApprovalRequest), errors.Is(err, store.ErrPlanChanged):
			writeError(w, http.StatusConflict, err.Error())
			return
		}
		if s.fail(w, err) {
			return
		}
		writeJSON(w, http.StatusOK, s.approvalWire(q, false))
	}
}
