package ghactions

import (
	"archive/zip"
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions/actiontest"
)

// fakeGitHub is an httptest.Server that behaves like the parts of GitHub's REST API the
// plugin uses: status codes and JSON shapes from GitHub's docs, Link-header pagination,
// ETag/304, rate-limit headers and errors, GitHub App token exchange.
type fakeGitHub struct {
	t   *testing.T
	srv *httptest.Server
	clk *testClock

	// Knobs; set before the first request (or under mu).
	token      string        // accepted static token
	runDetails bool          // answer dispatches with return_run_details: 200 + details (else 204)
	maxPerPage int           // caps per_page, to force pagination
	echoToken  bool          // a 401 quotes the bad credential (to prove scrubbing)
	strictBody bool          // refuse return_run_details like a GitHub Enterprise that predates it
	app        *fakeApp      // GitHub App; nil: the token endpoint answers 404
	visibleIn  time.Duration // a dispatched run shows in lists only after this long
	shapeRun   func(*fakeRun)
	// onDispatch runs (under mu) after a run was created, e.g. to start foreign runs.
	onDispatch func(*fakeRun)

	mu          sync.Mutex
	nextRunID   int64
	runs        []*fakeRun
	dispatches  int
	cancels     []int64
	requests    int // API requests, 304s included
	notModified int // 304 answers
	quota       int
	limit       *fakeLimit
	limited     int // requests answered with a rate-limit error
	refused     int // dispatches refused for return_run_details (strictBody)
	blobAuth    int // artifact blob requests that carried credentials
	tokens      map[string]time.Time
	exchanges   int
}

type fakeApp struct {
	appID, installationID int64
	key                   *rsa.PublicKey
	ttl                   time.Duration
}

type fakeLimit struct {
	kind  string // primary | 429 | secondary
	until time.Time
}

type fakeJob struct {
	Name       string
	Conclusion string
}

type fakeRun struct {
	ID         int64
	WorkflowID int64
	Workflow   string
	Title      string
	Inputs     map[string]string
	Ref        string
	Status     string
	Conclusion string
	Created    time.Time
	Visible    time.Time

	// CompleteAfter is the number of GETs of the run before it completes (0: complete at
	// creation; -1: only finish() completes it). Final is its conclusion.
	CompleteAfter int
	Final         string
	Jobs          []fakeJob
	// Outputs, when set, becomes a trueup-outputs artifact holding outputs.json; OutputsZip
	// replaces the whole zip.
	Outputs    []byte
	OutputsZip []byte

	gets    int
	version int
}

var fakeWorkflows = map[string]int64{"deploy.yml": 101, "delete.yml": 102, "check.yml": 103, "plan.yml": 104}

const (
	fakeOwner   = "acme"
	fakeRepo    = "infra"
	fakeSlow    = "slow" // a repository whose dispatches never answer
	fakeHTMLURL = "https://github.example/acme/infra/actions/runs/"
)

func newFakeGitHub(t *testing.T) *fakeGitHub {
	t.Helper()
	f := &fakeGitHub{
		t:          t,
		clk:        &testClock{},
		token:      "ghp_" + randomHex(18),
		runDetails: true,
		maxPerPage: 100,
		nextRunID:  7_000_000_001,
		quota:      5000,
		tokens:     map[string]time.Time{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /app/installations/{id}/access_tokens", f.accessToken)
	mux.HandleFunc("POST /repos/{owner}/{repo}/actions/workflows/{wf}/dispatches", f.api(f.dispatch))
	mux.HandleFunc("GET /repos/{owner}/{repo}/actions/workflows/{wf}/runs", f.api(f.listRuns))
	mux.HandleFunc("GET /repos/{owner}/{repo}/actions/runs/{id}", f.api(f.getRun))
	mux.HandleFunc("GET /repos/{owner}/{repo}/actions/runs/{id}/jobs", f.api(f.listJobs))
	mux.HandleFunc("GET /repos/{owner}/{repo}/actions/runs/{id}/artifacts", f.api(f.listArtifacts))
	mux.HandleFunc("POST /repos/{owner}/{repo}/actions/runs/{id}/cancel", f.api(f.cancel))
	mux.HandleFunc("GET /repos/{owner}/{repo}/actions/artifacts/{id}/zip", f.api(f.artifactZip))
	mux.HandleFunc("GET /blob/{id}", f.blob)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGitHub) now() time.Time { return f.clk.now() }

// config is a valid instance config pointing at the fake; extra keys are merged.
func (f *fakeGitHub) config(extra map[string]any) json.RawMessage {
	return actiontest.Config(f.t, map[string]any{
		"token": f.token, "owner": fakeOwner, "repo": fakeRepo, "ref": "main",
		"workflow": "deploy.yml", "baseURL": f.srv.URL + "/", "pollInterval": "5ms", "timeout": "5s",
	}, extra)
}

// api wraps an endpoint with what every API request goes through.
func (f *fakeGitHub) api(h func(w http.ResponseWriter, r *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests++
		if !f.authorized(r) {
			msg := "Bad credentials"
			if f.echoToken {
				msg += ": " + r.Header.Get("Authorization")
			}
			f.mu.Unlock()
			ghError(w, http.StatusUnauthorized, msg, "https://docs.github.com/rest")
			return
		}
		if l := f.limit; l != nil && time.Now().Before(l.until) {
			f.limited++
			f.mu.Unlock()
			f.writeLimit(w, l)
			return
		}
		f.mu.Unlock()
		if r.PathValue("owner") != fakeOwner || (r.PathValue("repo") != fakeRepo && r.PathValue("repo") != fakeSlow) {
			f.rateHeaders(w, true)
			notFound(w)
			return
		}
		h(w, r)
	}
}

func (f *fakeGitHub) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		tok, ok = strings.CutPrefix(h, "token ")
	}
	if !ok || tok == "" {
		return false
	}
	if f.app == nil {
		return tok == f.token
	}
	exp, ok := f.tokens[tok]
	return ok && f.now().Before(exp)
}

// rateHeaders sets GitHub's rate-limit headers; a counted request uses quota (a 304 does not).
func (f *fakeGitHub) rateHeaders(w http.ResponseWriter, counted bool) {
	f.mu.Lock()
	if counted && f.quota > 0 {
		f.quota--
	}
	remaining := f.quota
	f.mu.Unlock()
	h := w.Header()
	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Used", strconv.Itoa(5000-remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
}

func (f *fakeGitHub) writeLimit(w http.ResponseWriter, l *fakeLimit) {
	h := w.Header()
	wait := max(int(time.Until(l.until).Round(time.Second)/time.Second), 1)
	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Resource", "core")
	switch l.kind {
	case "primary":
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("X-RateLimit-Used", "5000")
		h.Set("X-RateLimit-Reset", strconv.FormatInt(l.until.Unix(), 10))
		ghError(w, http.StatusForbidden, "API rate limit exceeded for installation ID 4242.", "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-the-primary-rate-limit")
	case "429":
		h.Set("X-RateLimit-Remaining", "4000")
		h.Set("Retry-After", strconv.Itoa(wait))
		ghError(w, http.StatusTooManyRequests, "API rate limit exceeded", "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api")
	case "secondary":
		h.Set("X-RateLimit-Remaining", "4000")
		h.Set("Retry-After", strconv.Itoa(wait))
		ghError(w, http.StatusForbidden, "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.", "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits")
	default:
		panic("unknown limit kind " + l.kind)
	}
}

func (f *fakeGitHub) setLimit(kind string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if kind == "" {
		f.limit = nil
		return
	}
	f.limit = &fakeLimit{kind: kind, until: time.Now().Add(d)}
}

type dispatchBody struct {
	Ref              string          `json:"ref"`
	Inputs           json.RawMessage `json:"inputs"`
	ReturnRunDetails bool            `json:"return_run_details"`
}

func (f *fakeGitHub) dispatch(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("repo") == fakeSlow {
		// The server notices a client hang-up only once the body has been read.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
		return
	}
	wfID, wfName, ok := lookupWorkflow(r.PathValue("wf"))
	if !ok {
		f.rateHeaders(w, true)
		notFound(w)
		return
	}
	var body dispatchBody
	raw, _ := io.ReadAll(r.Body)
	if f.strictBody && bytes.Contains(raw, []byte(`"return_run_details"`)) {
		f.mu.Lock()
		f.refused++
		f.mu.Unlock()
		f.rateHeaders(w, true)
		unprocessable(w, "Invalid request.\n\n\"return_run_details\" is not a permitted key.")
		return
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		f.rateHeaders(w, true)
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Problems parsing JSON"})
		return
	}
	var inputs map[string]string
	if err := json.Unmarshal(body.Inputs, &inputs); err != nil {
		f.rateHeaders(w, true)
		unprocessable(w, "For 'properties/inputs', inputs must be strings.")
		return
	}
	switch {
	case body.Ref == "":
		f.rateHeaders(w, true)
		unprocessable(w, "Invalid request.\n\n\"ref\" wasn't supplied.")
		return
	case len(inputs) > 25:
		f.rateHeaders(w, true)
		unprocessable(w, fmt.Sprintf("you may only define up to 25 `inputs` for a `workflow_dispatch` event (%d given)", len(inputs)))
		return
	case len([]rune(string(body.Inputs))) > 65535:
		f.rateHeaders(w, true)
		unprocessable(w, "inputs are too large")
		return
	}
	f.mu.Lock()
	now := f.now()
	run := &fakeRun{
		ID: f.nextRunID, WorkflowID: wfID, Workflow: wfName, Title: inputs["trueup_id"], Inputs: inputs,
		Ref: body.Ref, Status: "queued", Created: now, Visible: now.Add(f.visibleIn), Final: "success",
		Jobs: []fakeJob{{Name: "deploy", Conclusion: "success"}}, version: 1,
	}
	f.nextRunID++
	if f.shapeRun != nil {
		f.shapeRun(run)
	}
	if run.CompleteAfter == 0 {
		run.complete(run.Final)
	} else {
		run.Status = "in_progress"
	}
	f.runs = append(f.runs, run)
	f.dispatches++
	if f.onDispatch != nil {
		f.onDispatch(run)
	}
	details := f.runDetails && body.ReturnRunDetails
	f.mu.Unlock()
	f.rateHeaders(w, true)
	if !details {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"workflow_run_id": run.ID,
		"run_url":         f.srv.URL + "/repos/acme/infra/actions/runs/" + strconv.FormatInt(run.ID, 10),
		"html_url":        fakeHTMLURL + strconv.FormatInt(run.ID, 10),
	})
}

// addRun creates a run that did not come from the plugin (another user's dispatch).
// Callers hold mu.
func (f *fakeGitHub) addRunLocked(workflow, title string, created time.Time) *fakeRun {
	id := fakeWorkflows[workflow]
	run := &fakeRun{ID: f.nextRunID, WorkflowID: id, Workflow: workflow, Title: title, Ref: "main",
		Status: "in_progress", Created: created, Visible: created, CompleteAfter: -1, Final: "success", version: 1}
	f.nextRunID++
	f.runs = append(f.runs, run)
	return run
}

func (r *fakeRun) complete(conclusion string) {
	r.Status, r.Conclusion = "completed", conclusion
	r.version++
}

func (r *fakeRun) etag() string { return fmt.Sprintf(`W/"%d-%d"`, r.ID, r.version) }

func (f *fakeGitHub) runJSON(r *fakeRun) map[string]any {
	id := strconv.FormatInt(r.ID, 10)
	api := f.srv.URL + "/repos/acme/infra/actions/runs/" + id
	var conclusion any
	if r.Conclusion != "" {
		conclusion = r.Conclusion
	}
	created := r.Created.UTC().Format(time.RFC3339)
	return map[string]any{
		"id":             r.ID,
		"name":           strings.TrimSuffix(r.Workflow, ".yml"),
		"node_id":        "WFR_" + id,
		"head_branch":    r.Ref,
		"head_sha":       "009b8a3a9ccbb128af87f9b1c0f4c62e8a304f6d",
		"path":           ".github/workflows/" + r.Workflow,
		"display_title":  r.Title,
		"run_number":     int(r.ID % 1000),
		"event":          "workflow_dispatch",
		"status":         r.Status,
		"conclusion":     conclusion,
		"workflow_id":    r.WorkflowID,
		"check_suite_id": r.ID + 1,
		"url":            api,
		"html_url":       fakeHTMLURL + id,
		"pull_requests":  []any{},
		"created_at":     created,
		"updated_at":     created,
		"run_attempt":    1,
		"run_started_at": created,
		"jobs_url":       api + "/jobs",
		"logs_url":       api + "/logs",
		"artifacts_url":  api + "/artifacts",
		"cancel_url":     api + "/cancel",
		"rerun_url":      api + "/rerun",
		"workflow_url":   f.srv.URL + "/repos/acme/infra/actions/workflows/" + strconv.FormatInt(r.WorkflowID, 10),
	}
}

func (f *fakeGitHub) findRunLocked(idText string) *fakeRun {
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil {
		return nil
	}
	for _, r := range f.runs {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// lockRun takes mu and finds the run of the path's {id}; with none it answers 404 and
// returns nil, mu released.
func (f *fakeGitHub) lockRun(w http.ResponseWriter, r *http.Request) *fakeRun {
	f.mu.Lock()
	run := f.findRunLocked(r.PathValue("id"))
	if run == nil {
		f.mu.Unlock()
		f.rateHeaders(w, true)
		notFound(w)
	}
	return run
}

func (f *fakeGitHub) getRun(w http.ResponseWriter, r *http.Request) {
	run := f.lockRun(w, r)
	if run == nil {
		return
	}
	run.gets++
	if run.Status != "completed" && run.CompleteAfter > 0 && run.gets >= run.CompleteAfter {
		run.complete(run.Final)
	}
	etag := run.etag()
	body := f.runJSON(run)
	if inm := r.Header.Get("If-None-Match"); inm != "" && inm == etag {
		f.notModified++
		f.mu.Unlock()
		f.rateHeaders(w, false)
		w.Header().Set("ETag", etag)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	f.mu.Unlock()
	f.rateHeaders(w, true)
	w.Header().Set("ETag", etag)
	writeJSON(w, http.StatusOK, body)
}

func (f *fakeGitHub) listRuns(w http.ResponseWriter, r *http.Request) {
	wfID, _, ok := lookupWorkflow(r.PathValue("wf"))
	if !ok {
		f.rateHeaders(w, true)
		notFound(w)
		return
	}
	q := r.URL.Query()
	var since time.Time
	if c := q.Get("created"); c != "" {
		t, err := time.Parse(time.RFC3339, strings.TrimPrefix(c, ">="))
		if !strings.HasPrefix(c, ">=") || err != nil {
			f.rateHeaders(w, true)
			unprocessable(w, "invalid created filter")
			return
		}
		since = t
	}
	f.mu.Lock()
	now := f.now()
	var match []*fakeRun
	for _, run := range f.runs {
		if run.WorkflowID != wfID || now.Before(run.Visible) || run.Created.Before(since) {
			continue
		}
		if e := q.Get("event"); e != "" && e != "workflow_dispatch" {
			continue
		}
		match = append(match, run)
	}
	// Newest first, as GitHub lists them.
	slices.SortStableFunc(match, func(a, b *fakeRun) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return int(b.ID - a.ID)
	})
	items := make([]any, 0, len(match))
	for _, run := range match {
		items = append(items, f.runJSON(run))
	}
	f.mu.Unlock()
	page := f.paginate(w, r, items)
	f.rateHeaders(w, true)
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(items), "workflow_runs": page})
}

func (f *fakeGitHub) listJobs(w http.ResponseWriter, r *http.Request) {
	run := f.lockRun(w, r)
	if run == nil {
		return
	}
	var items []any
	for i, j := range run.Jobs {
		id := run.ID*100 + int64(i)
		status, conclusion := "in_progress", any(nil)
		var completed any
		if run.Status == "completed" {
			status, conclusion = "completed", j.Conclusion
			completed = run.Created.Add(time.Duration(i+1) * time.Minute).UTC().Format(time.RFC3339)
		}
		items = append(items, map[string]any{
			"id": id, "run_id": run.ID, "run_url": f.srv.URL + "/repos/acme/infra/actions/runs/" + strconv.FormatInt(run.ID, 10),
			"node_id": "CR_" + strconv.FormatInt(id, 10), "head_sha": "009b8a3a9ccbb128af87f9b1c0f4c62e8a304f6d",
			"url":      f.srv.URL + "/repos/acme/infra/actions/jobs/" + strconv.FormatInt(id, 10),
			"html_url": "https://github.example/acme/infra/runs/" + strconv.FormatInt(id, 10),
			"status":   status, "conclusion": conclusion, "name": j.Name, "steps": []any{},
			"started_at":   run.Created.Add(time.Duration(i) * time.Minute).UTC().Format(time.RFC3339),
			"completed_at": completed, "labels": []string{"ubuntu-latest"}, "run_attempt": 1,
			"workflow_name": strings.TrimSuffix(run.Workflow, ".yml"), "head_branch": run.Ref,
		})
	}
	f.mu.Unlock()
	page := f.paginate(w, r, items)
	f.rateHeaders(w, true)
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(items), "jobs": page})
}

func (f *fakeGitHub) outputsZipLocked(run *fakeRun) []byte {
	if run.OutputsZip != nil {
		return run.OutputsZip
	}
	if run.Outputs == nil {
		return nil
	}
	return zipOf(f.t, map[string][]byte{"outputs.json": run.Outputs})
}

func (f *fakeGitHub) listArtifacts(w http.ResponseWriter, r *http.Request) {
	run := f.lockRun(w, r)
	if run == nil {
		return
	}
	items := []any{f.artifactJSON(run, run.ID*10, "build-logs", 2048)}
	if z := f.outputsZipLocked(run); z != nil {
		items = append(items, f.artifactJSON(run, run.ID*10+1, outputsArtifact, len(z)))
	}
	f.mu.Unlock()
	page := f.paginate(w, r, items)
	f.rateHeaders(w, true)
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(items), "artifacts": page})
}

func (f *fakeGitHub) artifactJSON(run *fakeRun, id int64, name string, size int) map[string]any {
	ids := strconv.FormatInt(id, 10)
	created := run.Created.UTC().Format(time.RFC3339)
	return map[string]any{
		"id": id, "node_id": "MDg6QXJ0aWZhY3Q" + ids, "name": name, "size_in_bytes": size,
		"url":                  f.srv.URL + "/repos/acme/infra/actions/artifacts/" + ids,
		"archive_download_url": f.srv.URL + "/repos/acme/infra/actions/artifacts/" + ids + "/zip",
		"expired":              false, "created_at": created, "updated_at": created,
		"expires_at": run.Created.Add(90 * 24 * time.Hour).UTC().Format(time.RFC3339),
		"workflow_run": map[string]any{"id": run.ID, "repository_id": 1296269, "head_repository_id": 1296269,
			"head_branch": run.Ref, "head_sha": "009b8a3a9ccbb128af87f9b1c0f4c62e8a304f6d"},
	}
}

func (f *fakeGitHub) artifactZip(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	f.mu.Lock()
	run := f.findRunLocked(strconv.FormatInt(id/10, 10))
	ok := run != nil && id%10 == 1 && f.outputsZipLocked(run) != nil
	f.mu.Unlock()
	f.rateHeaders(w, true)
	if !ok {
		notFound(w)
		return
	}
	// Like GitHub: a short-lived signed URL on another service.
	w.Header().Set("Location", f.srv.URL+"/blob/"+strconv.FormatInt(id, 10)+"?sig="+randomHex(8))
	w.WriteHeader(http.StatusFound)
}

func (f *fakeGitHub) blob(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	f.mu.Lock()
	if r.Header.Get("Authorization") != "" {
		f.blobAuth++
	}
	run := f.findRunLocked(strconv.FormatInt(id/10, 10))
	var z []byte
	if run != nil {
		z = f.outputsZipLocked(run)
	}
	f.mu.Unlock()
	if r.URL.Query().Get("sig") == "" || z == nil {
		http.Error(w, "AuthenticationFailed", http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "application/zip")
	_, _ = w.Write(z)
}

func (f *fakeGitHub) cancel(w http.ResponseWriter, r *http.Request) {
	run := f.lockRun(w, r)
	if run == nil {
		return
	}
	if run.Status == "completed" {
		f.mu.Unlock()
		f.rateHeaders(w, true)
		ghError(w, http.StatusConflict, "Cannot cancel a workflow run that is completed.", "https://docs.github.com/rest/actions/workflow-runs#cancel-a-workflow-run")
		return
	}
	run.complete("cancelled")
	f.cancels = append(f.cancels, run.ID)
	f.mu.Unlock()
	f.rateHeaders(w, true)
	writeJSON(w, http.StatusAccepted, map[string]any{})
}

// finish completes a run held by CompleteAfter: -1.
func (f *fakeGitHub) finish(id int64, conclusion string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	run := f.findRunLocked(strconv.FormatInt(id, 10))
	if run == nil {
		f.t.Fatalf("finish: no run %d", id)
	}
	run.complete(conclusion)
}

func (f *fakeGitHub) accessToken(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.app == nil {
		notFound(w)
		return
	}
	jwt, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "A JSON web token could not be decoded"})
		return
	}
	if err := f.verifyJWT(jwt); err != nil {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": err.Error(), "documentation_url": "https://docs.github.com/rest"})
		return
	}
	if r.PathValue("id") != strconv.FormatInt(f.app.installationID, 10) {
		notFound(w)
		return
	}
	tok := "ghs_" + randomHex(18)
	exp := f.now().Add(f.app.ttl).UTC().Truncate(time.Second)
	f.tokens[tok] = exp
	f.exchanges++
	writeJSON(w, http.StatusCreated, map[string]any{
		"token": tok, "expires_at": exp.Format(time.RFC3339),
		"permissions": map[string]string{"actions": "write", "metadata": "read"}, "repository_selection": "selected",
	})
}

// verifyJWT checks the App JWT like GitHub: RS256 signed by the App's key, iss = app id,
// iat in the past, exp in the future and at most 10 minutes after iat.
func (f *fakeGitHub) verifyJWT(jwt string) error {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return fmt.Errorf("A JSON web token could not be decoded")
	}
	var header struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
	}
	if err := decodeSegment(parts[0], &header); err != nil || header.Alg != "RS256" {
		return fmt.Errorf("'alg' must be RS256")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return fmt.Errorf("A JSON web token could not be decoded")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(f.app.key, crypto.SHA256, digest[:], sig); err != nil {
		return fmt.Errorf("'Issuer' claim ('iss') must be an Integer or bad signature")
	}
	var claims struct {
		Iat int64           `json:"iat"`
		Exp int64           `json:"exp"`
		Iss json.RawMessage `json:"iss"`
	}
	if err := decodeSegment(parts[1], &claims); err != nil {
		return fmt.Errorf("A JSON web token could not be decoded")
	}
	iss := strings.Trim(string(claims.Iss), `"`)
	now := f.now().Unix()
	switch {
	case iss != strconv.FormatInt(f.app.appID, 10):
		return fmt.Errorf("Integration not found")
	case claims.Iat > now+1:
		return fmt.Errorf("'Issued at' claim ('iat') must be an Integer representing a time in the past")
	case claims.Exp <= now:
		return fmt.Errorf("'Expiration time' claim ('exp') is too far in the past")
	case claims.Exp-claims.Iat > 600:
		return fmt.Errorf("'Expiration time' claim ('exp') is too far in the future")
	}
	return nil
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// paginate cuts items to the requested page and sets GitHub's Link header.
func (f *fakeGitHub) paginate(w http.ResponseWriter, r *http.Request, items []any) []any {
	q := r.URL.Query()
	per := 30
	if v, err := strconv.Atoi(q.Get("per_page")); err == nil && v > 0 {
		per = min(v, 100)
	}
	per = min(per, f.maxPerPage)
	page := 1
	if v, err := strconv.Atoi(q.Get("page")); err == nil && v > 0 {
		page = v
	}
	last := max((len(items)+per-1)/per, 1)
	link := func(p int, rel string) string {
		u := *r.URL
		u.Scheme, u.Host = "http", r.Host
		qq := u.Query()
		qq.Set("page", strconv.Itoa(p))
		qq.Set("per_page", strconv.Itoa(per))
		u.RawQuery = qq.Encode()
		return fmt.Sprintf("<%s>; rel=%q", u.String(), rel)
	}
	var links []string
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"), link(page-1, "prev"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	lo := min((page-1)*per, len(items))
	hi := min(lo+per, len(items))
	return items[lo:hi]
}

// counters returns a snapshot of the fake's bookkeeping.
func (f *fakeGitHub) counters() (requests, dispatches, notModified, limited int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests, f.dispatches, f.notModified, f.limited
}

func (f *fakeGitHub) runsSnapshot() []fakeRun {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]fakeRun, 0, len(f.runs))
	for _, r := range f.runs {
		out = append(out, *r)
	}
	return out
}

// eachDispatchAnswer runs test as parallel subtests on a fake that answers a dispatch with
// the run's details and on one that answers 204 without them.
func eachDispatchAnswer(t *testing.T, test func(t *testing.T, f *fakeGitHub)) {
	for _, details := range []bool{true, false} {
		t.Run("runDetails="+strconv.FormatBool(details), func(t *testing.T) {
			t.Parallel()
			f := newFakeGitHub(t)
			f.runDetails = details
			test(t, f)
		})
	}
}

func lookupWorkflow(wf string) (int64, string, bool) {
	if id, ok := fakeWorkflows[wf]; ok {
		return id, wf, true
	}
	if n, err := strconv.ParseInt(wf, 10, 64); err == nil {
		for name, id := range fakeWorkflows {
			if id == n {
				return id, name, true
			}
		}
	}
	return 0, "", false
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// ghError answers like GitHub's REST API does on an error: the message, a link to the docs
// and the status code as a string.
func ghError(w http.ResponseWriter, code int, message, docs string) {
	writeJSON(w, code, map[string]any{"message": message, "documentation_url": docs, "status": strconv.Itoa(code)})
}

func notFound(w http.ResponseWriter) {
	ghError(w, http.StatusNotFound, "Not Found", "https://docs.github.com/rest")
}

func unprocessable(w http.ResponseWriter, msg string) {
	ghError(w, http.StatusUnprocessableEntity, msg, "https://docs.github.com/rest/actions/workflows#create-a-workflow-dispatch-event")
}

func zipOf(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fw, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write(files[n]); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// testClock is a clock the test can move forward; the fake and the action share it.
type testClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}
