package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/internal/auth"
	"github.com/trueup-dev/trueup/internal/plural"
	"github.com/trueup-dev/trueup/internal/store"
)

// The read-only dashboard (DESIGN §9, GET /): server-rendered pages that work without
// JavaScript, with one small embedded script that follows /api/v1/watch and refreshes what
// changed in place. Everything is escaped by html/template; the Content-Security-Policy allows
// only this server's own script and stylesheet.

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// contentSecurityPolicy forbids inline script and style, and anything from elsewhere.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// pageTimeout bounds the queries of one page: a stuck database shows an error, not a spinner.
const pageTimeout = 10 * time.Second

// assetVersion changes with the embedded files, so browsers may cache them for long.
var assetVersion = func() string {
	h := sha256.New()
	_ = fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := staticFS.ReadFile(p)
			h.Write([]byte(p))
			h.Write(b)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
}()

var pages = parsePages("overview.html", "resources.html", "resource.html", "sources.html", "source.html", "preview.html", "resourceset.html", "notifications.html", "error.html", "confirm.html")

func parsePages(names ...string) map[string]*template.Template {
	base := template.Must(template.New("").Funcs(template.FuncMap{
		"phaseClass":  phaseClass,
		"phaseIcon":   phaseIcon,
		"condClass":   condClass,
		"resultClass": resultClass,
		"ago":         func(t any) string { return whenOf(t, func(t time.Time) string { return relTime(t, time.Now()) }) },
		"utc": func(t any) string {
			return whenOf(t, func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") })
		},
		"iso":         func(t any) string { return whenOf(t, func(t time.Time) string { return t.UTC().Format(time.RFC3339) }) },
		"hasTime":     func(t any) bool { return whenOf(t, func(time.Time) string { return "y" }) != "" },
		"resPath":     resourcePath,
		"srcPath":     sourcePath,
		"setPath":     resourceSetPath,
		"key":         watchKey,
		"list":        listPath,
		"firstLine":   firstLine,
		"duration":    duration,
		"asset":       func(name string) string { return "/static/" + name + "?v=" + assetVersion },
		"plural":      plural.Word,
		"configState": configState,
		// A trace id's first 8 hex digits, as trace viewers show it; the title holds it whole.
		"shortTrace": func(id string) string { return id[:min(8, len(id))] },
	}).ParseFS(templateFS, "templates/layout.html", "templates/partials.html", "templates/operate.html"))
	out := make(map[string]*template.Template, len(names))
	for _, n := range names {
		out[n] = template.Must(template.Must(base.Clone()).ParseFS(templateFS, "templates/"+n))
	}
	return out
}

// whenOf applies f to a time or a non-nil *time.Time; zero and nil give "".
func whenOf(v any, f func(time.Time) string) string {
	switch t := v.(type) {
	case time.Time:
		if !t.IsZero() {
			return f(t)
		}
	case *time.Time:
		if t != nil && !t.IsZero() {
			return f(*t)
		}
	}
	return ""
}

// dashboardRoutes registers the pages and their static files.
func (s *Server) dashboardRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /{$}", s.overviewPage)
	m.HandleFunc("GET /resources", s.resourcesPage)
	m.HandleFunc("GET /resources/{namespace}/{kind}/{name}", s.resourcePage)
	m.HandleFunc("GET /resourcesets/{namespace}/{name}", s.resourceSetPage)
	m.HandleFunc("GET /sources", s.sourcesPage)
	m.HandleFunc("GET /sources/{name}", s.sourcePage)
	m.HandleFunc("GET /sources/{name}/previews/{number}", s.previewPage)
	m.HandleFunc("GET /notifications", s.notificationsPage)
	m.HandleFunc("GET /static/{file}", serveStatic)
	s.operateRoutes(m)
}

func serveStatic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	b, err := staticFS.ReadFile("static/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	switch path.Ext(name) {
	case ".css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case ".js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case ".svg":
		w.Header().Set("Content-Type", "image/svg+xml")
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.URL.Query().Get("v") == assetVersion {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
}

// layout is what every page's frame needs; Page is the page's own data.
type layout struct {
	Title string
	Nav   string // overview | resources | sources | notifications
	Now   time.Time
	Self  string // this page's address, for the refresh link
	// Watch says which changes refresh this page: "*" for any, "resource:KEY", "source:NAME";
	// WatchURL is the stream that carries them ("": the whole feed).
	Watch    string
	WatchURL string
	Page     any
	// User is the signed-in user's name (an OpenID Connect session), shown with a sign-out
	// button that posts CSRF; LoginURL offers signing in to everyone else.
	User, CSRF, LoginURL string
	// Admin: the caller is admin over every namespace (the notifications page is theirs).
	Admin bool
	// Operator: the caller may run operator commands in some namespace, so pages show them
	// buttons and the footer does not call the dashboard read-only.
	Operator bool
}

// render writes a page with the dashboard's security headers.
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name string, l layout) {
	l.Now = time.Now()
	if l.Self == "" {
		l.Self = r.URL.RequestURI()
	}
	if l.WatchURL == "" {
		l.WatchURL = "/api/v1/watch"
	}
	if id := identity(r); id.Kind == "user" && s.opts.CSRFToken != nil {
		l.User, l.CSRF = id.Name, s.opts.CSRFToken(r)
	}
	l.LoginURL = s.opts.LoginURL
	l.Admin = identity(r).Can(auth.Administer, "")
	l.Operator = identity(r).Can(auth.Operate, "")
	var buf bytes.Buffer
	if err := pages[name].ExecuteTemplate(&buf, "layout", l); err != nil {
		s.log.Error("render dashboard page", "page", name, "err", err)
		code = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString("internal error rendering the page\n")
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

type errorPage struct {
	Code    int
	Heading string
	Detail  string
}

// pageFailed renders err as an HTML error page and reports whether there was one.
func (s *Server) pageFailed(w http.ResponseWriter, r *http.Request, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, store.ErrNotFound):
		s.errorPage(w, r, http.StatusNotFound, "Not found", strings.TrimSuffix(err.Error(), ": "+store.ErrNotFound.Error())+" does not exist.")
	case errors.Is(err, store.ErrBadRequest):
		s.errorPage(w, r, http.StatusBadRequest, "Bad request", err.Error())
	default:
		s.log.Error("dashboard query failed", "path", r.URL.Path, "err", err)
		s.errorPage(w, r, http.StatusServiceUnavailable, "Database unavailable",
			"trueup could not read its PostgreSQL database. Reconciling may have stopped too; check the replicas' logs and /readyz.")
	}
	return true
}

func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, code int, heading, detail string) {
	s.render(w, r, code, "error.html", layout{Title: heading, Page: errorPage{Code: code, Heading: heading, Detail: detail}})
}

func pageContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), pageTimeout)
}
