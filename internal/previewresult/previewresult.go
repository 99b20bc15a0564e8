// Package previewresult holds what a pull-request preview found (DESIGN §4, Previews): the
// result stored as JSON with the preview's row and served by the API as is. It is a leaf:
// the server shows previews through it without linking the preview engine or any action
// plugin, so the API cannot drive a plugin.
package previewresult

import "strings"

// Result is one preview of one pull request head; it is stored as JSON (store.Preview.Result)
// and served by the API as is.
type Result struct {
	Counts   Counts   `json:"counts"`
	Changes  []Change `json:"changes"`            // added, changed and deleted resources, sorted by kind, namespace, name
	Errors   []Error  `json:"errors"`             // validation errors; non-empty means the PR is invalid
	Warnings []string `json:"warnings,omitempty"` // prune guards that would skip deletions, plans that timed out, …
	// WarningNamespaces holds, for each warning, the namespace of the resource it names, or ""
	// for one about the whole revision: the API leaves out what a caller may not see.
	WarningNamespaces []string `json:"warningNamespaces,omitempty"`
}

// Counts summarise a preview.
type Counts struct {
	Add       int `json:"add"`
	Change    int `json:"change"`
	Delete    int `json:"delete"`
	Unchanged int `json:"unchanged"`
	Invalid   int `json:"invalid"` // validation errors
}

// Change is one resource the pull request would add, change or delete.
type Change struct {
	Op        string `json:"op"` // add | change | delete
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	File      string `json:"file,omitempty"`
	Line      int    `json:"line,omitempty"`
	// Diff is a unified diff of the spec (YAML), secrets as ***.
	Diff string `json:"diff,omitempty"`
	Plan *Plan  `json:"plan,omitempty"`
	// Gate is what the controller's policies would decide for the change once merged: nil
	// when they allow it (or none selects the resource).
	Gate *Gate `json:"gate,omitempty"`
}

// Gate is a policy that would hold a change after merge: a deny, or the approvals the
// change would wait for; or one whose decision depends on a plan the preview has not got.
type Gate struct {
	Decision string `json:"decision"` // requireApproval | deny | undecided
	// Policy is the deciding policy: the deny, or the first requireApproval; for undecided,
	// the first policy selecting the resource whose rule reads the plan.
	Policy  string `json:"policy"`
	Message string `json:"message,omitempty"` // none for a pull request from a fork
	// Requires says, per requireApproval policy that holds, what it asks for: "1 approval
	// from group dba (policy prod-destroy-needs-dba)"; none for a pull request from a fork.
	Requires []string `json:"requires,omitempty"`
}

// Undecided is the Decision of a gate that depends on the plan made after merge: a policy
// selecting the resource reads the plan, and the preview has none (a delete, whose plan
// previews do not make; a plan skipped, failed or timed out).
const Undecided = "undecided"

// Text is the gate in one line: "needs 1 approval from group dba (policy P)", "denied by
// policy P: MESSAGE" or "policy P reads the plan, which this preview has not got: decided
// after merge".
func (g *Gate) Text() string {
	switch {
	case g.Decision == Undecided:
		return "policy " + g.Policy + " reads the plan, which this preview has not got: decided after merge"
	case g.Decision == "deny" && g.Message == "":
		return "denied by policy " + g.Policy
	case g.Decision == "deny":
		return "denied by policy " + g.Policy + ": " + g.Message
	case len(g.Requires) == 0:
		return "needs approval (policy " + g.Policy + ")"
	}
	return "needs " + strings.Join(g.Requires, " and ")
}

// Plan is what the resource's action said it would do.
type Plan struct {
	Status  string `json:"status"` // planned | no-plan | error | timeout | skipped
	Changes bool   `json:"changes"`
	Summary string `json:"summary,omitempty"`
	Text    string `json:"text,omitempty"` // bounded
	Error   string `json:"error,omitempty"`
}

// Error is one validation problem, as file:line: path: message.
type Error struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
	// Origin is the ResourceSet input or the rendering kustomization (manifest.ValidationError.Origin).
	Origin string `json:"origin,omitempty"`
}
