package server

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/store"
)

// A ResourceSet's page lists its members through the resources list with the set's label
// selector, paged as the resources page is.

// resourceSetPath is the dashboard page of a ResourceSet.
func resourceSetPath(namespace, name string) string {
	return "/resourcesets/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
}

// setSelector selects the members of the ResourceSet name (in the set's namespace).
func setSelector(name string) string { return manifest.LabelResourceSet + "=" + name }

type resourceSetData struct {
	Set        store.ResourceSet
	SourceLink string
	FileURL    string
	Rev        revision
	Phases     []phaseTotal  // non-zero only, linked to the resources page
	Items      []resourceRow // the page's members
	All        string        // the resources page listing every member
	Next       string
	First      string
}

// resourceSetPage answers GET /resourcesets/{namespace}/{name}: where the set is declared,
// its counts by phase and a page of its members.
func (s *Server) resourceSetPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := pageContext(r)
	defer cancel()
	sc := scope(r)
	rs, err := s.store.GetResourceSet(ctx, sc, r.PathValue("namespace"), r.PathValue("name"))
	if s.pageFailed(w, r, err) {
		return
	}
	repoURL := ""
	if src, err := s.store.GetSource(ctx, rs.Source); err == nil {
		repoURL = src.URL
	} else if !errors.Is(err, store.ErrNotFound) {
		s.pageFailed(w, r, err)
		return
	}
	filter := []string{"namespace", rs.Namespace, "label", setSelector(rs.Name)}
	d := resourceSetData{Set: rs, SourceLink: sourcePath(rs.Source), Rev: makeRevision(repoURL, rs.Revision),
		FileURL: fileLink(repoURL, rs.Revision, rs.Path, rs.Line), All: listPath(filter...)}
	for _, pt := range phaseTotals(rs.Phases, filter...) {
		if pt.Count > 0 {
			d.Phases = append(d.Phases, pt)
		}
	}
	f := store.SummaryFilter{Namespace: rs.Namespace, LabelSelector: setSelector(rs.Name), Continue: r.URL.Query().Get("continue"), Limit: 100}
	items, next, err := s.store.ListResourceSummaries(ctx, sc, f)
	if s.pageFailed(w, r, err) {
		return
	}
	for _, it := range items {
		d.Items = append(d.Items, makeRow(it))
	}
	self := resourceSetPath(rs.Namespace, rs.Name)
	if next != "" {
		d.Next = self + "?" + url.Values{"continue": {next}}.Encode()
	}
	if f.Continue != "" {
		d.First = self
	}
	s.render(w, r, http.StatusOK, "resourceset.html", layout{Title: "ResourceSet " + rs.Namespace + "/" + rs.Name, Nav: "resources",
		Watch: "*", WatchURL: "/api/v1/watch?" + url.Values{"namespace": {rs.Namespace}}.Encode(), Page: d})
}

// sourceResourceSets are a source's ResourceSets, linked to their pages, for the source's page.
func sourceResourceSets(sets []store.ResourceSet) []setLink {
	out := make([]setLink, 0, len(sets))
	for _, rs := range sets {
		out = append(out, setLink{Set: rs, Link: resourceSetPath(rs.Namespace, rs.Name)})
	}
	return out
}

type setLink struct {
	Set  store.ResourceSet
	Link string
}
