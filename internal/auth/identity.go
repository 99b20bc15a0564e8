// Package auth says who a request comes from and what it may do (DESIGN §9, Authentication
// and authorization). Authentication (bearer tokens, OpenID Connect sessions, anonymous
// access) turns a request into an Identity, which the server puts in the request's context;
// authorization is the pure decision Identity.Can, and Identity.Sees for namespaces.
package auth

import (
	"context"
	"slices"

	"github.com/trueup-dev/trueup/internal/policy"
)

// Role is what an identity may do. Each role includes the ones before it.
type Role string

const (
	// Viewer reads resources, types, sources, events, history and the watch stream of its
	// namespaces.
	Viewer Role = "viewer"
	// Operator is a viewer that may also run operator commands (reconcile, sync, suspend,
	// resume) in its namespaces.
	Operator Role = "operator"
	// Admin may do everything, including replicas and metrics, in every namespace it is given
	// (normally "*").
	Admin Role = "admin"
)

// rank orders roles; 0 is no role.
func (r Role) rank() int {
	switch r {
	case Viewer:
		return 1
	case Operator:
		return 2
	case Admin:
		return 3
	}
	return 0
}

// Valid reports whether r is one of the three roles.
func (r Role) Valid() bool { return r.rank() > 0 }

// AllNamespaces in Identity.Namespaces grants every namespace.
const AllNamespaces = "*"

// Identity is who a request comes from.
type Identity struct {
	// Kind is "token", "user" (an OpenID Connect session), or "anonymous".
	Kind string
	// Name is the token's name, the user's subject or email, or "anonymous"; it is what
	// events and history record as the actor.
	Name string
	Role Role
	// Namespaces the identity may see and act in; "*" is every namespace.
	Namespaces []string
	// Email is a user's email claim when the provider does not say it is unverified, and
	// Groups are a user's groups that auth.oidc.roles maps: what policies' approvals.from
	// and notAuthor read. Tokens have neither.
	Email  string
	Groups []string
}

// Approver is who the identity is to policies deciding approvals: a token by its name, a
// user by its name, email and groups. Anyone else is neither, and may approve nothing.
func (i Identity) Approver() policy.Approver {
	switch i.Kind {
	case "token":
		return policy.Approver{Token: i.Name}
	case "user":
		return policy.Approver{User: i.Name, Email: i.Email, Groups: slices.Clone(i.Groups)}
	}
	return policy.Approver{}
}

// Actor is how events and history name the identity: "token:ci-bot", "user:ada@example.com",
// "anonymous".
func (i Identity) Actor() string {
	if i.Kind == "" || i.Kind == "anonymous" {
		return "anonymous"
	}
	return i.Kind + ":" + i.Name
}

// Action is something a request asks to do.
type Action string

const (
	Read       Action = "read"    // viewer
	Operate    Action = "operate" // operator: reconcile, sync, suspend, resume
	Administer Action = "admin"   // admin: replicas, metrics
)

// needs is the least role an action requires.
func (a Action) needs() Role {
	switch a {
	case Read:
		return Viewer
	case Operate:
		return Operator
	}
	return Admin
}

// Sees reports whether the identity may see namespace ns.
func (i Identity) Sees(ns string) bool {
	if !i.Role.Valid() {
		return false
	}
	return slices.Contains(i.Namespaces, AllNamespaces) || slices.Contains(i.Namespaces, ns)
}

// AllVisible reports whether the identity sees every namespace (no filter needed).
func (i Identity) AllVisible() bool {
	return i.Role.Valid() && slices.Contains(i.Namespaces, AllNamespaces)
}

// Can reports whether the identity may do action in namespace ns ("" for actions that
// concern no namespace, such as replicas and metrics, which need admin over every namespace).
func (i Identity) Can(action Action, ns string) bool {
	if i.Role.rank() < action.needs().rank() {
		return false
	}
	if ns == "" {
		return i.AllVisible() || action != Administer
	}
	return i.Sees(ns)
}

type ctxKey struct{}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// FromContext returns the identity the server put in ctx. Without one (no auth middleware
// ran: tests of inner handlers, the CLI's own in-process use) it reports false.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(ctxKey{}).(Identity)
	return id, ok
}
