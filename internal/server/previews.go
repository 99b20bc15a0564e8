package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/trueup-dev/trueup/internal/previewresult"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// Pull-request previews (DESIGN §4, Previews) as the API serves them: GET
// /api/v1/sources/{name}/previews lists a source's previews with their counts, GET
// …/previews/{number} shows one with its result. A source the caller does not see answers
// 404 like a missing one (authz.go); a caller who sees some namespaces only gets the changes
// in those namespaces, the others counted in hiddenChanges: a change's diff is a
// resource's spec.

// maxPreviewList bounds a list of previews.
const maxPreviewList = 1000

func makePreviewJSON(p store.Preview) wire.Preview {
	return wire.Preview{Source: p.Source, Number: p.Number, Provider: p.Provider, Title: p.Title, URL: p.URL,
		HeadSHA: p.HeadSHA, BaseRevision: p.BaseRevision, State: p.State, Message: p.Message, CommentURL: p.CommentURL,
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

// decodeCounts reads the counts of a stored result ({"counts": …}; nil when there are none).
func decodeCounts(raw json.RawMessage) (*previewresult.Counts, error) {
	var v struct {
		Counts *previewresult.Counts `json:"counts"`
	}
	if len(raw) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return v.Counts, nil
}

// sourceSeen answers ErrNotFound, as for a missing source, when sc does not see name.
func (s *Server) sourceSeen(ctx context.Context, sc store.Scope, name string) error {
	ok, err := s.store.SourceVisible(ctx, sc, name)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("source %s: %w", name, store.ErrNotFound)
	}
	return nil
}

// previewsOf lists a source's previews, most recently updated first, with their counts.
func (s *Server) previewsOf(ctx context.Context, sc store.Scope, source string, limit int) ([]wire.Preview, error) {
	if err := s.sourceSeen(ctx, sc, source); err != nil {
		return nil, err
	}
	return s.readPreviews(ctx, source, limit)
}

// readPreviews is previewsOf for a source the caller is known to see.
func (s *Server) readPreviews(ctx context.Context, source string, limit int) ([]wire.Preview, error) {
	ps, err := s.store.ListPreviews(ctx, source, limit)
	if err != nil {
		return nil, err
	}
	out := make([]wire.Preview, len(ps))
	for i, p := range ps {
		out[i] = makePreviewJSON(p)
		if out[i].Counts, err = decodeCounts(p.Result); err != nil {
			s.log.Warn("unreadable preview result", "source", source, "number", p.Number, "err", err)
		}
	}
	return out, nil
}

// previewOf returns one preview with its result, the changes out of sc left out.
func (s *Server) previewOf(ctx context.Context, sc store.Scope, source string, number int) (wire.Preview, error) {
	if err := s.sourceSeen(ctx, sc, source); err != nil {
		return wire.Preview{}, err
	}
	return s.readPreview(ctx, sc, source, number)
}

// readPreview is previewOf for a source the caller is known to see.
func (s *Server) readPreview(ctx context.Context, sc store.Scope, source string, number int) (wire.Preview, error) {
	p, err := s.store.GetPreview(ctx, source, number)
	if err != nil {
		return wire.Preview{}, fmt.Errorf("preview %s#%d: %w", source, number, err)
	}
	out := makePreviewJSON(p)
	counts, err := decodeCounts(p.Result)
	if err != nil || counts == nil {
		if err != nil {
			s.log.Warn("unreadable preview result", "source", source, "number", number, "err", err)
		}
		return out, nil
	}
	var res previewresult.Result
	if err := json.Unmarshal(p.Result, &res); err != nil {
		s.log.Warn("unreadable preview result", "source", source, "number", number, "err", err)
		return out, nil
	}
	res.Changes, res.Errors = nonNil(res.Changes), nonNil(res.Errors)
	if !sc.All() {
		seen := res.Changes[:0:0]
		for _, c := range res.Changes {
			if sc.Contains(c.Namespace) {
				seen = append(seen, c)
			}
		}
		out.HiddenChanges = len(res.Changes) - len(seen)
		res.Changes = seen
		res.Warnings, res.WarningNamespaces, out.HiddenWarnings = visibleWarnings(sc, res.Warnings, res.WarningNamespaces)
	}
	out.Counts, out.Result = &res.Counts, &res
	return out, nil
}

// visibleWarnings keeps the warnings sc may read: those about the whole revision and those
// about resources of namespaces sc contains. A warning of unknown namespace (a result stored
// before warnings had one) is hidden.
func visibleWarnings(sc store.Scope, ws, nss []string) (kept, keptNS []string, hidden int) {
	for i, w := range ws {
		if i >= len(nss) || (nss[i] != "" && !sc.Contains(nss[i])) {
			hidden++
			continue
		}
		kept, keptNS = append(kept, w), append(keptNS, nss[i])
	}
	return kept, keptNS, hidden
}

// queryLimit returns the request's ?limit=N, def when it has none; it answers 400 and returns
// false unless N is a number from 1 to most.
func queryLimit(w http.ResponseWriter, r *http.Request, def, most int) (int, bool) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("limit must be a number from 1 to %d", most))
		return 0, false
	}
	return n, true
}

// listPreviews answers GET /api/v1/sources/{name}/previews[?limit=N].
func (s *Server) listPreviews(w http.ResponseWriter, r *http.Request) {
	limit, ok := queryLimit(w, r, 0, maxPreviewList)
	if !ok {
		return
	}
	items, err := s.previewsOf(r.Context(), scope(r), r.PathValue("name"), limit)
	if s.fail(w, err) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

// getPreview answers GET /api/v1/sources/{name}/previews/{number}.
func (s *Server) getPreview(w http.ResponseWriter, r *http.Request) {
	n, ok := previewNumber(r.PathValue("number"))
	if !ok {
		writeError(w, http.StatusBadRequest, "the pull request number must be a positive integer")
		return
	}
	p, err := s.previewOf(r.Context(), scope(r), r.PathValue("name"), n)
	if s.fail(w, err) {
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// previewNumber reads a pull request number: a positive integer within the column's range.
func previewNumber(v string) (int, bool) {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 1 {
		return 0, false
	}
	return int(n), true
}
