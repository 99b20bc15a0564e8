package server

import (
	"net/http"

	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// ResourceSets (kind ResourceSet, group trueup.dev) are read like resources: a caller sees
// the sets of its namespaces, and a set out of scope answers 404 like a missing one. Their
// members are listed by GET /api/v1/resources with the set's label selector.

func (s *Server) resourceSetRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /api/v1/resourcesets", s.listResourceSets)
	m.HandleFunc("GET /api/v1/resourcesets/{namespace}/{name}", s.getResourceSet)
}

func resourceSetWire(rs store.ResourceSet) wire.ResourceSet { return wire.ResourceSet(rs) }

func (s *Server) listResourceSets(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	items, err := s.store.ListResourceSets(r.Context(), scope(r), store.ResourceSetFilter{Namespace: q.Get("namespace"), Source: q.Get("source")})
	if s.fail(w, err) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": wireAll(items, resourceSetWire)})
}

func (s *Server) getResourceSet(w http.ResponseWriter, r *http.Request) {
	rs, err := s.store.GetResourceSet(r.Context(), scope(r), r.PathValue("namespace"), r.PathValue("name"))
	if s.fail(w, err) {
		return
	}
	writeJSON(w, http.StatusOK, resourceSetWire(rs))
}
