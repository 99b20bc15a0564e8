package store

import (
	"encoding/json"
	"fmt"

	"github.com/trueup-dev/trueup/internal/policy"
)

// The JSON the store writes into jsonb columns of its own. The names are the storage format
// (rows written by every earlier version read with them), so they are spelled here, apart
// from the row types, which carry no JSON names: the API's are package wire's.

// sourceErrorJSON is one entry of sources.errors.
type sourceErrorJSON struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
	Origin  string `json:"origin,omitempty"`
}

// pruneJSON is sources.prune_refused_under: the prune settings a standing refusal was made
// under.
type pruneJSON struct {
	Enabled     bool    `json:"enabled"`
	MaxFraction float64 `json:"maxFraction"`
	AllowEmpty  bool    `json:"allowEmpty"`
}

// encodeSourceErrors spells errs for sources.errors ([] for none).
func encodeSourceErrors(errs []SourceError) []byte {
	out := make([]sourceErrorJSON, len(errs))
	for i, e := range errs {
		out[i] = sourceErrorJSON(e)
	}
	b, _ := json.Marshal(out) // strings and numbers only: it cannot fail
	return b
}

// decodeSourceErrors reads sources.errors; a JSON null stays a nil list.
func decodeSourceErrors(b []byte) ([]SourceError, error) {
	var in []sourceErrorJSON
	if err := json.Unmarshal(b, &in); err != nil || in == nil {
		return nil, err
	}
	out := make([]SourceError, len(in))
	for i, e := range in {
		out[i] = SourceError(e)
	}
	return out, nil
}

// encodePrune spells p for sources.prune_refused_under.
func encodePrune(p SourcePrune) []byte {
	b, _ := json.Marshal(pruneJSON(p)) // a bool, a float and a bool: it cannot fail
	return b
}

// decodePrune reads sources.prune_refused_under.
func decodePrune(b []byte) (SourcePrune, error) {
	var p pruneJSON
	err := json.Unmarshal(b, &p)
	return SourcePrune(p), err
}

// The jsonb shapes of approval_requests.plan, approval_requests.requirements and
// approvals.approver: the store's own encoding (the exported types carry no JSON tags).
type (
	planJSON struct {
		Available bool   `json:"available"`
		Changes   bool   `json:"changes"`
		Counted   bool   `json:"counted"`
		Add       int    `json:"add"`
		Change    int    `json:"change"`
		Destroy   int    `json:"destroy"`
		Replace   int    `json:"replace"`
		Summary   string `json:"summary"`
		Text      string `json:"text"`
	}
	requirementJSON struct {
		Policy    string          `json:"policy"`
		Count     int             `json:"count"`
		From      []principalJSON `json:"from"`
		NotAuthor bool            `json:"notAuthor"`
	}
	principalJSON struct {
		Group string `json:"group,omitempty"`
		Token string `json:"token,omitempty"`
	}
	approverJSON struct {
		Token  string   `json:"token,omitempty"`
		User   string   `json:"user,omitempty"`
		Email  string   `json:"email,omitempty"`
		Groups []string `json:"groups,omitempty"`
	}
)

func encodeApprovalPlan(p ApprovalPlan) ([]byte, error) {
	return json.Marshal(planJSON(p))
}

func decodeApprovalPlan(b []byte) (ApprovalPlan, error) {
	var p planJSON
	if err := json.Unmarshal(b, &p); err != nil {
		return ApprovalPlan{}, fmt.Errorf("approval plan: %w", err)
	}
	return ApprovalPlan(p), nil
}

func encodeRequirements(rs []policy.Requirement) ([]byte, error) {
	out := make([]requirementJSON, len(rs))
	for i, r := range rs {
		out[i] = requirementJSON{Policy: r.Policy, Count: r.Count, NotAuthor: r.NotAuthor, From: make([]principalJSON, len(r.From))}
		for j, p := range r.From {
			out[i].From[j] = principalJSON(p)
		}
	}
	return json.Marshal(out)
}

func decodeRequirements(b []byte) ([]policy.Requirement, error) {
	var in []requirementJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("approval requirements: %w", err)
	}
	out := make([]policy.Requirement, len(in))
	for i, r := range in {
		out[i] = policy.Requirement{Policy: r.Policy, Approvals: policy.Approvals{Count: r.Count, NotAuthor: r.NotAuthor,
			From: make([]policy.Principal, len(r.From))}}
		for j, p := range r.From {
			out[i].From[j] = policy.Principal(p)
		}
	}
	return out, nil
}

func encodeApprover(a policy.Approver) ([]byte, error) { return json.Marshal(approverJSON(a)) }

func decodeApprover(b []byte) (policy.Approver, error) {
	var a approverJSON
	if err := json.Unmarshal(b, &a); err != nil {
		return policy.Approver{}, fmt.Errorf("approver: %w", err)
	}
	return policy.Approver(a), nil
}
