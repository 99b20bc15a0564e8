package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/internal/auth"
	"github.com/trueup-dev/trueup/internal/plural"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/why"
)

// The dashboard's pages: each handler reads what it shows with a few bounded queries and
// hands a view to its template.

// phaseTotal is one phase's count, with its share of the whole for the overview's bar.
type phaseTotal struct {
	Phase string
	Count int
	Link  string
	X, W  float64 // bar segment start and width, in percent
}

func phaseTotals(byPhase map[string]int, linkKV ...string) []phaseTotal {
	total := 0
	for _, n := range byPhase {
		total += n
	}
	order := slices.Clone(phaseOrder)
	for p := range byPhase {
		if !slices.Contains(order, p) {
			order = append(order, p)
		}
	}
	out := make([]phaseTotal, 0, len(order))
	x := 0.0
	for _, p := range order {
		pt := phaseTotal{Phase: p, Count: byPhase[p], Link: listPath(append(slices.Clone(linkKV), "phase", p)...)}
		if total > 0 {
			pt.X, pt.W = x, 100*float64(pt.Count)/float64(total)
			x += pt.W
		}
		out = append(out, pt)
	}
	return out
}

// sourceView is a source as the pages show it.
type sourceView struct {
	store.Source
	Link       string
	DisplayURL string
	Rev        revision
	Rejected   *revision // the last attempted revision, when it is not the applied one
	Ready      status.Condition
	HasReady   bool
	// PruneSkipped: a guard refuses the applied revision's deletions.
	PruneSkipped    status.Condition
	HasPruneSkipped bool
	Total           int
	Converging      int          // Pending, Reconciling or Deleting
	Failing         int          // Failed
	Phases          []phaseTotal // non-zero only
	Errors          []sourceErrorView
	MoreErrors      int
}

type sourceErrorView struct {
	store.SourceError
	URL string
}

func makeSourceView(src store.Source, counts []store.PhaseCount, maxErrors int) sourceView {
	v := sourceView{Source: src, Link: sourcePath(src.Name), DisplayURL: displayURL(src.URL), Rev: makeRevision(src.URL, src.Revision)}
	if src.LastAttemptedRevision != "" && src.LastAttemptedRevision != src.Revision {
		r := makeRevision(src.URL, src.LastAttemptedRevision)
		v.Rejected = &r
	}
	v.Ready, v.HasReady = status.Get(src.Conditions, status.Ready)
	v.PruneSkipped, v.HasPruneSkipped = status.Get(src.Conditions, status.PruneSkipped)
	v.HasPruneSkipped = v.HasPruneSkipped && v.PruneSkipped.Status == status.True
	byPhase := map[string]int{}
	for _, c := range counts {
		if c.Source == src.Name {
			byPhase[c.Phase] += c.Count
			v.Total += c.Count
		}
	}
	v.Failing = byPhase[status.PhaseFailed]
	v.Converging = v.Total - v.Failing - byPhase[status.PhaseReady]
	for _, pt := range phaseTotals(byPhase, "source", src.Name) {
		if pt.Count > 0 {
			v.Phases = append(v.Phases, pt)
		}
	}
	errRev := src.LastAttemptedRevision
	for i, e := range src.Errors {
		if maxErrors > 0 && i == maxErrors {
			v.MoreErrors = len(src.Errors) - i
			break
		}
		v.Errors = append(v.Errors, sourceErrorView{SourceError: e, URL: fileLink(src.URL, errRev, e.File, e.Line)})
	}
	return v
}

// health is the overview's headline: what an engineer paged at night reads first.
type health struct {
	Level string // ok | progress | bad
	Lines []healthLine
}

type healthLine struct{ Text, Link string }

func makeHealth(total int, byPhase map[string]int, srcs []sourceView) health {
	var h health
	bad, progress := false, false
	if n := byPhase[status.PhaseFailed]; n > 0 {
		bad = true
		h.Lines = append(h.Lines, healthLine{fmt.Sprintf("%d %s failing", n, plural.Word(n, "resource is", "resources are")), listPath("phase", status.PhaseFailed)})
	}
	for _, s := range srcs {
		failing := s.HasReady && s.Ready.Status == status.False
		switch {
		case s.Rejected != nil:
			bad = true
			line := fmt.Sprintf("source %s rejected revision %s", s.Name, s.Rejected.Short)
			if failing {
				line += ": " + firstLine(s.Ready.Message, 120)
			}
			h.Lines = append(h.Lines, healthLine{line, s.Link})
		case failing:
			bad = true
			h.Lines = append(h.Lines, healthLine{fmt.Sprintf("source %s is not syncing: %s", s.Name, firstLine(s.Ready.Message, 120)), s.Link})
		}
	}
	if n := total - byPhase[status.PhaseReady] - byPhase[status.PhaseFailed]; n > 0 {
		progress = true
		h.Lines = append(h.Lines, healthLine{Text: fmt.Sprintf("%d %s converging (pending, reconciling or being deleted)", n, plural.Word(n, "resource is", "resources are"))})
	}
	switch {
	case bad:
		h.Level = "bad"
	case progress:
		h.Level = "progress"
	default:
		h.Level = "ok"
		switch {
		case len(srcs) == 0:
			h.Lines = []healthLine{{Text: "No sources are configured yet"}}
		case total == 0:
			h.Lines = []healthLine{{Text: "Sources are in sync; they declare no resources"}}
		default:
			h.Lines = []healthLine{{Text: fmt.Sprintf("All %d %s Ready; sources in sync", total, plural.Word(total, "resource is", "resources are"))}}
		}
	}
	return h
}

// resourceRow is a resource in a table.
type resourceRow struct {
	store.ResourceSummary
	Link string
	Key  string
	// Since is when the resource entered its current state, as well as is known.
	Since *time.Time
	// Held is the work a suspended resource holds back ("generation 3 pending"), or "".
	Held string
}

func makeRow(r store.ResourceSummary) resourceRow {
	row := resourceRow{ResourceSummary: r, Link: resourcePath(r.Namespace, r.Kind, r.Name), Key: watchKey(r.Namespace, r.Kind, r.Name), Since: r.StatusTime}
	if r.Suspended {
		row.Held = status.SuspendedWork(r.Phase, r.Generation, []status.Condition{r.Ready})
	}
	if r.Ready.Type != "" && !r.Ready.LastTransitionTime.IsZero() {
		t := r.Ready.LastTransitionTime
		row.Since = &t
	}
	return row
}

// eventRow is an event linked to what it is about.
type eventRow struct {
	store.Event
	Link, Object string
}

// eventTable is a list of events; Object shows what each is about (not on a resource's page).
type eventTable struct {
	Rows   []eventRow
	Object bool
}

func makeEvents(evs []store.Event, object bool) eventTable {
	out := make([]eventRow, len(evs))
	for i, e := range evs {
		out[i] = eventRow{Event: e}
		switch {
		case e.Name != "":
			out[i].Link, out[i].Object = resourcePath(e.Namespace, e.Kind, e.Name), e.Kind+" "+e.Namespace+"/"+e.Name
		case e.Source != "":
			out[i].Link, out[i].Object = sourcePath(e.Source), "source "+e.Source
		}
	}
	return eventTable{Rows: out, Object: object}
}

type overviewData struct {
	Health      health
	Total       int
	Phases      []phaseTotal
	Failures    []resourceRow
	FailedTotal int
	Sources     []sourceView
	Events      eventTable
	// ShowReplicas: the replicas are an admin's (over every namespace) to see.
	ShowReplicas bool
	Replicas     []store.Replica
	// ConfigRefused is this replica's last config reload when it was refused (admins only:
	// the errors quote the config).
	ConfigRefused *ReloadResult
}

// overviewPage answers GET /: the headline, counts by phase, sources, recent failures and
// events, and the replicas sharing the database.
func (s *Server) overviewPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := pageContext(r)
	defer cancel()
	sc := scope(r)
	srcs, err := s.store.ListSources(ctx, sc)
	if s.pageFailed(w, r, err) {
		return
	}
	counts, err := s.store.CountResources(ctx, sc)
	if s.pageFailed(w, r, err) {
		return
	}
	fails, err := s.store.RecentFailures(ctx, sc, 10)
	if s.pageFailed(w, r, err) {
		return
	}
	evs, err := s.store.ListEvents(ctx, sc, store.EventFilter{Limit: 12})
	if s.pageFailed(w, r, err) {
		return
	}
	d := overviewData{Events: makeEvents(evs, true), ShowReplicas: identity(r).Can(auth.Administer, "")}
	if d.ShowReplicas {
		if d.Replicas, err = s.store.ListReplicas(ctx, 30*time.Second); s.pageFailed(w, r, err) {
			return
		}
		d.ConfigRefused = s.configRefused()
	}
	byPhase := map[string]int{}
	for _, c := range counts {
		byPhase[c.Phase] += c.Count
		d.Total += c.Count
	}
	d.Phases = phaseTotals(byPhase)
	d.FailedTotal = byPhase[status.PhaseFailed]
	for _, f := range fails {
		d.Failures = append(d.Failures, makeRow(f))
	}
	for _, src := range srcs {
		d.Sources = append(d.Sources, makeSourceView(src, counts, 3))
	}
	d.Health = makeHealth(d.Total, byPhase, d.Sources)
	if len(d.Sources) == 0 && !sc.All() {
		// Sources may well be configured: none has resources in the caller's namespaces.
		d.Health.Lines = []healthLine{{Text: "No source declares resources in your namespaces"}}
	}
	if n, err := s.store.CountPendingApprovals(ctx, sc); s.pageFailed(w, r, err) {
		return
	} else if n > 0 {
		d.Health.Lines = append(d.Health.Lines, healthLine{fmt.Sprintf("%d %s for approval", n, plural.Word(n, "change waits", "changes wait")),
			listPath("approval", store.ApprovalPending)})
	}
	if d.ShowReplicas {
		// Dead letters name resources of every namespace: admins only, as the API.
		n, err := s.store.CountOutbox(ctx, store.OutboxDead)
		if s.pageFailed(w, r, err) {
			return
		}
		if n > 0 {
			d.Health.Lines = append(d.Health.Lines, healthLine{fmt.Sprintf("%d %s could not be delivered", n, plural.Word(n, "notification", "notifications")),
				"/notifications?state=dead"})
		}
	}
	s.render(w, r, http.StatusOK, "overview.html", layout{Title: "Overview", Nav: "overview", Watch: "*", Page: d})
}

// filterChip is one active filter, with the address of the list without it.
type filterChip struct {
	Name, Value, Remove string
}

type resourcesData struct {
	Filter     store.SummaryFilter
	Items      []resourceRow
	Next       string
	First      string
	Chips      []filterChip
	Phases     []string
	Kinds      []string
	Namespaces []string
	Sources    []string
	Error      string
	Clear      string
}

// resourcesPage answers GET /resources: a filtered, searchable table, 100 rows a page.
func (s *Server) resourcesPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := pageContext(r)
	defer cancel()
	q := r.URL.Query()
	f := store.SummaryFilter{Kind: strings.TrimSpace(q.Get("kind")), Namespace: strings.TrimSpace(q.Get("namespace")),
		Phase: q.Get("phase"), Approval: q.Get("approval"), Source: q.Get("source"), LabelSelector: strings.TrimSpace(q.Get("label")),
		Query: strings.TrimSpace(q.Get("q")), Continue: q.Get("continue"), Limit: 100}
	d := resourcesData{Filter: f, Phases: slices.Clone(phaseOrder), Clear: "/resources"}
	params := []string{"q", f.Query, "phase", f.Phase, "approval", f.Approval, "kind", f.Kind, "namespace", f.Namespace, "source", f.Source, "label", f.LabelSelector}
	for i := 0; i < len(params); i += 2 {
		if params[i+1] == "" {
			continue
		}
		rest := slices.Clone(params)
		rest[i+1] = ""
		d.Chips = append(d.Chips, filterChip{Name: params[i], Value: params[i+1], Remove: listPath(rest...)})
	}
	code := http.StatusOK
	sc := scope(r)
	items, next, err := s.store.ListResourceSummaries(ctx, sc, f)
	switch {
	case errors.Is(err, store.ErrBadRequest):
		code, d.Error = http.StatusBadRequest, strings.TrimPrefix(err.Error(), store.ErrBadRequest.Error()+": ")
	case s.pageFailed(w, r, err):
		return
	}
	for _, it := range items {
		d.Items = append(d.Items, makeRow(it))
	}
	if next != "" {
		d.Next = listPath(append(slices.Clone(params), "continue", next)...)
	}
	if f.Continue != "" {
		d.First = listPath(params...)
	}
	types, err := s.store.ListTypes(ctx)
	if s.pageFailed(w, r, err) {
		return
	}
	for _, t := range types {
		d.Kinds = append(d.Kinds, t.Name)
	}
	if d.Namespaces, err = s.store.ListNamespaces(ctx, sc, 1000); s.pageFailed(w, r, err) {
		return
	}
	srcs, err := s.store.VisibleSources(ctx, sc)
	if s.pageFailed(w, r, err) {
		return
	}
	d.Sources = srcs
	title := "Resources"
	if f.Phase != "" {
		title = f.Phase + " resources"
	}
	if f.Approval == store.ApprovalPending {
		title = "Resources waiting for approval"
	}
	s.render(w, r, code, "resources.html", layout{Title: title, Nav: "resources", Watch: "*", Page: d})
}

// historyRow is one reconcile attempt as the timeline shows it.
type historyRow struct {
	store.HistoryEntry
	Rev    revision
	RunURL string
	// TraceURL opens the attempt's trace (tracing.traceURL; "": the id is shown unlinked).
	TraceURL string
}

type resourceData struct {
	Namespace, Kind, Name string
	Exists                bool
	Res                   store.Resource
	Key                   string
	Ready                 status.Condition
	HasReady              bool
	Spec                  string
	Outputs               []output
	Labels, Annotations   []pair
	History               []historyRow
	HistoryLimit          int
	Tracing               bool // some attempt shown has a trace id: the Trace column is shown
	Events                eventTable
	SourceLink            string
	FileURL               string
	Rev                   revision
	APIPath               string
	Ops                   opsView        // operator commands (dashboard_operate.go)
	Deps                  neighboursView // dependencies and dependents (dashboard_graph.go)
	Approval              *approvalView  // what a policy holds back (dashboard_approvals.go)
	// NextRetry is when a resource retrying after a failure is taken up again (nil: not
	// retrying, or suspended), as describe shows it; RetryRunning, that a replica runs the
	// retry now (the API gives no time while a lease is held).
	NextRetry    *time.Time
	RetryRunning bool
	// Window is the change window holding the resource's change (nil: none); Why what holds
	// it back and Timeline what happened to it (dashboard_why.go).
	Window   *windowView
	Why      []why.Blocker
	Timeline []store.TimelineEntry
}

const historyLimit = 50

// resourcePage answers GET /resources/{namespace}/{kind}/{name}. A removed resource whose
// history is still kept shows that history under a notice; only when there is neither row nor
// history is it a 404.
func (s *Server) resourcePage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := pageContext(r)
	defer cancel()
	ns, kind, name := r.PathValue("namespace"), r.PathValue("kind"), r.PathValue("name")
	d := resourceData{Namespace: ns, Kind: kind, Name: name, Key: watchKey(ns, kind, name), HistoryLimit: historyLimit,
		APIPath: "/api/v1" + resourcePath(ns, kind, name)}
	sc := scope(r)
	if !sc.Contains(ns) {
		s.resourceNotFound(w, r, ns, kind, name)
		return
	}
	res, err := s.store.GetResourceIn(ctx, sc, ns, kind, name)
	switch {
	case err == nil:
		d.Exists, d.Res, d.Kind = true, res, res.Kind
	case !errors.Is(err, store.ErrNotFound):
		s.pageFailed(w, r, err)
		return
	}
	hist, err := s.store.ListHistory(ctx, ns, kind, name, historyLimit)
	if s.pageFailed(w, r, err) {
		return
	}
	if !d.Exists && len(hist) == 0 {
		s.resourceNotFound(w, r, ns, kind, name)
		return
	}
	evs, err := s.store.ListEvents(ctx, sc, store.EventFilter{Namespace: ns, Kind: kind, Name: name, Limit: 50})
	if s.pageFailed(w, r, err) {
		return
	}
	d.Events = makeEvents(evs, false)
	repoURL := ""
	if d.Exists {
		if src, err := s.store.GetSource(ctx, res.Source.Name); err == nil {
			repoURL = src.URL
		} else if !errors.Is(err, store.ErrNotFound) {
			s.pageFailed(w, r, err)
			return
		}
		d.Ready, d.HasReady = status.Get(res.Status.Conditions, status.Ready)
		d.Spec = prettyJSON(res.Spec)
		d.Outputs = outputsOf(res.Status.Outputs)
		d.Labels = pairsOf(res.Metadata.Labels, true)
		d.Annotations = pairsOf(res.Metadata.Annotations, false)
		d.SourceLink = sourcePath(res.Source.Name)
		d.Rev = makeRevision(repoURL, res.Source.Revision)
		d.FileURL = fileLink(repoURL, res.Source.Revision, res.Source.Path, res.Source.Line)
		d.Ops = resourceOps(r, res)
		if c, ok := status.Get(res.Status.Conditions, status.Reconciling); ok && c.Reason == status.ReasonRetrying && !d.Ops.Suspended {
			d.NextRetry = res.Status.NextReconcileTime
			dc, waits := status.Get(res.Status.Conditions, status.DependentsDeleted)
			d.RetryRunning = d.NextRetry == nil && !(waits && dc.Status == status.False)
		}
		n, err := s.store.ResourceNeighbours(ctx, sc, res.Metadata.Namespace, res.Kind, res.Metadata.Name)
		if s.pageFailed(w, r, err) {
			return
		}
		d.Deps = makeNeighbours(n, sc)
		if d.Approval, err = s.resourceApproval(ctx, identity(r), res, n, sc); s.pageFailed(w, r, err) {
			return
		}
		if s.pageFailed(w, r, s.resourceWhy(ctx, sc, &d)) {
			return
		}
	} else if len(hist) > 0 {
		d.Kind = hist[0].Kind
	}
	for _, h := range hist {
		d.History = append(d.History, historyRow{HistoryEntry: h, Rev: makeRevision(repoURL, h.Revision), RunURL: runURL(h.Outputs),
			TraceURL: traceLink(s.opts.TraceURL, h.TraceID)})
		d.Tracing = d.Tracing || h.TraceID != ""
	}
	title := d.Kind + " " + ns + "/" + name
	s.render(w, r, http.StatusOK, "resource.html", layout{Title: title, Nav: "resources", Watch: "resource:" + d.Key,
		WatchURL: "/api/v1/watch?" + url.Values{"namespace": {ns}, "kind": {d.Kind}}.Encode(), Page: d})
}

// resourceNotFound is the page of a resource that does not exist, or that the caller may not
// see: the two must not differ.
func (s *Server) resourceNotFound(w http.ResponseWriter, r *http.Request, ns, kind, name string) {
	s.errorPage(w, r, http.StatusNotFound, "Resource not found",
		fmt.Sprintf("No resource %s %s/%s exists, and none with that name has any history.", kind, ns, name))
}

// sourcesPage answers GET /sources.
func (s *Server) sourcesPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := pageContext(r)
	defer cancel()
	sc := scope(r)
	srcs, err := s.store.ListSources(ctx, sc)
	if s.pageFailed(w, r, err) {
		return
	}
	counts, err := s.store.CountResources(ctx, sc)
	if s.pageFailed(w, r, err) {
		return
	}
	views := make([]sourceView, 0, len(srcs))
	for _, src := range srcs {
		views = append(views, makeSourceView(src, counts, 5))
	}
	s.render(w, r, http.StatusOK, "sources.html", layout{Title: "Sources", Nav: "sources", Watch: "*", Page: views})
}

type sourceData struct {
	sourceView
	Events    eventTable
	Resources string
	Ops       opsView   // operator commands (dashboard_operate.go)
	Graph     graphView // the dependency graph (dashboard_graph.go)
	Previews  previewList
	Revisions []revisionRow // the last applied (dashboard_pin.go)
	Sets      []setLink     // the source's ResourceSets (dashboard_resourcesets.go)
}

// sourcePage answers GET /sources/{name}: revision, conditions and every validation error.
func (s *Server) sourcePage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := pageContext(r)
	defer cancel()
	sc := scope(r)
	src, err := s.store.GetSourceIn(ctx, sc, r.PathValue("name"))
	if s.pageFailed(w, r, err) {
		return
	}
	counts, err := s.store.CountResources(ctx, sc)
	if s.pageFailed(w, r, err) {
		return
	}
	evs, err := s.store.ListEvents(ctx, sc, store.EventFilter{Source: src.Name, Limit: 30})
	if s.pageFailed(w, r, err) {
		return
	}
	g, err := s.store.ResourceGraph(ctx, sc, store.GraphFilter{Source: src.Name, MaxNodes: maxSVGNodes})
	if err != nil && !errors.Is(err, store.ErrGraphTooLarge) && s.pageFailed(w, r, err) {
		return
	}
	graph := makeGraphView(g, err)
	ps, err := s.readPreviews(ctx, src.Name, sourcePreviews)
	if s.pageFailed(w, r, err) {
		return
	}
	d := sourceData{sourceView: makeSourceView(src, counts, 0), Events: makeEvents(evs, true), Resources: listPath("source", src.Name),
		Ops: s.sourceOps(r, src), Graph: graph, Previews: makePreviewList(src.URL, ps)}
	if d.Revisions, err = s.revisionRows(ctx, src, sourceRevisionRows, d.Ops.CanOperate); s.pageFailed(w, r, err) {
		return
	}
	sets, err := s.store.ListResourceSets(ctx, sc, store.ResourceSetFilter{Source: src.Name})
	if s.pageFailed(w, r, err) {
		return
	}
	d.Sets = sourceResourceSets(sets)
	s.render(w, r, http.StatusOK, "source.html", layout{Title: "Source " + src.Name, Nav: "sources", Watch: "source:" + src.Name,
		WatchURL: "/api/v1/watch?" + url.Values{"source": {src.Name}}.Encode(), Page: d})
}

// traceLink is pattern (tracing.traceURL) with {traceId} replaced by id; "" without either.
func traceLink(pattern, id string) string {
	if pattern == "" || id == "" {
		return ""
	}
	return strings.ReplaceAll(pattern, "{traceId}", url.PathEscape(id))
}
