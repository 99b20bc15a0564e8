package policy

import (
	"strings"
	"testing"
)

var (
	ada      = Author{Name: "Ada", Email: "ada@example.com"}
	dbaUser  = Approver{User: "sub-1", Email: "bob@example.com", Groups: []string{"dba", "ops"}}
	dbaUser2 = Approver{User: "sub-2", Email: "cy@example.com", Groups: []string{"dba"}}
	adaUser  = Approver{User: "sub-3", Email: "ADA@example.com", Groups: []string{"dba"}}
	devUser  = Approver{User: "sub-4", Email: "dev@example.com", Groups: []string{"dev"}}
	bot      = Approver{Token: "release-bot"}
	other    = Approver{Token: "ci"}
)

func TestRequirementPermits(t *testing.T) {
	t.Parallel()
	req := Requirement{Policy: "p", Approvals: Approvals{Count: 1, From: []Principal{{Group: "dba"}, {Token: "release-bot"}}, NotAuthor: true}}
	open := req
	open.NotAuthor = false
	for _, c := range []struct {
		name   string
		req    Requirement
		a      Approver
		author Author
		want   string // "" permits
	}{
		{"user in group", req, dbaUser, ada, ""},
		{"user not in group", req, devUser, ada, "policy p: user dev@example.com may not approve (it needs 1 approval from group dba or token release-bot, not by the commit's author)"},
		{"token named", req, bot, ada, ""},
		{"token not named", req, other, ada, "policy p: token ci may not approve"},
		{"a group does not name a token", Requirement{Policy: "p", Approvals: Approvals{From: []Principal{{Group: "ci"}}}}, other, ada, "may not approve"},
		{"a token entry does not name a user", Requirement{Policy: "p", Approvals: Approvals{From: []Principal{{Token: "sub-1"}}}}, dbaUser, ada, "may not approve"},
		{"author by email, any case", req, adaUser, ada, "policy p: user ADA@example.com is the commit's author, who may not approve"},
		{"author allowed without notAuthor", open, adaUser, ada, ""},
		{"token named as the author", req, bot, Author{Name: "release-bot", Email: "bot@example.com"}, "is the commit's author"},
		{"token named as the author's email", Requirement{Policy: "p", Approvals: Approvals{From: []Principal{{Token: "bot@example.com"}}, NotAuthor: true}},
			Approver{Token: "bot@example.com"}, Author{Name: "Bot", Email: "Bot@Example.com"}, "is the commit's author"},
		{"unknown author is nobody", req, bot, Author{}, ""},
		{"user with the author's name is not the author", req, Approver{User: "Ada", Groups: []string{"dba"}}, ada, ""},
		{"neither token nor user", req, Approver{Groups: []string{"dba"}}, ada, "neither one token nor one user"},
		{"both token and user", req, Approver{Token: "release-bot", User: "x", Groups: []string{"dba"}}, ada, "neither one token nor one user"},
	} {
		err := c.req.Permits(c.a, c.author)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

func TestRequirementSatisfied(t *testing.T) {
	t.Parallel()
	two := Requirement{Policy: "p", Approvals: Approvals{Count: 2, From: []Principal{{Group: "dba"}, {Token: "release-bot"}}, NotAuthor: true}}
	for _, c := range []struct {
		name      string
		approvals []Approver
		want      bool
	}{
		{"none", nil, false},
		{"one of two", []Approver{dbaUser}, false},
		{"two different", []Approver{dbaUser, bot}, true},
		{"one approver twice counts once", []Approver{dbaUser, dbaUser}, false},
		{"same token twice counts once", []Approver{bot, bot}, false},
		{"two users of the group", []Approver{dbaUser, dbaUser2}, true},
		{"the author does not count", []Approver{dbaUser, adaUser}, false},
		{"someone not named does not count", []Approver{dbaUser, devUser, other}, false},
		{"more than needed", []Approver{dbaUser, dbaUser2, bot}, true},
	} {
		if got := two.Satisfied(c.approvals, ada); got != c.want {
			t.Errorf("%s: Satisfied = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestDecisionApproved(t *testing.T) {
	t.Parallel()
	dba := Requirement{Policy: "dba", Approvals: Approvals{Count: 1, From: []Principal{{Group: "dba"}}}}
	sec := Requirement{Policy: "sec", Approvals: Approvals{Count: 1, From: []Principal{{Token: "release-bot"}}}}
	both := Decision{Action: RequireApproval, Policy: "dba", Approvals: []Requirement{dba, sec}}
	for _, c := range []struct {
		name      string
		d         Decision
		approvals []Approver
		want      bool
		permits   string // Permits(approvals[0]): "" nil
	}{
		{"allow needs none", Decision{Action: Allow}, nil, true, "no approval is needed"},
		{"deny takes none", Decision{Action: Deny, Policy: "d"}, []Approver{dbaUser}, false, "denied by policy d: no approval lets it through"},
		{"each requirement", both, []Approver{dbaUser, bot}, true, ""},
		{"one requirement of two", both, []Approver{dbaUser}, false, ""},
		{"the other one", both, []Approver{bot}, false, ""},
		{"for none", both, []Approver{devUser}, false, "policy dba: user dev@example.com may not approve (it needs 1 approval from group dba)\npolicy sec: user dev@example.com may not approve"},
	} {
		if got := c.d.Approved(c.approvals, ada); got != c.want {
			t.Errorf("%s: Approved = %v, want %v", c.name, got, c.want)
		}
		a := Approver{Token: "x"}
		if len(c.approvals) > 0 {
			a = c.approvals[0]
		}
		err := c.d.Permits(a, ada)
		if (c.permits == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.permits)) {
			t.Errorf("%s: Permits = %v, want %q", c.name, err, c.permits)
		}
	}
}
