package server

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/internal/previewresult"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// The dashboard's pull-request previews: a section of the source page listing them, and a
// page per pull request with its counts, changes (spec diffs and plans), warnings and
// validation errors. Diffs and plans are text in <pre>, escaped like everything else.

// sourcePreviews is how many previews the source page lists.
const sourcePreviews = 20

// previewPath is the dashboard page of a preview.
func previewPath(source string, number int) string {
	return sourcePath(source) + "/previews/" + strconv.Itoa(number)
}

// previewRow is a preview in the source page's list, and the head of its own page.
type previewRow struct {
	Number     int
	Link       string // the dashboard page
	PRURL      string // the pull request on the forge ("" when not a safe http(s) URL)
	CommentURL string
	Title      string
	State      string
	StateClass string // a phase-* class
	StateIcon  string
	Message    string
	Head       revision
	Counts     *previewresult.Counts
	UpdatedAt  time.Time
}

// previewStates maps preview states to the dashboard's phase badges.
var previewStates = map[string]struct{ class, icon string }{
	store.PreviewPending:   {"pending", "…"},
	store.PreviewRunning:   {"reconciling", "↻"},
	store.PreviewSucceeded: {"ready", "✓"},
	store.PreviewFailed:    {"failed", "✕"},
	store.PreviewError:     {"failed", "!"},
}

func makePreviewRow(repoURL string, p wire.Preview) previewRow {
	st, ok := previewStates[p.State]
	if !ok {
		st.class, st.icon = "unknown", "?"
	}
	return previewRow{Number: p.Number, Link: previewPath(p.Source, p.Number), PRURL: externalURL(p.URL),
		CommentURL: externalURL(p.CommentURL), Title: p.Title, State: p.State, StateClass: st.class, StateIcon: st.icon,
		Message: p.Message, Head: makeRevision(repoURL, p.HeadSHA), Counts: p.Counts, UpdatedAt: p.UpdatedAt}
}

// previewList is the source page's section.
type previewList struct {
	Rows []previewRow
	More bool // there may be older previews than those listed
}

func makePreviewList(repoURL string, ps []wire.Preview) previewList {
	l := previewList{More: len(ps) >= sourcePreviews}
	for _, p := range ps {
		l.Rows = append(l.Rows, makePreviewRow(repoURL, p))
	}
	return l
}

// changeView is one row of a preview's changes.
type changeView struct {
	previewresult.Change
	FileURL   string
	Link      string // the applied resource's page (changes and deletes)
	DiffLines []diffLine
	PlanClass string // a cond-* class for the plan's status
	PlanLabel string // the plan's status in words
	// GateLabel, GateClass and GateText say what a policy would hold after merge ("": none).
	GateLabel, GateClass, GateText string
}

// diffLine is a line of a unified diff with its class: add, del, hunk or "".
type diffLine struct {
	Text, Class string
}

func diffLines(diff string) []diffLine {
	if diff == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(diff, "\n"), "\n")
	out := make([]diffLine, len(lines))
	for i, l := range lines {
		out[i].Text = l
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			out[i].Class = "d-file"
		case strings.HasPrefix(l, "@@"):
			out[i].Class = "d-hunk"
		case strings.HasPrefix(l, "+"):
			out[i].Class = "d-add"
		case strings.HasPrefix(l, "-"):
			out[i].Class = "d-del"
		}
	}
	return out
}

func planClass(p *previewresult.Plan) string {
	if p == nil {
		return ""
	}
	switch p.Status {
	case "planned":
		if p.Changes {
			return "progress"
		}
		return "ok"
	case "error", "timeout":
		return "bad"
	}
	return "unknown"
}

// planLabel says a plan's status in words.
func planLabel(p *previewresult.Plan) string {
	if p == nil {
		return ""
	}
	switch p.Status {
	case "no-plan":
		return "no plan"
	case "timeout":
		return "timed out"
	case "planned":
		if !p.Changes {
			return "no changes"
		}
	}
	return p.Status
}

// previewErrorView is a validation error, linked to the file at the head when the forge is
// known.
type previewErrorView struct {
	previewresult.Error
	URL string
}

// previewData is the preview page.
type previewData struct {
	Source        string
	SourceLink    string
	Row           previewRow
	Base          revision
	HasResult     bool
	Counts        previewresult.Counts
	Changes       []changeView
	HiddenChanges int
	Warnings      []string
	Errors        []previewErrorView
}

func makePreviewData(src store.Source, p wire.Preview) previewData {
	d := previewData{Source: src.Name, SourceLink: sourcePath(src.Name), Row: makePreviewRow(src.URL, p),
		Base: makeRevision(src.URL, p.BaseRevision), HiddenChanges: p.HiddenChanges}
	if p.Result == nil {
		return d
	}
	res := p.Result
	d.HasResult, d.Counts, d.Warnings = true, res.Counts, res.Warnings
	for _, c := range res.Changes {
		v := changeView{Change: c, DiffLines: diffLines(c.Diff), PlanClass: planClass(c.Plan), PlanLabel: planLabel(c.Plan)}
		if g := c.Gate; g != nil {
			v.GateLabel, v.GateClass, v.GateText = "waits for approval", "progress", g.Text()
			switch g.Decision {
			case "deny":
				v.GateLabel, v.GateClass = "denied", "bad"
			case previewresult.Undecided:
				v.GateLabel = "decided after merge"
			}
		}
		rev := p.HeadSHA
		if c.Op == "delete" {
			rev = p.BaseRevision // the file is gone from the head
		}
		v.FileURL = fileLink(src.URL, rev, c.File, c.Line)
		if c.Op != "add" {
			v.Link = resourcePath(c.Namespace, c.Kind, c.Name)
		}
		d.Changes = append(d.Changes, v)
	}
	for _, e := range res.Errors {
		d.Errors = append(d.Errors, previewErrorView{Error: e, URL: fileLink(src.URL, p.HeadSHA, e.File, e.Line)})
	}
	return d
}

// previewPage answers GET /sources/{name}/previews/{number}.
func (s *Server) previewPage(w http.ResponseWriter, r *http.Request) {
	n, ok := previewNumber(r.PathValue("number"))
	if !ok {
		s.errorPage(w, r, http.StatusBadRequest, "Bad request", "The pull request number must be a positive integer.")
		return
	}
	ctx, cancel := pageContext(r)
	defer cancel()
	sc := scope(r)
	src, err := s.store.GetSourceIn(ctx, sc, r.PathValue("name"))
	if s.pageFailed(w, r, err) {
		return
	}
	p, err := s.readPreview(ctx, sc, src.Name, n)
	if s.pageFailed(w, r, err) {
		return
	}
	s.render(w, r, http.StatusOK, "preview.html", layout{Title: "Preview of #" + strconv.Itoa(n) + " · " + src.Name, Nav: "sources",
		Watch: "source:" + src.Name, WatchURL: "/api/v1/watch?" + url.Values{"source": {src.Name}}.Encode(), Page: makePreviewData(src, p)})
}
