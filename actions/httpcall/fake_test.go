package httpcall

import (
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/trueup-dev/trueup/actions/actiontest"
)

// fakeProvisioner is an httptest.Server behaving like an asynchronous provisioning API: it
// checks the bearer token and the HMAC signature of every request, dedupes requests by
// Idempotency-Key, answers 202 with a Location (or 200 with outputs in sync mode), serves
// job status at that Location, and can be scripted to fail first.
type fakeProvisioner struct {
	t      *testing.T
	srv    *httptest.Server
	token  string // expected in Authorization: Bearer
	secret string // HMAC key

	mu        sync.Mutex
	sync      bool // answer 200 with outputs instead of 202 + Location
	requests  []recorded
	badSigs   int
	jobs      map[int]*fakeJob
	byKey     map[string]int
	resources map[string]bool // namespace/kind/name that exist
	// script holds answers given before the normal behaviour, one per request.
	script []scripted
}

type recorded struct {
	Method string
	Path   string // escaped
	Header http.Header
	Body   []byte
}

type fakeJob struct {
	Status  string
	Message string
	Outputs map[string]any
	Op      string
	Res     string
	// Polls counts the status reads of a plan job: it reports running twice, then done.
	Polls int
}

type scripted struct {
	status int
	header map[string]string
	body   string
}

func newFakeProvisioner(t *testing.T) *fakeProvisioner {
	t.Helper()
	f := &fakeProvisioner{
		t:         t,
		token:     "prov-TOKEN-s3cr3t-0123456789",
		secret:    "signing-SECRET-abcdef",
		jobs:      map[int]*fakeJob{},
		byKey:     map[string]int{},
		resources: map[string]bool{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/resources/", f.resource)
	mux.HandleFunc("/api/resources", f.resource)
	mux.HandleFunc("GET /api/jobs/{id}", f.job)
	f.srv = httptest.NewServer(f.check(mux))
	t.Cleanup(f.srv.Close)
	return f
}

// config is a valid instance config for this server.
func (f *fakeProvisioner) config(extra map[string]any) json.RawMessage {
	return actiontest.Config(f.t, map[string]any{
		"url":           f.srv.URL + "/api/resources",
		"headers":       map[string]string{"Authorization": "Bearer " + f.token, "X-Team": "db"},
		"signingSecret": f.secret,
		"timeout":       "5s",
		"pollInterval":  "10ms",
		"retry":         map[string]any{"attempts": 3, "initial": "100ms"},
	}, extra)
}

func (f *fakeProvisioner) check(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.requests = append(f.requests, recorded{Method: r.Method, Path: r.URL.EscapedPath(), Header: r.Header.Clone(), Body: body})
		want := sign([]byte(f.secret), body)
		if !hmac.Equal([]byte(r.Header.Get("X-Trueup-Signature-256")), []byte(want)) {
			f.badSigs++
			f.mu.Unlock()
			actiontest.WriteJSON(w, http.StatusUnauthorized, map[string]any{"error": "bad signature"})
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+f.token {
			f.mu.Unlock()
			actiontest.WriteJSON(w, http.StatusUnauthorized, map[string]any{"error": "bad token"})
			return
		}
		if len(f.script) > 0 {
			s := f.script[0]
			f.script = f.script[1:]
			f.mu.Unlock()
			for k, v := range s.header {
				w.Header().Set(k, v)
			}
			if s.header["Content-Type"] == "" {
				w.Header().Set("Content-Type", "application/json")
			}
			w.WriteHeader(s.status)
			_, _ = io.WriteString(w, s.body)
			return
		}
		f.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		next.ServeHTTP(w, r)
	})
}

func (f *fakeProvisioner) resource(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Operation string `json:"operation"`
		Resource  struct {
			Kind, Namespace, Name string
			Spec                  map[string]any
		} `json:"resource"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		actiontest.WriteJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	id := req.Resource.Namespace + "/" + req.Resource.Kind + "/" + req.Resource.Name
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == http.MethodDelete && req.Operation == "delete":
		if !f.resources[id] {
			actiontest.WriteJSON(w, http.StatusNotFound, map[string]any{"error": "no such resource"})
			return
		}
	case r.Method == http.MethodPost && req.Operation == "reconcile":
	case r.Method == http.MethodPost && req.Operation == "plan":
		f.plan(w, r, id, req.Resource.Spec)
		return
	default:
		actiontest.WriteJSON(w, http.StatusMethodNotAllowed, map[string]any{"error": "method and operation disagree"})
		return
	}
	outputs := map[string]any{"endpoint": req.Resource.Name + ".db.internal", "port": 5432}
	if f.sync {
		f.apply(req.Operation, id)
		actiontest.WriteJSON(w, http.StatusOK, map[string]any{"outputs": outputs, "message": "applied"})
		return
	}
	key := r.Header.Get("Idempotency-Key")
	n, ok := f.byKey[key]
	if !ok {
		n = len(f.jobs) + 1
		f.jobs[n] = &fakeJob{Status: "pending", Outputs: outputs, Op: req.Operation, Res: id}
		f.byKey[key] = n
	}
	w.Header().Set("Location", "/api/jobs/"+strconv.Itoa(n))
	actiontest.WriteJSON(w, http.StatusAccepted, map[string]any{"status": "pending"})
}

// plan answers a plan request (f.mu held), with counts and, for a creation, a hash:
// nothing is created; in async mode the answer comes from a job whose status is read three
// times.
func (f *fakeProvisioner) plan(w http.ResponseWriter, r *http.Request, id string, spec map[string]any) {
	answer := map[string]any{"status": "done", "changes": true, "summary": "1 to add, 0 to change, 0 to destroy",
		"plan": fmt.Sprintf("+ %s (storage_gb=%v)", id, spec["storage_gb"]), "add": 1, "change": 0, "destroy": 0,
		"hash": fmt.Sprintf("create-%v", spec["storage_gb"])}
	if f.resources[id] {
		answer = map[string]any{"status": "done", "changes": false, "summary": "no changes", "plan": "", "add": 0}
	}
	if f.sync {
		actiontest.WriteJSON(w, http.StatusOK, answer)
		return
	}
	n := len(f.jobs) + 1
	f.jobs[n] = &fakeJob{Status: "running", Outputs: answer, Op: "plan", Res: id}
	w.Header().Set("Location", "/api/jobs/"+strconv.Itoa(n))
	actiontest.WriteJSON(w, http.StatusAccepted, map[string]any{"status": "running"})
}

func (f *fakeProvisioner) apply(op, id string) {
	f.resources[id] = op == "reconcile"
}

func (f *fakeProvisioner) job(w http.ResponseWriter, r *http.Request) {
	n, _ := strconv.Atoi(r.PathValue("id"))
	f.mu.Lock()
	defer f.mu.Unlock()
	j, ok := f.jobs[n]
	if !ok {
		actiontest.WriteJSON(w, http.StatusNotFound, map[string]any{"error": "no such job"})
		return
	}
	if j.Op == "plan" {
		j.Polls++
		if j.Polls <= 2 {
			actiontest.WriteJSON(w, http.StatusOK, map[string]any{"status": "running"})
			return
		}
		actiontest.WriteJSON(w, http.StatusOK, j.Outputs)
		return
	}
	switch j.Status {
	case "done":
		f.apply(j.Op, j.Res)
		actiontest.WriteJSON(w, http.StatusOK, map[string]any{"status": "done", "outputs": j.Outputs})
	case "failed":
		actiontest.WriteJSON(w, http.StatusOK, map[string]any{"status": "failed", "message": j.Message})
	default:
		w.Header().Set("Retry-After", "1")
		actiontest.WriteJSON(w, http.StatusOK, map[string]any{"status": j.Status})
	}
}

// setJob moves job n (1-based) to status.
func (f *fakeProvisioner) setJob(n int, status, message string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jobs[n].Status, f.jobs[n].Message = status, message
}

func (f *fakeProvisioner) jobCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.jobs)
}

func (f *fakeProvisioner) push(s ...scripted) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script = append(f.script, s...)
}

func (f *fakeProvisioner) recorded() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.requests...)
}

func (f *fakeProvisioner) last() recorded {
	r := f.recorded()
	if len(r) == 0 {
		return recorded{}
	}
	return r[len(r)-1]
}

func (f *fakeProvisioner) badSignatures() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.badSigs
}

func (f *fakeProvisioner) jobURL(n int) string { return fmt.Sprintf("%s/api/jobs/%d", f.srv.URL, n) }
