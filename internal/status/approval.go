package status

// The gate of policies (internal/policy) on a resource's change.
const (
	// Approved is set on a resource that policies select when its change is decided: True
	// when it may be applied (allowed, or approved), False while it waits for approvals, was
	// rejected, or is denied.
	Approved = "Approved"

	// ReasonApprovalRequired: Approved=False, waiting for approvals; the message names the
	// policy and who may approve. The resource is Pending with Reconciling=True for the
	// same reason until the approvals arrive.
	ReasonApprovalRequired = "ApprovalRequired"
	// ReasonApproved: Approved=True, the approvals the policies ask for were given for this
	// generation and plan.
	ReasonApproved = "Approved"
	// ReasonPolicyAllowed: Approved=True, no policy asked for approvals or denied.
	ReasonPolicyAllowed = "PolicyAllowed"
	// ReasonRejected: Approved=False, an approver rejected this generation's plan; the
	// resource is Stalled until a new generation or plan.
	ReasonRejected = "Rejected"
	// ReasonPolicyDenied: Approved=False, a deny policy holds; the resource is Stalled with
	// the policy's message until a new generation (or a reload that changes the policies).
	ReasonPolicyDenied = "PolicyDenied"
)
