package gitlab

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions/actiontest"
)

// fakeGitLab is an httptest.Server answering the part of GitLab's REST API v4 the plugin
// uses, with GitLab's status codes, JSON shapes, pagination headers and rate-limit answers.
type fakeGitLab struct {
	t            *testing.T
	srv          *httptest.Server
	projectPath  string // "infra/db"
	projectID    string // "42"
	token        string
	triggerToken string
	refs         []string

	mu         sync.Mutex
	nextID     int64
	nextJobID  int64
	pipelines  []*fakePipeline // by id, ascending
	requests   int
	routes     map[string]int // "POST trigger", "GET pipeline", … → count
	maxPerPage int            // GitLab caps per_page at 100
	// initialStatus is the status of a triggered pipeline ("created" unless set).
	initialStatus string
	// jobs lists the jobs of a triggered pipeline; nil gives build + deploy.
	jobs func(vars map[string]string) []fakeJob
	// limited makes every call answer 429 with Retry-After: retryAfter.
	limited    bool
	retryAfter int
	// remaining is sent as RateLimit-Remaining on every answer.
	remaining int
	// artifacts holds trueup-outputs.json per job id.
	artifacts map[int64]string
	// triggerError, when set, is the JSON message of a 400 answer to the next triggers.
	triggerError string
	// finishAfter, when set, moves a pipeline still in progress to finishAs (with its
	// jobs) on its finishAfter-th read, as a runner would.
	finishAfter int
	finishAs    string
}

type fakePipeline struct {
	ID       int64
	IID      int64
	Ref      string
	Status   string
	Source   string
	Vars     map[string]string
	Jobs     []fakeJob
	Created  time.Time
	Updated  time.Time
	Cancels  int
	reads    int
	canceled bool // cancel asked while running: "canceling", then "canceled" on the next read
}

type fakeJob struct {
	ID           int64
	Name         string
	Stage        string
	Status       string
	AllowFailure bool
}

// fakeTokens numbers the fakes' tokens.
var fakeTokens atomic.Int64

func newFakeGitLab(t *testing.T) *fakeGitLab {
	t.Helper()
	f := &fakeGitLab{
		t:           t,
		projectPath: "infra/db",
		projectID:   "42",
		// A token of the fake's own: the rate-limit pause one test's fake earns is the token's
		// at the fake's loopback port, which another test's fake may take after it.
		token:        "glpat-APITOKEN-s3cr3t-" + strconv.FormatInt(fakeTokens.Add(1), 10),
		triggerToken: "glptt-TRIGGER-s3cr3t-123456",
		refs:         []string{"main", "release"},
		nextID:       100,
		nextJobID:    5000,
		routes:       map[string]int{},
		maxPerPage:   100,
		remaining:    2000,
		artifacts:    map[int64]string{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v4/projects/{id}/trigger/pipeline", f.trigger)
	mux.HandleFunc("GET /api/v4/projects/{id}/pipelines", f.listPipelines)
	mux.HandleFunc("GET /api/v4/projects/{id}/pipelines/{pid}", f.onPipeline("GET pipeline", f.getPipeline))
	mux.HandleFunc("GET /api/v4/projects/{id}/pipelines/{pid}/variables", f.onPipeline("GET variables", f.getVariables))
	mux.HandleFunc("GET /api/v4/projects/{id}/pipelines/{pid}/jobs", f.onPipeline("GET jobs", f.listJobs))
	mux.HandleFunc("POST /api/v4/projects/{id}/pipelines/{pid}/cancel", f.onPipeline("POST cancel", f.cancel))
	mux.HandleFunc("GET /api/v4/projects/{id}/jobs/{jid}/artifacts/{path...}", f.artifact)
	f.srv = httptest.NewServer(f.middleware(mux))
	t.Cleanup(f.srv.Close)
	return f
}

// config is a valid instance config for this server.
func (f *fakeGitLab) config(extra map[string]any) json.RawMessage {
	return actiontest.Config(f.t, map[string]any{
		"baseURL":      f.srv.URL + "/",
		"project":      f.projectPath,
		"triggerToken": f.triggerToken,
		"token":        f.token,
		"pollInterval": "10ms",
		"timeout":      "5s",
	}, extra)
}

func (f *fakeGitLab) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests++
		limited, retry := f.limited, f.retryAfter
		if f.remaining > 0 && !limited {
			f.remaining--
		}
		remaining := f.remaining
		f.mu.Unlock()
		reset := time.Now().Add(time.Duration(retry) * time.Second)
		w.Header().Set("RateLimit-Limit", "2000")
		if !limited {
			reset = time.Now().Add(time.Minute) // the window's end
		}
		w.Header().Set("RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
		if limited {
			// GitLab's 429: plain text, Retry-After and the RateLimit-* headers.
			w.Header().Set("Retry-After", strconv.Itoa(retry))
			w.Header().Set("RateLimit-Observed", "2001")
			w.Header().Set("RateLimit-Remaining", "0")
			w.Header().Set("RateLimit-ResetTime", reset.UTC().Format(http.TimeFormat))
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprintln(w, "Retry later")
			return
		}
		w.Header().Set("RateLimit-Remaining", strconv.Itoa(remaining))
		next.ServeHTTP(w, r)
	})
}

// project checks the :id of the path (URL-encoded path or numeric id) and, for API calls,
// the PRIVATE-TOKEN header.
func (f *fakeGitLab) project(w http.ResponseWriter, r *http.Request, auth bool) bool {
	if id := r.PathValue("id"); id != f.projectPath && id != f.projectID {
		actiontest.WriteJSON(w, http.StatusNotFound, map[string]any{"message": "404 Project Not Found"})
		return false
	}
	if strings.Contains(r.URL.RawQuery, "token") {
		// The plugin must never put a token in a URL.
		actiontest.WriteJSON(w, http.StatusBadRequest, map[string]any{"message": "token in URL"})
		return false
	}
	if auth && r.Header.Get("PRIVATE-TOKEN") != f.token {
		actiontest.WriteJSON(w, http.StatusUnauthorized, map[string]any{"message": "401 Unauthorized"})
		return false
	}
	return true
}

func (f *fakeGitLab) count(route string) {
	f.mu.Lock()
	f.routes[route]++
	f.mu.Unlock()
}

func (f *fakeGitLab) trigger(w http.ResponseWriter, r *http.Request) {
	f.count("POST trigger")
	if !f.project(w, r, false) {
		return
	}
	if err := r.ParseForm(); err != nil {
		actiontest.WriteJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid form"})
		return
	}
	if r.PostForm.Get("token") != f.triggerToken {
		actiontest.WriteJSON(w, http.StatusNotFound, map[string]any{"message": "404 Not Found"})
		return
	}
	ref := r.PostForm.Get("ref")
	if ref == "" {
		actiontest.WriteJSON(w, http.StatusBadRequest, map[string]any{"error": "ref is missing"})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.triggerError != "" {
		actiontest.WriteJSON(w, http.StatusBadRequest, map[string]any{"message": map[string]any{"base": []string{f.triggerError}}})
		return
	}
	if !slices.Contains(f.refs, ref) {
		actiontest.WriteJSON(w, http.StatusBadRequest, map[string]any{"message": map[string]any{"base": []string{"Reference not found"}}})
		return
	}
	vars := map[string]string{}
	for k, v := range r.PostForm {
		if name, ok := strings.CutPrefix(k, "variables["); ok && strings.HasSuffix(name, "]") {
			vars[strings.TrimSuffix(name, "]")] = v[0]
		}
	}
	p := f.addLocked(ref, "trigger", vars)
	actiontest.WriteJSON(w, http.StatusCreated, f.pipelineJSON(p, true))
}

// add creates a pipeline as a trigger (or another source) would.
func (f *fakeGitLab) add(ref, source string, vars map[string]string) *fakePipeline {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addLocked(ref, source, vars)
}

func (f *fakeGitLab) addLocked(ref, source string, vars map[string]string) *fakePipeline {
	f.nextID++
	now := time.Now().UTC()
	status := f.initialStatus
	if status == "" {
		status = "created"
	}
	p := &fakePipeline{ID: f.nextID, IID: f.nextID - 99, Ref: ref, Status: status, Source: source, Vars: vars, Created: now, Updated: now}
	jobs := []fakeJob{{Name: "build", Stage: "build", Status: "success"}, {Name: "deploy", Stage: "deploy", Status: "success"}}
	if f.jobs != nil {
		jobs = f.jobs(vars)
	}
	for _, j := range jobs {
		f.nextJobID++
		j.ID = f.nextJobID
		p.Jobs = append(p.Jobs, j)
	}
	f.pipelines = append(f.pipelines, p)
	return p
}

func (f *fakeGitLab) find(w http.ResponseWriter, r *http.Request) *fakePipeline {
	id, _ := strconv.ParseInt(r.PathValue("pid"), 10, 64)
	for _, p := range f.pipelines {
		if p.ID == id {
			return p
		}
	}
	actiontest.WriteJSON(w, http.StatusNotFound, map[string]any{"message": "404 Not found"})
	return nil
}

// onPipeline serves a route of one pipeline: counted, the project and token checked, and
// the pipeline of the path's {pid} found (else 404); h runs under mu.
func (f *fakeGitLab) onPipeline(route string, h func(w http.ResponseWriter, r *http.Request, p *fakePipeline)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f.count(route)
		if !f.project(w, r, true) {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if p := f.find(w, r); p != nil {
			h(w, r, p)
		}
	}
}

func (f *fakeGitLab) getPipeline(w http.ResponseWriter, r *http.Request, p *fakePipeline) {
	if p.canceled && p.Status == "canceling" {
		defer func() { p.Status = "canceled" }()
	}
	p.reads++
	if f.finishAfter > 0 && p.reads >= f.finishAfter && !p.canceled {
		if prog, _ := classify(p.Status); prog == inProgress {
			p.Status = f.finishAs
		}
	}
	actiontest.WriteJSON(w, http.StatusOK, f.pipelineJSON(p, true))
}

func (f *fakeGitLab) cancel(w http.ResponseWriter, r *http.Request, p *fakePipeline) {
	p.Cancels++
	// GitLab answers 200 whatever the state; running work goes through "canceling".
	switch p.Status {
	case "running":
		p.Status, p.canceled = "canceling", true
	case "created", "pending", "waiting_for_resource", "preparing", "scheduled":
		p.Status = "canceled"
	}
	p.Updated = time.Now().UTC()
	actiontest.WriteJSON(w, http.StatusOK, f.pipelineJSON(p, true))
}

func (f *fakeGitLab) getVariables(w http.ResponseWriter, r *http.Request, p *fakePipeline) {
	out := []map[string]any{}
	for _, k := range sortedKeys(p.Vars) {
		out = append(out, map[string]any{"key": k, "variable_type": "env_var", "value": p.Vars[k]})
	}
	actiontest.WriteJSON(w, http.StatusOK, out)
}

func (f *fakeGitLab) listPipelines(w http.ResponseWriter, r *http.Request) {
	f.count("GET pipelines")
	if !f.project(w, r, true) {
		return
	}
	q := r.URL.Query()
	var after time.Time
	if v := q.Get("updated_after"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			actiontest.WriteJSON(w, http.StatusBadRequest, map[string]any{"error": "updated_after is invalid"})
			return
		}
		after = t
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var items []any
	for i := len(f.pipelines) - 1; i >= 0; i-- { // order_by=id, sort=desc (GitLab's default)
		p := f.pipelines[i]
		if ref := q.Get("ref"); ref != "" && p.Ref != ref ||
			q.Get("source") != "" && p.Source != q.Get("source") ||
			!after.IsZero() && p.Updated.Before(after) {
			continue
		}
		items = append(items, f.pipelineJSON(p, false))
	}
	f.paginate(w, r, items)
}

func (f *fakeGitLab) listJobs(w http.ResponseWriter, r *http.Request, p *fakePipeline) {
	var items []any
	for i := len(p.Jobs) - 1; i >= 0; i-- { // newest first, as GitLab lists them
		j := p.Jobs[i]
		items = append(items, map[string]any{
			"id": j.ID, "status": j.Status, "stage": j.Stage, "name": j.Name, "ref": p.Ref, "tag": false,
			"coverage": nil, "allow_failure": j.AllowFailure, "created_at": p.Created.Format(time.RFC3339Nano),
			"started_at": nil, "finished_at": nil, "duration": nil, "queued_duration": nil,
			"user":      map[string]any{"id": 1, "username": "root"},
			"pipeline":  map[string]any{"id": p.ID, "project_id": 42, "ref": p.Ref, "sha": "a91957a858320c0e17f3a0eca7cfacbff50ea29a", "status": p.Status},
			"web_url":   fmt.Sprintf("%s/%s/-/jobs/%d", f.srv.URL, f.projectPath, j.ID),
			"artifacts": []any{}, "runner": nil, "tag_list": []string{},
		})
	}
	f.paginate(w, r, items)
}

func (f *fakeGitLab) artifact(w http.ResponseWriter, r *http.Request) {
	f.count("GET artifact")
	if !f.project(w, r, true) {
		return
	}
	id, _ := strconv.ParseInt(r.PathValue("jid"), 10, 64)
	f.mu.Lock()
	body, ok := f.artifacts[id]
	f.mu.Unlock()
	if !ok || r.PathValue("path") != "trueup-outputs.json" {
		actiontest.WriteJSON(w, http.StatusNotFound, map[string]any{"message": "404 Not found"})
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write([]byte(body))
}

// paginate answers one page of items with GitLab's offset-pagination headers.
func (f *fakeGitLab) paginate(w http.ResponseWriter, r *http.Request, items []any) {
	q := r.URL.Query()
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 20
	}
	per = min(per, f.maxPerPage)
	total := len(items)
	pages := max((total+per-1)/per, 1)
	lo, hi := min((page-1)*per, total), min(page*per, total)
	h := w.Header()
	h.Set("X-Page", strconv.Itoa(page))
	h.Set("X-Per-Page", strconv.Itoa(per))
	h.Set("X-Total", strconv.Itoa(total))
	h.Set("X-Total-Pages", strconv.Itoa(pages))
	h.Set("X-Next-Page", "")
	h.Set("X-Prev-Page", "")
	if page < pages {
		h.Set("X-Next-Page", strconv.Itoa(page+1))
		next := *r.URL
		nq := next.Query()
		nq.Set("page", strconv.Itoa(page+1))
		next.RawQuery = nq.Encode()
		h.Set("Link", fmt.Sprintf(`<%s%s>; rel="next"`, f.srv.URL, next.RequestURI()))
	}
	if page > 1 {
		h.Set("X-Prev-Page", strconv.Itoa(page-1))
	}
	out := items[lo:hi]
	if out == nil {
		out = []any{}
	}
	actiontest.WriteJSON(w, http.StatusOK, out)
}

func (f *fakeGitLab) pipelineJSON(p *fakePipeline, full bool) map[string]any {
	m := map[string]any{
		"id": p.ID, "iid": p.IID, "project_id": 42, "sha": "a91957a858320c0e17f3a0eca7cfacbff50ea29a",
		"ref": p.Ref, "status": p.Status, "source": p.Source,
		"created_at": p.Created.Format(time.RFC3339Nano), "updated_at": p.Updated.Format(time.RFC3339Nano),
		"web_url": f.webURL(p.ID), "name": nil,
	}
	if full {
		m["before_sha"] = "0000000000000000000000000000000000000000"
		m["tag"] = false
		m["yaml_errors"] = nil
		m["user"] = map[string]any{"id": 1, "username": "root", "name": "Administrator"}
		m["started_at"], m["finished_at"], m["committed_at"] = nil, nil, nil
		m["duration"], m["queued_duration"], m["coverage"] = nil, nil, nil
		m["detailed_status"] = map[string]any{"text": p.Status, "label": p.Status, "group": p.Status}
	}
	return m
}

func (f *fakeGitLab) webURL(id int64) string {
	return fmt.Sprintf("%s/%s/-/pipelines/%d", f.srv.URL, f.projectPath, id)
}

// setStatus moves a pipeline (and its jobs) to status, as runners would.
func (f *fakeGitLab) setStatus(id int64, status string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.pipelines {
		if p.ID == id {
			p.Status, p.Updated = status, time.Now().UTC()
		}
	}
}

// failJob marks one job of a pipeline failed.
func (f *fakeGitLab) failJob(id int64, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.pipelines {
		for i := range p.Jobs {
			if p.ID == id && p.Jobs[i].Name == name {
				p.Jobs[i].Status = "failed"
			}
		}
	}
}

func (f *fakeGitLab) pipeline(id int64) fakePipeline {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.pipelines {
		if p.ID == id {
			return *p
		}
	}
	return fakePipeline{}
}

func (f *fakeGitLab) last() fakePipeline {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.pipelines) == 0 {
		return fakePipeline{}
	}
	return *f.pipelines[len(f.pipelines)-1]
}

func (f *fakeGitLab) routeCount(route string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.routes[route]
}

func (f *fakeGitLab) requestCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

func (f *fakeGitLab) set(fn func(f *fakeGitLab)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
