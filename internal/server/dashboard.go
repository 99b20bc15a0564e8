package server

import (
	"embed"
	"html/template"
	"net/http"

	"github.com/trueup-dev/trueup/internal/store"
)

//go:embed templates/*.html
var templates embed.FS

var pageTmpl = template.Must(template.New("").Funcs(template.FuncMap{
	"short": func(s string) string {
		if len(s) > 12 {
			return s[:12]
		}
		return s
	},
}).ParseFS(templates, "templates/*.html"))

type overview struct {
	Sources   []store.Source
	Resources []store.Resource
	Counts    map[string]int
	Phases    []string
	More      bool
}

// dashboard renders the overview: sources with their revision and errors, and resources with
// their phase. It is server-rendered and works without JavaScript.
func (s *Server) dashboard(w http.ResponseWriter, r *http.Request) {
	srcs, err := s.store.ListSources(r.Context())
	if err != nil {
		http.Error(w, "database unavailable", http.StatusServiceUnavailable)
		return
	}
	res, next, err := s.store.ListResources(r.Context(), store.ResourceFilter{Limit: 500, Phase: r.URL.Query().Get("phase")})
	if err != nil {
		http.Error(w, "database unavailable", http.StatusServiceUnavailable)
		return
	}
	o := overview{Sources: srcs, Resources: res, Counts: map[string]int{}, More: next != "",
		Phases: []string{"Pending", "Reconciling", "Ready", "Failed", "Deleting"}}
	for _, x := range res {
		o.Counts[x.Status.Phase]++
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'")
	if err := pageTmpl.ExecuteTemplate(w, "overview.html", o); err != nil {
		s.log.Error("render dashboard", "err", err)
	}
}
