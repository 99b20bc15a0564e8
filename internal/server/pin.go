package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// Pinning a source (an incident's known-good revision, without a push): pin and unpin need
// operator rights in every namespace of the source, as a sync or a suspension; its revisions
// are listed to whoever sees it.

// maxRevisionList bounds GET /api/v1/sources/{name}/revisions?limit=N.
const maxRevisionList = 1000

func (s *Server) pinRoutes(m *http.ServeMux) {
	m.HandleFunc("POST /api/v1/sources/{name}/pin", s.pinSource)
	m.HandleFunc("POST /api/v1/sources/{name}/unpin", s.unpinSource)
	m.HandleFunc("GET /api/v1/sources/{name}/revisions", s.sourceRevisions)
}

func pinWire(p *store.SourcePin) *wire.SourcePin {
	if p == nil {
		return nil
	}
	w := wire.SourcePin(*p)
	return &w
}

// pinSource pins a source at a revision of its history; its holder applies it at once. The
// caller needs operator rights in the source's namespaces and in the revision's.
func (s *Server) pinSource(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if !s.maySourceOperate(w, r, name) {
		return
	}
	body, err := s.commandBody(r, true)
	revision, reason := body.Revision, body.Reason
	switch {
	case err != nil:
		writeError(w, http.StatusBadRequest, err.Error())
		return
	case revision == "":
		writeError(w, http.StatusBadRequest, `revision is required: {"revision": "...", "reason": "..."}`)
		return
	case reason == "":
		writeError(w, http.StatusBadRequest, `reason is required: {"revision": "...", "reason": "..."}`)
		return
	}
	// The pinned revision may bring back resources in namespaces the source has none in today.
	revision, nss, err := s.store.PinNamespaces(r.Context(), name, revision)
	if errors.Is(err, store.ErrAmbiguous) {
		writeError(w, http.StatusConflict, err.Error())
		return
	}
	if s.fail(w, err) {
		return
	}
	if sourceAccess(identity(r), nss) != accessAllowed {
		writeError(w, http.StatusForbidden, "the operator role is needed in every namespace of source "+name+" and of revision "+revision)
		return
	}
	actor := identity(r).Actor()
	pin, err := s.store.PinSource(r.Context(), name, revision, actor, reason)
	if errors.Is(err, store.ErrAmbiguous) {
		writeError(w, http.StatusConflict, err.Error())
		return
	}
	if s.fail(w, err) {
		return
	}
	s.log.Warn("source pinned", "source", name, "revision", pin.Revision, "actor", actor)
	writeJSON(w, http.StatusOK, pinWire(&pin))
}

// unpinSource unpins a source; its holder applies the head at once.
func (s *Server) unpinSource(w http.ResponseWriter, r *http.Request) {
	s.sourceCommand("unpin", "unpinned", func(ctx context.Context, name, actor, reason string) error {
		return s.store.UnpinSource(ctx, name, actor, reason)
	})(w, r)
}

// sourceRevisions answers GET /api/v1/sources/{name}/revisions[?limit=N]: the revisions the
// source applied, the last applied first.
func (s *Server) sourceRevisions(w http.ResponseWriter, r *http.Request) {
	limit, ok := queryLimit(w, r, store.KeptRevisions, maxRevisionList)
	if !ok {
		return
	}
	src, err := s.store.GetSourceIn(r.Context(), scope(r), r.PathValue("name"))
	if s.fail(w, err) {
		return
	}
	revs, err := s.store.SourceHistory(r.Context(), src.Name, limit)
	if s.fail(w, err) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": nonNil(wireAll(revs, func(v store.SourceRevision) wire.SourceRevision { return wire.SourceRevision(v) }))})
}
