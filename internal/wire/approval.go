package wire

import "time"

// Approval is what a resource gated by policies waits for: GET /api/v1/approvals lists them,
// GET of one resource shows its own as approval, and POST …/approve and …/reject answer it.
type Approval struct {
	Namespace  string `json:"namespace"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Source     string `json:"source"`
	Generation int64  `json:"generation"` // the generation the decision is about
	Deleting   bool   `json:"deleting"`   // the change is the resource's delete
	ChangeType string `json:"changeType"` // create, update, delete or drift
	Revision   string `json:"revision"`
	// State is pending (waiting for approvals), rejected or denied.
	State string `json:"state"`
	// Decision is requireApproval or deny; Policy names the deciding policy and Message is
	// its message.
	Decision string `json:"decision"`
	Policy   string `json:"policy"`
	Message  string `json:"message"`
	// Requires says, per requireApproval policy that holds, what it asks for: "1 approval
	// from group dba or token release-bot, not by the commit's author".
	Requires []string       `json:"requires"`
	Author   ApprovalAuthor `json:"author"`
	// PlanHash identifies the plan: an approval binds to it and to the generation.
	PlanHash string       `json:"planHash"`
	Plan     ApprovalPlan `json:"plan"`
	// Approvals are the approvals and rejections given for this generation and plan that
	// have not expired, oldest first.
	Approvals   []ApprovalVote `json:"approvals"`
	RequestedAt time.Time      `json:"requestedAt"`
}

// ApprovalAuthor is the author of the commit the change comes from (empty when unknown).
type ApprovalAuthor struct {
	Name  string `json:"name"`
	Email string `json:"email"`
}

// ApprovalPlan is the plan the decision was made on.
type ApprovalPlan struct {
	Available bool   `json:"available"` // false: the action cannot plan
	Changes   bool   `json:"changes"`
	Counted   bool   `json:"counted"` // the action reported the counts
	Add       int    `json:"add"`
	Change    int    `json:"change"`
	Destroy   int    `json:"destroy"`
	Replace   int    `json:"replace"`
	Summary   string `json:"summary"`
	// Text is the plan as the action printed it; GET of one resource only, and left out
	// when the plan may hold values from namespaces the caller may not read.
	Text string `json:"text,omitempty"`
}

// ApprovalVote is one approval or rejection.
type ApprovalVote struct {
	Actor   string    `json:"actor"`   // "token:NAME" or "user:NAME"
	Verdict string    `json:"verdict"` // approve or reject
	Reason  string    `json:"reason"`
	At      time.Time `json:"at"`
}

// Vote is the body of POST …/approve and …/reject.
type Vote struct {
	Reason string `json:"reason,omitempty"`
	// PlanHash is the plan the voter saw; when another waits, the answer is 409.
	PlanHash string `json:"planHash,omitempty"`
	// Generation is the generation the voter saw; when another waits, the answer is 409.
	Generation int64 `json:"generation,omitempty"`
}
