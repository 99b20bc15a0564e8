// Package policy owns the policies of the controller config (the `policies` block): their
// shape, their compilation, and the pure decisions made with them. A policy selects resources
// (match: sources, namespaces, kinds, a label selector), tests a CEL rule (when) on the
// resource, its change and its plan, and says what happens then (allow, deny,
// requireApproval). Decide combines the policies that hold for one resource into a Decision;
// Requirement.Satisfied says whether the approvals given meet what a policy asks for. The
// package does no I/O: the caller plans, stores approvals and acts on the decision.
package policy

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/google/cel-go/cel"

	"github.com/trueup-dev/trueup/internal/labelsel"
)

// Policy is one entry of the policies block: which resources it selects, when it holds for
// one of them, and what it decides then. Policies are read in order: the first deny that
// holds wins, then every requireApproval that holds asks for its approvals, else the change is
// allowed.
type Policy struct {
	// Name identifies the policy in decisions and errors (a DNS label: lowercase letters,
	// digits and '-'); unique.
	Name string `yaml:"name"`
	// Match selects the resources the policy is about (every resource without it).
	Match Match `yaml:"match"`
	// When is a CEL expression giving a bool; the policy holds for a selected resource when
	// it is true (empty: for every selected resource). It reads resource (source,
	// apiVersion, kind, namespace, name, labels, annotations), spec and oldSpec (the spec to
	// apply and the applied one, null before the first apply), change (type: create, update,
	// delete or drift; generation, revision, author.name, author.email, paths: the changed
	// field paths), plan (available, changes, counted: whether add, change, destroy and
	// replace are counts, or 0 because the action does not count; add, change, destroy,
	// replace, summary) and now (a timestamp). An error evaluating it (over the cost limit, a missing key) denies
	// the change with the error as the message.
	When string `yaml:"when"`
	// Action is what the policy decides when it holds: allow, deny or requireApproval.
	Action Effect `yaml:"action"`
	// Approvals is who must approve, for action requireApproval (required there, refused
	// with the other actions).
	Approvals *Approvals `yaml:"approvals"`
	// Message is shown with a deny or an approval request (default: one naming the policy
	// and, for requireApproval, the approvals it needs).
	Message string `yaml:"message"`
}

// Match selects resources: every list that is set must contain the resource's value (exact
// names or path.Match globs; kinds compare case-insensitively) and the selector must match
// its labels. An empty list selects every value.
type Match struct {
	Sources    []string `yaml:"sources"`    // the source names the resource comes from
	Namespaces []string `yaml:"namespaces"` // the resource's namespaces
	Kinds      []string `yaml:"kinds"`      // the resource's kinds
	// Selector is a Kubernetes-style label selector ("tier=critical,env in (prod,staging)").
	Selector string `yaml:"selector"`
}

// Approvals is what a requireApproval policy asks for: count approvals, each by a different
// approver named in from. A rejection by an approver these approvals permit refuses the
// change (it stalls) until a new generation, a new plan or the rejection's expiry
// (approvalTTL); a manual reconcile or a reload decides again, with the rejection still
// counted while its approver is permitted.
type Approvals struct {
	// Count is how many different approvers must approve (default 1).
	Count int `yaml:"count"`
	// From lists who may approve: an OpenID Connect group or an API token's name per entry.
	From []Principal `yaml:"from"`
	// NotAuthor refuses the approval of the commit's author: a user whose email claim is the
	// author's e-mail, or a token whose name is the author's name or e-mail. The author is
	// that of the commit the source synced (its head), as change.author: when a pull request
	// is merged with a merge commit, whoever merged it, not the pull request's author. When
	// the author is unknown (a source without commits, such as a folder) it refuses nobody,
	// and the waiting message says so.
	NotAuthor bool `yaml:"notAuthor"`
}

// Principal names who may approve: exactly one of group and token.
type Principal struct {
	Group string `yaml:"group"` // an OpenID Connect group
	Token string `yaml:"token"` // an API token's name
}

// Effect is what a policy decides (the YAML key is action).
type Effect string

// The effects.
const (
	Allow           Effect = "allow"
	Deny            Effect = "deny"
	RequireApproval Effect = "requireApproval"
)

// CostLimit bounds one evaluation of one policy's rule, in cel-go's cost units (about one
// per operation; a comprehension costs per element). A rule over it stops and denies.
const CostLimit = 1_000_000

const maxRuleLength = 4096 // bytes of a rule's source

// Set is a compiled list of policies, safe for concurrent use. The nil Set has no policies.
type Set struct {
	policies []compiled
}

// compiled is one policy ready to evaluate.
type compiled struct {
	Policy
	Matcher
	prg       cel.Program // nil without a rule
	reads     Reads       // what the rule reads of the costly inputs
	costLimit uint64
}

// Matcher is a compiled Match (CompileMatch): policies and change windows select resources
// with it.
type Matcher struct {
	sources, namespaces, kinds []pattern
	selector                   []labelsel.Requirement
}

// CompileMatch compiles m; bad is told of each field that does not compile ("match.kinds[0]",
// "match.selector"), and the Matcher returned then selects as if that entry were absent.
func CompileMatch(m Match, bad func(field, format string, args ...any)) Matcher {
	var c Matcher
	for _, l := range []struct {
		key  string
		in   []string
		out  *[]pattern
		fold bool
	}{{"sources", m.Sources, &c.sources, false}, {"namespaces", m.Namespaces, &c.namespaces, false}, {"kinds", m.Kinds, &c.kinds, true}} {
		for j, v := range l.in {
			pat, err := newPattern(v, l.fold)
			if err != nil {
				bad(fmt.Sprintf("match.%s[%d]", l.key, j), "%v", err)
				continue
			}
			*l.out = append(*l.out, pat)
		}
	}
	if m.Selector != "" {
		var err error
		if c.selector, err = labelsel.Parse(m.Selector); err != nil {
			bad("match.selector", "%v", err)
		}
	}
	return c
}

// Selects reports whether r is selected: every list that is set holds r's value and the
// selector matches its labels.
func (m *Matcher) Selects(r *Resource) bool {
	return matchesAny(m.namespaces, r.Namespace) && matchesAny(m.kinds, r.Kind) && matchesAny(m.sources, r.Source) &&
		(len(m.selector) == 0 || labelsel.Matches(m.selector, r.Labels))
}

// pattern is one entry of a match list.
type pattern struct {
	s    string
	glob bool // s holds glob characters: matched with path.Match
	fold bool // compared case-insensitively (kinds); s is then lowercase when glob
}

func (p pattern) matches(v string) bool {
	switch {
	case !p.glob && p.fold:
		return strings.EqualFold(p.s, v)
	case !p.glob:
		return p.s == v
	case p.fold:
		v = strings.ToLower(v)
	}
	ok, _ := path.Match(p.s, v)
	return ok
}

func matchesAny(pats []pattern, v string) bool {
	if len(pats) == 0 {
		return true
	}
	for _, p := range pats {
		if p.matches(v) {
			return true
		}
	}
	return false
}

// Len is the number of policies.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.policies)
}

// CompileError is a policy that does not compile: which one and which of its fields.
type CompileError struct {
	Index int    // its place in the list
	Name  string // its name as written
	Field string // the key under the policy: "when", "match.selector", ...
	Msg   string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("policies[%d] (%s).%s: %s", e.Index, e.Name, e.Field, e.Msg)
}

var nameRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// Compile checks the policies and compiles their rules once; the errors (each a
// *CompileError) name the policy, the field and, for a rule, its line and column.
func Compile(policies []Policy) (*Set, error) {
	return compile(policies, CostLimit)
}

func compile(policies []Policy, costLimit uint64) (*Set, error) {
	env, err := celEnv()
	if err != nil {
		return nil, fmt.Errorf("policies: cel environment: %w", err)
	}
	s := &Set{policies: make([]compiled, 0, len(policies))}
	var errs []error
	seen := map[string]bool{}
	for i, p := range policies {
		bad := func(field, format string, args ...any) {
			errs = append(errs, &CompileError{Index: i, Name: p.Name, Field: field, Msg: fmt.Sprintf(format, args...)})
		}
		c := compiled{Policy: p, costLimit: costLimit}
		if !nameRe.MatchString(p.Name) {
			bad("name", "%q must be a DNS label (lowercase letters, digits and '-', at most 63)", p.Name)
		} else if seen[p.Name] {
			bad("name", "policy %q declared twice", p.Name)
		}
		seen[p.Name] = true
		c.Matcher = CompileMatch(p.Match, bad)
		switch p.Action {
		case Allow, Deny:
			if p.Approvals != nil {
				bad("approvals", "only a requireApproval policy takes approvals")
			}
		case RequireApproval:
			c.Approvals = checkApprovals(p.Approvals, bad)
		case "":
			bad("action", "required (allow, deny or requireApproval)")
		default:
			bad("action", "%q is not allow, deny or requireApproval", p.Action)
		}
		if p.When != "" {
			c.prg, c.reads, err = compileRule(env, p.When, costLimit)
			if err != nil {
				bad("when", "%v", err)
			}
		}
		s.policies = append(s.policies, c)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

func newPattern(v string, fold bool) (pattern, error) {
	if v == "" {
		return pattern{}, errors.New("must not be empty")
	}
	if _, err := path.Match(v, ""); err != nil {
		return pattern{}, fmt.Errorf("%q is not a valid pattern", v)
	}
	p := pattern{s: v, glob: strings.ContainsAny(v, `*?[\`), fold: fold}
	if p.glob && fold {
		p.s = strings.ToLower(v)
	}
	return p, nil
}

// checkApprovals checks a requireApproval policy's approvals and returns them with their
// defaults.
func checkApprovals(a *Approvals, bad func(field, format string, args ...any)) *Approvals {
	if a == nil {
		bad("approvals", "required for requireApproval (count, from, notAuthor)")
		return nil
	}
	out := *a
	if out.Count == 0 {
		out.Count = 1
	}
	if out.Count < 0 {
		bad("approvals.count", "%d must be positive", a.Count)
	}
	if len(a.From) == 0 {
		bad("approvals.from", "required: the groups ({group: NAME}) and tokens ({token: NAME}) that may approve")
	}
	for j, p := range a.From {
		if (p.Group == "") == (p.Token == "") {
			bad(fmt.Sprintf("approvals.from[%d]", j), "exactly one of group and token is required")
		}
	}
	return &out
}
