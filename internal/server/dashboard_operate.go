package server

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/internal/auth"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// The dashboard's operator buttons (issue 11 §3). The resource and source pages show them to
// callers who may operate (opsView); each leads to a confirmation page whose POST form does
// the command and sends the browser back. Forms are protected against cross-site requests
// twice: the Origin (or, without one, the Referer) must be this server, and a double-submit
// token — a random cookie set by the confirmation page, repeated in the form — must match.
// No JavaScript is involved.

// csrfCookie holds the double-submit token.
const csrfCookie = "trueup_csrf"

// opsView is what the "operate" block of a page needs: the Suspended badge (for everyone)
// and the buttons (for operators).
type opsView struct {
	Base        string // the page's path: /resources/NS/KIND/NAME or /sources/NAME
	Source      bool
	Suspended   bool
	SuspendedBy string // the Suspended condition's message
	Held        string // the work a suspended resource holds back ("generation 3 pending"), or ""
	PinnedBy    string // a pinned source's pin (pinSentence), or ""
	CanOperate  bool
}

func makeOpsView(base string, isSource bool, conds []status.Condition, can bool) opsView {
	v := opsView{Base: base, Source: isSource, CanOperate: can}
	if c, ok := status.Get(conds, status.Suspended); ok && c.Status == status.True {
		v.Suspended, v.SuspendedBy = true, c.Message
	}
	return v
}

// resourceOps is the operate block of a resource page.
func resourceOps(r *http.Request, res store.Resource) opsView {
	v := makeOpsView(resourcePath(res.Metadata.Namespace, res.Kind, res.Metadata.Name), false, res.Status.Conditions,
		namespaceAccess(identity(r), res.Metadata.Namespace) == accessAllowed)
	if v.Suspended {
		v.Held = status.SuspendedWork(res.Status.Phase, res.Metadata.Generation, res.Status.Conditions)
	}
	return v
}

// sourceOps is the operate block of a source page; only operators pay for the namespace query.
func (s *Server) sourceOps(r *http.Request, src store.Source) opsView {
	can := false
	if id := identity(r); id.Can(auth.Operate, "") {
		if nss, err := s.store.SourceNamespaces(r.Context(), src.Name); err == nil {
			can = sourceAccess(id, nss) == accessAllowed
		}
	}
	v := makeOpsView(sourcePath(src.Name), true, src.Conditions, can)
	v.PinnedBy = pinSentence(src)
	return v
}

func (s *Server) operateRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /resources/{namespace}/{kind}/{name}/confirm/{action}", s.confirmPage)
	m.HandleFunc("POST /resources/{namespace}/{kind}/{name}/{action}", s.operateForm)
	m.HandleFunc("GET /sources/{name}/confirm/{action}", s.confirmPage)
	m.HandleFunc("POST /sources/{name}/{action}", s.operateForm)
}

// command is one dashboard command on one object.
type command struct {
	Action   string // reconcile | sync | suspend | resume | approve | reject
	Source   bool
	NS, Kind string // resources
	Name     string
	Base     string // the object's page
}

func commandOf(r *http.Request) (command, bool) {
	c := command{Action: r.PathValue("action"), Name: r.PathValue("name")}
	if strings.HasPrefix(r.URL.Path, "/sources/") {
		c.Source, c.Base = true, sourcePath(c.Name)
		return c, c.Action == "sync" || c.Action == "suspend" || c.Action == "resume" || c.Action == "pin" || c.Action == "unpin"
	}
	c.NS, c.Kind = r.PathValue("namespace"), r.PathValue("kind")
	c.Base = resourcePath(c.NS, c.Kind, c.Name)
	return c, c.Action == "reconcile" || c.Action == "override" || c.Action == "suspend" || c.Action == "resume" || c.vote()
}

// vote reports whether c is an approval or a rejection: the right to it is the waiting
// policies', not the operator role.
func (c command) vote() bool { return !c.Source && (c.Action == "approve" || c.Action == "reject") }

// Title is the confirmation question.
func (c command) Title() string {
	what := c.Kind + " " + c.NS + "/" + c.Name
	if c.Source {
		what = "source " + c.Name
	}
	switch c.Action {
	case "reconcile":
		return "Reconcile " + what + " now?"
	case "override":
		return "Apply " + what + " now, overriding the change window?"
	case "sync":
		return "Sync " + what + " now?"
	}
	return strings.ToUpper(c.Action[:1]) + c.Action[1:] + " " + what + "?"
}

// Explain says what the command does.
func (c command) Explain() string {
	switch {
	case c.Action == "reconcile":
		return "The action is called at once, skipping any backoff (a Stalled resource runs too). History records the attempt as trigger manual with your name."
	case c.Action == "override":
		return "The action is called at once although a change window holds the resource; the override serves that one call. Your name and the reason are kept in the resource's events and history."
	case c.Action == "sync":
		return "The replica holding the source's lease reads its head now and applies it unless it is the revision applied already."
	case c.Action == "pin":
		return "The source applies the revision chosen below at once, validated and prune-guarded as a push is (a resource deleted since comes back through its action), and keeps every newer commit pending until it is unpinned."
	case c.Action == "unpin":
		return "The source applies its newest revision at once."
	case c.Action == "suspend" && c.Source:
		return "The source keeps polling and shows the revision it would apply, but applies nothing until resumed."
	case c.Action == "suspend":
		return "New commits still update the resource's spec, but it is neither reconciled, resynced nor deleted until resumed."
	case c.Source:
		return "The source applies its head at once."
	case c.Action == "approve":
		return "Your approval binds to the plan below and the resource's generation, and lapses after the approval TTL. trueup applies exactly this plan once the approvals its policies ask for are given."
	case c.Action == "reject":
		return "The resource stalls and its action is not called until its spec or its plan changes."
	}
	return "Whatever became due while the resource was suspended runs at once."
}

// decide answers 404 or 403 on an HTML page unless the caller may run c.
func (s *Server) decide(w http.ResponseWriter, r *http.Request, c command) bool {
	a := namespaceAccess(identity(r), c.NS)
	what := c.Kind + " " + c.NS + "/" + c.Name
	if c.Source {
		what = "Source " + c.Name
		nss, err := s.store.SourceNamespaces(r.Context(), c.Name)
		if c.Action == "pin" && r.Method == http.MethodPost && err == nil && sourceAccess(identity(r), nss) == accessAllowed {
			// The pinned revision may bring back resources in namespaces the source has none in today.
			_, nss, err = s.store.PinNamespaces(r.Context(), c.Name, strings.TrimSpace(r.PostFormValue("revision")))
			switch {
			case errors.Is(err, store.ErrAmbiguous):
				s.errorPage(w, r, http.StatusConflict, "Ambiguous revision", err.Error())
				return false
			case errors.Is(err, store.ErrNotFound):
				s.errorPage(w, r, http.StatusNotFound, "Unknown revision", strings.TrimSuffix(err.Error(), ": "+store.ErrNotFound.Error())+".")
				return false
			}
		}
		if s.pageFailed(w, r, err) {
			return false
		}
		a = sourceAccess(identity(r), nss)
	}
	if c.vote() && a == accessForbidden {
		a = accessAllowed // seeing the resource is enough to ask; the vote checks the policies
	}
	switch a {
	case accessHidden:
		s.errorPage(w, r, http.StatusNotFound, "Not found", what+" does not exist.")
		return false
	case accessForbidden:
		s.errorPage(w, r, http.StatusForbidden, "Not allowed", "Your role does not allow this command here.")
		return false
	}
	return true
}

type confirmData struct {
	command
	CSRF string
	// Approval is the request a vote confirms (approve and reject only).
	Approval *wire.Approval
	// Revisions are those a pin may choose (pin only), Revision the one chosen already.
	Revisions []revisionRow
	Revision  string
}

// confirmPage asks for confirmation with a POST form carrying the double-submit token.
func (s *Server) confirmPage(w http.ResponseWriter, r *http.Request) {
	c, ok := commandOf(r)
	if !ok {
		s.errorPage(w, r, http.StatusNotFound, "Not found", "There is no command "+c.Action+".")
		return
	}
	if !s.decide(w, r, c) {
		return
	}
	var approval *wire.Approval
	if c.vote() {
		q, ok := s.pendingApproval(w, r, c)
		if !ok {
			return
		}
		approval = s.approvalWire(q, false)
	}
	var revisions []revisionRow
	if c.Source && c.Action == "pin" {
		src, err := s.store.GetSource(r.Context(), c.Name)
		if s.pageFailed(w, r, err) {
			return
		}
		if revisions, err = s.revisionRows(r.Context(), src, store.KeptRevisions, false); s.pageFailed(w, r, err) {
			return
		}
	}
	token := ""
	if ck, err := r.Cookie(csrfCookie); err == nil && len(ck.Value) == 64 {
		token = ck.Value
	} else {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		token = hex.EncodeToString(b)
		http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: token, Path: "/", HttpOnly: true, Secure: r.TLS != nil,
			SameSite: http.SameSiteStrictMode, MaxAge: int((12 * time.Hour).Seconds())})
	}
	s.render(w, r, http.StatusOK, "confirm.html", layout{Title: c.Title(), Nav: "resources", Page: confirmData{command: c, CSRF: token, Approval: approval,
		Revisions: revisions, Revision: r.URL.Query().Get("revision")}})
}

// sameOrigin reports whether a form POST comes from a page of this server: Sec-Fetch-Site
// when the browser sends it, and the Origin (or, without one, the Referer) against the Host.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	from := r.Header.Get("Origin")
	if from == "" || from == "null" {
		from = r.Header.Get("Referer")
	}
	u, err := url.Parse(from)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host) && (u.Scheme == "http" || u.Scheme == "https")
}

// validToken reports whether the form repeats the csrf cookie.
func validToken(r *http.Request) bool {
	ck, err := r.Cookie(csrfCookie)
	form := r.PostFormValue("csrf")
	return err == nil && len(ck.Value) == 64 && subtle.ConstantTimeCompare([]byte(ck.Value), []byte(form)) == 1
}

// operateForm runs a confirmed command and sends the browser back to the object's page.
func (s *Server) operateForm(w http.ResponseWriter, r *http.Request) {
	c, ok := commandOf(r)
	if !ok {
		s.errorPage(w, r, http.StatusNotFound, "Not found", "There is no command "+c.Action+".")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if !sameOrigin(r) || !validToken(r) {
		s.errorPage(w, r, http.StatusForbidden, "Request refused",
			"This form was not sent from trueup's own confirmation page (cross-site request protection). Go back and try again.")
		return
	}
	if !s.decide(w, r, c) {
		return
	}
	if c.vote() {
		s.voteForm(w, r, c)
		return
	}
	actor := identity(r).Actor()
	reason := s.boundReason(r.PostFormValue("reason"))
	var err error
	switch {
	case c.Action == "reconcile":
		_, err = s.store.RequestReconcile(r.Context(), c.NS, c.Kind, c.Name, actor)
	case c.Action == "override":
		if reason == "" {
			s.errorPage(w, r, http.StatusBadRequest, "Reason required", "Say why the change window is overridden: the reason is kept in the resource's events and history.")
			return
		}
		msg, werr := s.windowRefusesOperators(r, c.NS, c.Kind, c.Name, time.Now())
		if s.pageFailed(w, r, werr) {
			return
		}
		if msg != "" {
			s.errorPage(w, r, http.StatusConflict, "Not allowed", msg+".")
			return
		}
		_, err = s.store.RequestReconcileOverride(r.Context(), c.NS, c.Kind, c.Name, actor, reason)
	case c.Action == "sync":
		err = s.store.RequestSync(r.Context(), c.Name, actor)
	case c.Action == "pin":
		if reason == "" {
			s.errorPage(w, r, http.StatusBadRequest, "Reason required", "Say why the source is pinned: the reason is recorded in its event and shown on the overview.")
			return
		}
		_, err = s.store.PinSource(r.Context(), c.Name, strings.TrimSpace(r.PostFormValue("revision")), actor, reason)
	case c.Action == "unpin":
		err = s.store.UnpinSource(r.Context(), c.Name, actor, reason)
	case c.Source:
		err = s.store.SetSourceSuspended(r.Context(), c.Name, c.Action == "suspend", actor, reason)
	default:
		_, err = s.store.SetSuspended(r.Context(), store.SuspendParams{Namespace: c.NS, Kind: c.Kind, Name: c.Name,
			Suspend: c.Action == "suspend", Actor: actor, Reason: reason})
	}
	if errors.Is(err, store.ErrSuspended) {
		s.errorPage(w, r, http.StatusConflict, "Suspended", "This resource is suspended: resume it first.")
		return
	}
	if errors.Is(err, store.ErrAmbiguous) {
		s.errorPage(w, r, http.StatusConflict, "Ambiguous revision", err.Error())
		return
	}
	if errors.Is(err, store.ErrNotPinned) {
		s.errorPage(w, r, http.StatusConflict, "Not pinned", "Source "+c.Name+" is not pinned.")
		return
	}
	if s.pageFailed(w, r, err) {
		return
	}
	s.log.Info("dashboard command", "action", c.Action, "object", c.Base, "actor", actor)
	http.Redirect(w, r, c.Base, http.StatusSeeOther)
}
