package server

import (
	"net/http"

	"github.com/trueup-dev/trueup/internal/auth"
	"github.com/trueup-dev/trueup/internal/store"
)

// Authorization (DESIGN §9): what a caller may see is a store.Scope, passed to every list,
// count and feed, so what is out of scope is filtered by the query itself. A single resource
// or source out of scope is answered exactly like a missing one (404, same message), never
// 403: a 403 would tell the caller that the name exists. Only what names no resource —
// replicas and metrics, which need admin over every namespace — answers 403.

// scopeOf is what identity id may see: every namespace, some, or (no valid role) none.
func scopeOf(id auth.Identity) store.Scope {
	switch {
	case !id.Role.Valid():
		return store.Scope{}
	case id.AllVisible():
		return store.Everything
	}
	return store.InNamespaces(id.Namespaces...)
}

// scope is what the request's caller may see.
func scope(r *http.Request) store.Scope { return scopeOf(identity(r)) }

// adminOnly answers 403 to callers who are not admin over every namespace.
func adminOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !identity(r).Can(auth.Administer, "") {
			writeError(w, http.StatusForbidden, "this needs the admin role over every namespace")
			return
		}
		h.ServeHTTP(w, r)
	})
}
