package store

import (
	"time"

	"github.com/trueup-dev/trueup/internal/policy"
)

// States of an approval request.
const (
	ApprovalPending  = "pending"  // waiting for approvals
	ApprovalRejected = "rejected" // an approver rejected its plan
	ApprovalDenied   = "denied"   // a deny policy holds
)

// ApprovalPlan is the plan a gated change was decided on, as approvers see it (the text is
// scrubbed and bounded by the reconciler before it is stored).
type ApprovalPlan struct {
	Available, Changes, Counted   bool
	Add, Change, Destroy, Replace int
	Summary, Text                 string
}

// ApprovalRequest is what a resource gated by policies waits for (approval_requests): the
// decision, the plan it was made on and, in reads, the votes given for that plan.
type ApprovalRequest struct {
	ResourceID                    int64
	Namespace, Kind, Name, Source string // filled by reads
	Generation                    int64
	Deleting                      bool
	ChangeType                    string // policy.ChangeCreate, ChangeUpdate, ChangeDelete or ChangeDrift
	Revision                      string
	PlanHash                      string // actions.PlanHash of the plan
	Plan                          ApprovalPlan
	Decision                      policy.Effect // policy.RequireApproval or policy.Deny
	Policy, Message               string
	Requirements                  []policy.Requirement
	Author                        policy.Author
	State                         string // ApprovalPending, ApprovalRejected or ApprovalDenied
	RequestedAt                   time.Time
	// Votes, in reads, are the votes given for this generation, operation (Deleting) and plan
	// hash that have not expired, oldest first.
	Votes []Vote
}

// Vote is one approval or rejection, bound to a generation, an operation (the resource's
// delete, or not) and a plan hash.
type Vote struct {
	Approve  bool // false: a rejection
	Actor    string
	Approver policy.Approver
	Reason   string
	At       time.Time
}
