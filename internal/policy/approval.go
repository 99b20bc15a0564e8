package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Approver is who gives an approval, as the server authenticated them: exactly one of Token
// and User.
type Approver struct {
	Token  string   // the API token's name, for a caller with a token
	User   string   // the OpenID Connect subject, for a signed-in user
	Email  string   // the user's email claim
	Groups []string // the user's groups
}

// key tells approvers apart: two approvals by one token or one user count once.
func (a Approver) key() string {
	switch {
	case a.Token != "" && a.User == "":
		return "token:" + a.Token
	case a.User != "" && a.Token == "":
		return "user:" + a.User
	}
	return ""
}

// String names the approver as errors show it.
func (a Approver) String() string {
	if a.Token != "" {
		return "token " + a.Token
	}
	if a.Email != "" {
		return "user " + a.Email
	}
	return "user " + a.User
}

// named reports whether from names a: a token by its name, a user by one of its groups.
func named(from []Principal, a Approver) bool {
	for _, p := range from {
		switch {
		case p.Token != "" && a.Token != "" && a.User == "":
			if p.Token == a.Token {
				return true
			}
		case p.Group != "" && a.User != "" && a.Token == "":
			if slices.Contains(a.Groups, p.Group) {
				return true
			}
		}
	}
	return false
}

// IsAuthor reports whether a is the commit's author: a user whose email claim is the
// author's e-mail, or a token whose name is the author's name or e-mail (e-mail addresses
// compare case-insensitively). An unknown author is nobody.
func IsAuthor(a Approver, author Author) bool {
	if author.Email != "" && (strings.EqualFold(a.Email, author.Email) || strings.EqualFold(a.Token, author.Email)) {
		return true
	}
	return author.Name != "" && a.Token != "" && a.Token == author.Name
}

// Permits returns nil when a may approve for r, or why not: not named in r.From, or the
// commit's author when r.NotAuthor.
func (r Requirement) Permits(a Approver, author Author) error {
	if a.key() == "" {
		return errors.New("the approver is neither one token nor one user")
	}
	if !named(r.From, a) {
		return fmt.Errorf("policy %s: %s may not approve (it needs %s)", r.Policy, a, r)
	}
	if r.NotAuthor && IsAuthor(a, author) {
		return fmt.Errorf("policy %s: %s is the commit's author, who may not approve", r.Policy, a)
	}
	return nil
}

// Satisfied reports whether approvals (the ones still valid: for this plan, not expired)
// hold r.Count different approvers that r permits.
func (r Requirement) Satisfied(approvals []Approver, author Author) bool {
	seen := make(map[string]bool, len(approvals))
	for _, a := range approvals {
		if r.Permits(a, author) == nil {
			seen[a.key()] = true
		}
	}
	return len(seen) >= r.Count
}

// Approved reports whether the change may go ahead with approvals: always for Allow, never
// for Deny, and for RequireApproval when every requirement is satisfied.
func (d Decision) Approved(approvals []Approver, author Author) bool {
	switch d.Action {
	case Allow:
		return true
	case RequireApproval:
		for _, r := range d.Approvals {
			if !r.Satisfied(approvals, author) {
				return false
			}
		}
		return true
	}
	return false
}

// Permits returns nil when a's approval counts for at least one of d's requirements, or why
// it counts for none (an approval nobody asked for is refused).
func (d Decision) Permits(a Approver, author Author) error {
	switch d.Action {
	case Allow:
		return errors.New("no approval is needed")
	case Deny:
		return fmt.Errorf("denied by policy %s: no approval lets it through", d.Policy)
	}
	var errs []error
	for _, r := range d.Approvals {
		err := r.Permits(a, author)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
