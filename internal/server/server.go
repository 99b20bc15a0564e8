// Package server owns trueup's HTTP surface (DESIGN §9): health and readiness, the read-only
// JSON API over sources, their pull-request previews, resource types, resources, history and
// events, the dashboard, and the MCP endpoint /mcp (internal/mcp) over that API.
package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trueup-dev/trueup/internal/auth"
	"github.com/trueup-dev/trueup/internal/changewindow"
	"github.com/trueup-dev/trueup/internal/mcp"
	"github.com/trueup-dev/trueup/internal/metrics"
	"github.com/trueup-dev/trueup/internal/redact"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// Options configure the server.
type Options struct {
	Listen  string
	Replica string
	// Metrics is served at /metrics (nil: 404).
	Metrics *metrics.Metrics
	// Webhooks handles POST /hooks/{source} (nil: 404 for every source).
	Webhooks http.Handler
	// ExternalURL is how people reach the dashboard; its host is accepted besides loopback
	// names when Listen is a loopback address (DNS-rebinding protection).
	ExternalURL string
	// Authenticate says who a request comes from (internal/auth). An error is a 401. Nil:
	// every request is anonymous with admin over every namespace (a loopback listen without
	// an auth: section).
	Authenticate func(r *http.Request) (auth.Identity, error)
	// MaxInFlight bounds the API and dashboard requests served at once (0: one per CPU, at
	// least 2; see limits.go).
	MaxInFlight int
	// MaxWatchesPerClient bounds the watch streams one client (identity, or address when
	// anonymous) holds at once (0: 16).
	MaxWatchesPerClient int
	// AuthRoutes serves GET /login, GET /auth/callback and POST /logout (internal/auth; nil:
	// no single sign-on). They are reached without credentials.
	AuthRoutes http.Handler
	// LoginURL is where dashboard pages send a browser that has no credentials (a 302 with
	// ?next=); "": such pages answer 401 like the API.
	LoginURL string
	// CSRFToken is the token of the caller's session that dashboard forms post back as
	// "csrf" (the logout button); nil or "": no session, no logout button.
	CSRFToken func(r *http.Request) string
	// TLSCertFile and TLSKeyFile serve HTTPS; both files are read again when they change.
	TLSCertFile, TLSKeyFile string
	// Reload reads this replica's config file again and applies it, or refuses it
	// (POST /api/v1/admin/reload; nil: 404). LastReload reports the last reload since the
	// start (ok false: none), for the dashboard.
	Reload     func(ctx context.Context) ReloadResult
	LastReload func() (ReloadResult, bool)
	// TraceURL links the trace ids of history rows on the dashboard: {traceId} is replaced
	// by the id ("": ids are shown unlinked).
	TraceURL string
	// Redact holds the controller's secrets, scrubbed from text an operator sends that trueup
	// keeps (an abandon's reason, written to history, events and notifications); nil: kept as
	// sent.
	Redact *redact.Registry
	// ApprovalTTL is how long an approval stays valid (config approvalTTL, read live; nil or
	// 0: the default): votes older are not shown.
	ApprovalTTL func() time.Duration
	// Windows gives the change windows in force (read live; nil: none): a resource's
	// timeline names the window holding it, and an override of a window that does not allow
	// operators is refused.
	Windows func() *changewindow.Set
	// MCP serves the Model Context Protocol at /mcp with these options (nil: 404; mcp.go).
	MCP *mcp.Options
}

// anonymousAdmin is who requests are when no authentication is configured.
var anonymousAdmin = auth.Identity{Kind: "anonymous", Name: "anonymous", Role: auth.Admin, Namespaces: []string{auth.AllNamespaces}}

// identify puts the request's identity in its context (auth.FromContext), or answers 401.
func (s *Server) identify(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := anonymousAdmin
		if s.opts.Authenticate != nil && !strings.HasPrefix(r.URL.Path, "/hooks/") && r.URL.Path != "/healthz" && r.URL.Path != "/readyz" {
			var err error
			if id, err = s.opts.Authenticate(r); err != nil {
				if publicPath(r.URL.Path) {
					// Signing in and out, and the stylesheet of those pages, need no
					// credentials; they get an identity that may do nothing.
					h.ServeHTTP(w, r.WithContext(auth.WithIdentity(r.Context(), auth.Identity{Kind: "anonymous", Name: "anonymous"})))
					return
				}
				if s.opts.LoginURL != "" && r.Method == http.MethodGet && r.Header.Get("Authorization") == "" && dashboardPath(r.URL.Path) {
					w.Header().Set("Cache-Control", "no-store")
					http.Redirect(w, r, s.opts.LoginURL+"?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusFound)
					return
				}
				w.Header().Set("WWW-Authenticate", `Bearer realm="trueup"`)
				writeError(w, http.StatusUnauthorized, err.Error())
				return
			}
		}
		h.ServeHTTP(w, r.WithContext(auth.WithIdentity(r.Context(), id)))
	})
}

// publicPath reports whether a path is served without credentials: the sign-in routes and
// the dashboard's static files.
func publicPath(p string) bool {
	return p == "/login" || p == "/auth/callback" || p == "/logout" || strings.HasPrefix(p, "/static/")
}

// dashboardPath reports whether a path is a dashboard page (a browser navigates to it), not
// the API, the watch stream or metrics, whose clients want a 401 and not a sign-in page.
func dashboardPath(p string) bool {
	return !strings.HasPrefix(p, "/api/") && p != "/metrics" && !strings.HasPrefix(p, "/hooks/") && p != mcpPath
}

// identity is the request's identity (set by identify; anonymous admin when a handler is
// served without it, as inner-handler tests do).
func identity(r *http.Request) auth.Identity {
	if id, ok := auth.FromContext(r.Context()); ok {
		return id
	}
	return anonymousAdmin
}

// Server serves the API of one replica.
type Server struct {
	opts  Options
	store *store.Store
	log   *slog.Logger
	mux   *http.ServeMux
	srv   *http.Server
	done  chan struct{}
	hub   *Hub

	inFlight *limiter // API and dashboard requests running at once
	reads    shared   // identical API reads served at once
	pace     *pacer   // requests a second while the engine has work
	watchers *streams // watch streams per client
}

// New builds the server and its routes.
func New(st *store.Store, opts Options, logger *slog.Logger) *Server {
	s := &Server{opts: opts, store: st, log: logger, mux: http.NewServeMux(), hub: NewHub(st, logger),
		inFlight: newLimiter(cmp.Or(opts.MaxInFlight, defaultMaxInFlight()), queueWait), watchers: &streams{max: cmp.Or(opts.MaxWatchesPerClient, maxWatchesPerClient), n: map[string]int{}}}
	s.pace = newPacer(st.EngineBusy, busyRatePerCPU*runtime.GOMAXPROCS(0), busyRunsPerCPU*runtime.GOMAXPROCS(0), queueWait)
	s.routes()
	return s
}

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	m.HandleFunc("GET /readyz", s.readyz)
	if s.opts.Metrics != nil {
		m.Handle("GET /metrics", adminOnly(s.opts.Metrics.Handler()))
	}
	m.HandleFunc("/hooks/{source}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "webhooks are delivered with POST")
	})
	if s.opts.Webhooks != nil {
		m.Handle("POST /hooks/{source}", s.countWebhooks(s.opts.Webhooks))
	} else {
		m.HandleFunc("POST /hooks/{source}", func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusNotFound, "no webhook is configured for source "+r.PathValue("source"))
		})
	}
	m.HandleFunc("GET /api/v1/sources", s.listSources)
	m.HandleFunc("GET /api/v1/sources/{name}", s.getSource)
	m.HandleFunc("GET /api/v1/sources/{name}/previews", s.listPreviews)
	m.HandleFunc("GET /api/v1/sources/{name}/previews/{number}", s.getPreview)
	m.HandleFunc("GET /api/v1/resourcetypes", s.listTypes)
	m.HandleFunc("GET /api/v1/resourcetypes/{name}", s.getType)
	m.HandleFunc("GET /api/v1/resources", s.listResources)
	m.HandleFunc("GET /api/v1/resources/{namespace}/{kind}/{name}", s.getResource)
	m.HandleFunc("GET /api/v1/resources/{namespace}/{kind}/{name}/history", s.resourceHistory)
	m.HandleFunc("GET /api/v1/resources/{namespace}/{kind}/{name}/timeline", s.resourceTimeline)
	m.HandleFunc("GET /api/v1/resources/{namespace}/{kind}/{name}/events", s.resourceEvents)
	m.HandleFunc("GET /api/v1/events", s.listEvents)
	m.HandleFunc("GET /api/v1/graph", s.graph)
	m.Handle("GET /api/v1/replicas", adminOnly(http.HandlerFunc(s.listReplicas)))
	m.Handle("GET /api/v1/notifications", adminOnly(http.HandlerFunc(s.listNotifications)))
	m.Handle("POST /api/v1/admin/reload", adminOnly(http.HandlerFunc(s.reload)))
	m.Handle("GET /api/v1/watch", s.watchers.wrap(http.HandlerFunc(s.watch)))
	m.HandleFunc("GET /api/v1/openapi.json", s.openapi)
	s.operatorRoutes(m)
	s.approvalRoutes(m)
	s.resourceSetRoutes(m)
	m.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	if s.opts.AuthRoutes != nil {
		// Single sign-on (internal/auth): reached without credentials (publicPath).
		m.Handle("GET /login", s.opts.AuthRoutes)
		m.Handle("GET /auth/callback", s.opts.AuthRoutes)
		m.Handle("POST /logout", s.opts.AuthRoutes)
	}
	s.dashboardRoutes(m)
}

// countWebhooks records each webhook answer in the metrics.
func (s *Server) countWebhooks(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		// Only configured sources become label values: anyone can POST to any path, and an
		// unknown source (404) must not grow the metrics.
		source, code := r.PathValue("source"), rec.code
		if code == 0 {
			code = http.StatusOK
		}
		if code == http.StatusNotFound {
			source = "unknown"
		}
		s.opts.Metrics.Webhook(source, code)
	})
}

// statusRecorder remembers the status code sent (0 until the answer begins).
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes, deadlines).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Handler returns the root handler (for tests with httptest).
func (s *Server) Handler() http.Handler {
	api := s.pace.wrap(s.reads.wrap(s.pace.wrapRuns(s.inFlight.wrap(validInput(withTimeout(s.mux))))))
	return s.recoverer(s.checkHost(s.crossOrigin(s.identify(s.withMCP(api)))))
}

// crossOrigin refuses state-changing requests (POST and the like) that a browser sends from
// another site (Sec-Fetch-Site, or Origin against Host; net/http's CrossOriginProtection):
// without it, any page an operator opens could POST to the API of a trueup that runs without
// auth on loopback (every caller an admin), or ride a session cookie. Requests without those
// headers (the CLI, curl, scripts) pass, and so do the signed webhooks.
func (s *Server) crossOrigin(h http.Handler) http.Handler {
	c := http.NewCrossOriginProtection()
	c.AddInsecureBypassPattern("POST /hooks/{source}")
	if u, err := url.Parse(s.opts.ExternalURL); err == nil && u.Scheme != "" && u.Host != "" {
		_ = c.AddTrustedOrigin(u.Scheme + "://" + u.Host) // behind a proxy that rewrites Host
	}
	c.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if dashboardPath(r.URL.Path) {
			s.errorPage(w, r, http.StatusForbidden, "Request refused",
				"This request came from another site (cross-site request protection). Go back and try again from trueup's own page.")
			return
		}
		writeError(w, http.StatusForbidden, "cross-origin request refused: "+r.Method+" "+r.URL.Path+" may only come from trueup's own pages or from a client that is not a browser")
	}))
	return c.Handler(h)
}

// requestTimeout bounds the queries of one API or dashboard request, so that a flood of
// expensive requests cannot hold the database pool.
const requestTimeout = 10 * time.Second

// withTimeout gives every request but the watch stream and webhooks a deadline.
func withTimeout(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/watch" || strings.HasPrefix(r.URL.Path, "/hooks/") {
			h.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// validInput answers 400 for paths and query values PostgreSQL cannot take (invalid UTF-8,
// NUL), instead of a database error.
func validInput(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := utf8.ValidString(r.URL.Path) && !strings.ContainsRune(r.URL.Path, 0)
		for _, vs := range r.URL.Query() {
			for _, v := range vs {
				ok = ok && utf8.ValidString(v) && !strings.ContainsRune(v, 0)
			}
		}
		if !ok {
			writeError(w, http.StatusBadRequest, "the path or a query parameter is not valid UTF-8 text")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// checkHost refuses requests whose Host is not this server's: a web page could otherwise
// rebind a name to the server's address and read the API from a browser, with the
// browser's own session or from inside the network. It runs on every listen (issue 11):
// allowed are the loopback names, the listen host, and server.externalURL's host. Webhooks
// are authenticated and may arrive through a proxy under any name.
func (s *Server) checkHost(h http.Handler) http.Handler {
	if s.opts.Listen == "" {
		return h // a handler served by its caller (tests with httptest): no listen to protect
	}
	return s.checkHostAddrs(h, localAddrs())
}

// checkHostAddrs is checkHost with the machine's addresses given: they are read once, when
// the server starts.
func (s *Server) checkHostAddrs(h http.Handler, local []netip.Addr) http.Handler {
	names := map[string]bool{"localhost": true}
	addrs := map[netip.Addr]bool{netip.MustParseAddr("127.0.0.1"): true, netip.IPv6Loopback(): true}
	if host, _, err := net.SplitHostPort(s.opts.Listen); err == nil {
		ip, perr := netip.ParseAddr(host)
		switch {
		case host == "" || perr == nil && ip.IsUnspecified():
			// A listen on every address (":8080" too) serves each of the machine's, so their
			// IP literals name this server too: a pod's IP, which Prometheus and the kubelet
			// send as the Host. A rebinding page reaches the server under a name of its own,
			// never under its IP.
			for _, a := range local {
				addrs[plainAddr(a)] = true
			}
			if host != "" {
				addrs[plainAddr(ip)] = true
			}
		case perr == nil:
			addrs[plainAddr(ip)] = true
		default:
			names[strings.ToLower(host)] = true
		}
	}
	if u, err := url.Parse(s.opts.ExternalURL); err == nil && u.Hostname() != "" {
		if ip, err := netip.ParseAddr(u.Hostname()); err == nil {
			addrs[plainAddr(ip)] = true
		} else {
			names[strings.ToLower(u.Hostname())] = true
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.Host
		if hn, _, err := net.SplitHostPort(r.Host); err == nil {
			name = hn
		}
		name = strings.TrimSuffix(strings.ToLower(strings.Trim(name, "[]")), ".")
		ok := names[name]
		if ip, err := netip.ParseAddr(name); err == nil {
			ok = addrs[plainAddr(ip)]
		}
		if !ok && !strings.HasPrefix(r.URL.Path, "/hooks/") {
			writeError(w, http.StatusMisdirectedRequest, "host "+name+" is not served here (set server.externalURL to serve it)")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// plainAddr is an address without its zone and with an IPv4-mapped IPv6 address as IPv4,
// so that the spellings of one address compare equal.
func plainAddr(a netip.Addr) netip.Addr {
	return a.WithZone("").Unmap()
}

// localAddrs are the addresses of the machine's network interfaces.
func localAddrs() []netip.Addr {
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var addrs []netip.Addr
	for _, a := range ifaddrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				addrs = append(addrs, ip)
			}
		}
	}
	return addrs
}

// Start listens and serves in the background; it returns once the listener is bound.
func (s *Server) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.opts.Listen)
	if err != nil {
		return err
	}
	s.srv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		// ReadTimeout bounds a request's body, WriteTimeout an answer (a slow reader cannot
		// hold a request's slot); the watch stream sets its own deadlines for each write.
		ReadTimeout: 30 * time.Second, WriteTimeout: requestTimeout + queueWait + 15*time.Second,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) }}
	if s.opts.TLSCertFile != "" {
		certs, err := newCertReloader(s.opts.TLSCertFile, s.opts.TLSKeyFile, s.log)
		if err != nil {
			_ = ln.Close()
			return err
		}
		s.srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.get}
	}
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		serve := s.srv.Serve
		if s.srv.TLSConfig != nil {
			serve = func(ln net.Listener) error { return s.srv.ServeTLS(ln, "", "") } // HTTP/2 included
		}
		if err := serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server stopped", "err", err)
		}
	}()
	s.log.Info("serving", "addr", ln.Addr().String())
	return nil
}

// NotifyChanges tells the watch hub that changes were committed (a NOTIFY on
// store.ChangesChannel, or a LISTEN reconnect).
func (s *Server) NotifyChanges() { s.hub.Notify() }

// Stop ends open watch streams, then drains open requests for up to 5 s; safe twice and
// before Start.
func (s *Server) Stop() {
	s.hub.Close()
	if s.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	<-s.done
	s.srv = nil
}

func (s *Server) recoverer(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic serving request", "path", r.URL.Path, "panic", v)
				if rec.code != 0 {
					panic(http.ErrAbortHandler) // the answer has begun: cut the connection
				}
				writeError(w, http.StatusInternalServerError, "internal error")
			}
		}()
		h.ServeHTTP(rec, r)
	})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if err := s.store.Ping(r.Context()); err != nil {
		writeError(w, http.StatusServiceUnavailable, "database unavailable")
		return
	}
	ok, err := s.store.MigrationsCurrent(r.Context())
	if err != nil || !ok {
		writeError(w, http.StatusServiceUnavailable, "database migrations are not current")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready", "replica": s.opts.Replica})
}

func (s *Server) listSources(w http.ResponseWriter, r *http.Request) {
	items, err := s.store.ListSources(r.Context(), scope(r))
	if s.fail(w, err) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": wireAll(items, sourceWire)})
}

func (s *Server) getSource(w http.ResponseWriter, r *http.Request) {
	src, err := s.store.GetSourceIn(r.Context(), scope(r), r.PathValue("name"))
	if s.fail(w, err) {
		return
	}
	if r.URL.Query().Get("counts") == "true" {
		// On request only: a caller limited to namespaces counts their rows, and `sync --wait` polls.
		n, err := s.store.SourceResourceCounts(r.Context(), scope(r), src.Name)
		if s.fail(w, err) {
			return
		}
		writeJSON(w, http.StatusOK, wire.SourceDetail{Source: sourceWire(src), Resources: &wire.SourceCounts{Total: n.Total, Phases: n.Phases,
			Deleting: n.Deleting, Orphaned: n.Orphaned}})
		return
	}
	writeJSON(w, http.StatusOK, sourceWire(src))
}

// listTypes lists every ResourceType to every caller with a role: types are schemas, tied to
// no namespace (as Kubernetes shows CRDs to anyone who may list them).
func (s *Server) listTypes(w http.ResponseWriter, r *http.Request) {
	if !identity(r).Can(auth.Read, "") {
		writeJSON(w, http.StatusOK, map[string]any{"items": []wire.ResourceType{}})
		return
	}
	items, err := s.store.ListTypes(r.Context())
	if s.fail(w, err) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": wireAll(items, typeWire)})
}

func (s *Server) getType(w http.ResponseWriter, r *http.Request) {
	if !identity(r).Can(auth.Read, "") {
		writeError(w, http.StatusNotFound, "resource type "+r.PathValue("name")+": "+store.ErrNotFound.Error())
		return
	}
	t, err := s.store.GetType(r.Context(), r.PathValue("name"))
	if s.fail(w, err) {
		return
	}
	writeJSON(w, http.StatusOK, typeWire(t))
}

func (s *Server) listResources(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, http.StatusBadRequest, "limit must be a number from 1 to 1000")
			return
		}
		limit = n
	}
	items, next, err := s.store.ListResources(r.Context(), scope(r), store.ResourceFilter{Kind: q.Get("kind"), Namespace: q.Get("namespace"),
		Source: q.Get("source"), Phase: q.Get("phase"), LabelSelector: q.Get("labelSelector"), Limit: limit, Continue: q.Get("continue")})
	if s.fail(w, err) {
		return
	}
	wire.WriteResources(w, http.StatusOK, items, resourceWire, next)
}

// resourceHistory answers for resources that are gone too: history outlives the row.
func (s *Server) resourceHistory(w http.ResponseWriter, r *http.Request) {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	ns, kind, name := r.PathValue("namespace"), r.PathValue("kind"), r.PathValue("name")
	sc := scope(r)
	if !sc.Contains(ns) {
		_, err := s.store.GetResourceIn(r.Context(), sc, ns, kind, name) // the 404 of a missing resource
		s.fail(w, err)
		return
	}
	items, err := s.store.ListHistory(r.Context(), ns, kind, name, limit)
	if s.fail(w, err) {
		return
	}
	if len(items) == 0 {
		// Neither history nor a row: the resource never existed.
		if _, err := s.store.GetResourceIn(r.Context(), sc, ns, kind, name); s.fail(w, err) {
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": wireAll(items, historyWire)})
}

// resourceEvents lists a resource's events; like its history, they outlive the row. A
// resource out of scope has no events, exactly like one that never existed (an empty list).
func (s *Server) resourceEvents(w http.ResponseWriter, r *http.Request) {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	items, err := s.store.ListEvents(r.Context(), scope(r), store.EventFilter{Namespace: r.PathValue("namespace"), Kind: r.PathValue("kind"), Name: r.PathValue("name"), Limit: limit})
	if s.fail(w, err) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": wireAll(items, eventWire)})
}

func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	items, err := s.store.ListEvents(r.Context(), scope(r), store.EventFilter{Namespace: q.Get("namespace"), Kind: q.Get("kind"), Name: q.Get("name"), Source: q.Get("source"), Limit: limit})
	if s.fail(w, err) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": wireAll(items, eventWire)})
}

// listReplicas shows every replica sharing the database and what each holds.
func (s *Server) listReplicas(w http.ResponseWriter, r *http.Request) {
	items, err := s.store.ListReplicas(r.Context(), 30*time.Second)
	if s.fail(w, err) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": wireAll(items, replicaWire), "self": s.opts.Replica})
}

// fail writes err as JSON with the status it deserves and reports whether it did.
func (s *Server) fail(w http.ResponseWriter, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, store.ErrBadRequest):
		writeError(w, http.StatusBadRequest, err.Error())
	default:
		s.log.Error("api query failed", "err", err)
		writeError(w, http.StatusServiceUnavailable, "database error")
	}
	return true
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
