// Package forgetest is a fake forge for tests and benchmarks of commit statuses and
// pull-request comments: an httptest.Server answering the few GitHub (and Gitea, under
// /api/v1) and GitLab endpoints trueup calls as those APIs do — the status codes, the JSON
// shapes, 404 for an unknown comment — and recording what it received.
package forgetest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
)

// Status is one commit status received.
type Status struct {
	SHA, State, Description, Context, TargetURL string
}

// Comment is one pull-request comment (merge-request note) as it stands.
type Comment struct {
	ID     int64
	Number int
	Body   string
	Edits  int
}

// Forge is the fake. Its fields are read through its methods.
type Forge struct {
	*httptest.Server
	Token  string
	GitLab bool
	// Fail, when set, may answer a request with an error status (its result, when not 0)
	// before it is handled, with the headers it sets in h (a Retry-After); set it before the
	// first request.
	Fail func(h http.Header, r *http.Request) int

	mu       sync.Mutex
	statuses []Status
	comments map[int64]*Comment
	nextID   int64
	changed  chan struct{}
}

var (
	ghStatus  = regexp.MustCompile(`^(?:/api/v1)?/repos/[^/]+/[^/]+/statuses/([0-9a-f]+)$`)
	ghCreate  = regexp.MustCompile(`^(?:/api/v1)?/repos/[^/]+/[^/]+/issues/([0-9]+)/comments$`)
	ghEdit    = regexp.MustCompile(`^(?:/api/v1)?/repos/[^/]+/[^/]+/issues/comments/([0-9]+)$`)
	glStatus  = regexp.MustCompile(`^/api/v4/projects/[^/]+/statuses/([0-9a-f]+)$`)
	glNotes   = regexp.MustCompile(`^/api/v4/projects/[^/]+/merge_requests/([0-9]+)/notes$`)
	glNoteOne = regexp.MustCompile(`^/api/v4/projects/[^/]+/merge_requests/([0-9]+)/notes/([0-9]+)$`)
)

// New starts a fake GitHub (gitlab false) or GitLab expecting token; Close it.
func New(token string, gitlab bool) *Forge {
	f := &Forge{Token: token, GitLab: gitlab, comments: map[int64]*Comment{}, nextID: 1000, changed: make(chan struct{}, 1)}
	f.Server = httptest.NewServer(f)
	return f
}

// Changed is signalled (coalesced) after every recorded request.
func (f *Forge) Changed() <-chan struct{} { return f.changed }

// Statuses returns the statuses received, in order.
func (f *Forge) Statuses() []Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Status(nil), f.statuses...)
}

// Comments returns the comments, by id order.
func (f *Forge) Comments() []Comment {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Comment
	for id := int64(1000); id < f.nextID; id++ {
		if c, ok := f.comments[id]; ok {
			out = append(out, *c)
		}
	}
	return out
}

// DeleteComments forgets every comment (someone deleted them on the forge).
func (f *Forge) DeleteComments() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.comments)
}

func (f *Forge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(r) {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		return
	}
	if f.Fail != nil {
		if code := f.Fail(w.Header(), r); code != 0 {
			writeJSON(w, code, map[string]string{"message": http.StatusText(code)})
			return
		}
	}
	path := r.URL.EscapedPath()
	f.mu.Lock()
	code, body := f.handle(r, path)
	f.mu.Unlock()
	writeJSON(w, code, body)
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

func (f *Forge) authorized(r *http.Request) bool {
	if f.GitLab {
		return r.Header.Get("PRIVATE-TOKEN") == f.Token
	}
	return r.Header.Get("Authorization") == "Bearer "+f.Token
}

// handle runs with f.mu held.
func (f *Forge) handle(r *http.Request, path string) (int, any) {
	if f.GitLab {
		if err := r.ParseForm(); err != nil {
			return http.StatusBadRequest, map[string]string{"message": err.Error()}
		}
		switch {
		case r.Method == http.MethodPost && glStatus.MatchString(path):
			m := glStatus.FindStringSubmatch(path)
			f.statuses = append(f.statuses, Status{SHA: m[1], State: r.PostForm.Get("state"), Description: r.PostForm.Get("description"),
				Context: r.PostForm.Get("name"), TargetURL: r.PostForm.Get("target_url")})
			return http.StatusCreated, map[string]any{"id": len(f.statuses), "status": r.PostForm.Get("state")}
		case r.Method == http.MethodPost && glNotes.MatchString(path):
			n, _ := strconv.Atoi(glNotes.FindStringSubmatch(path)[1])
			c := f.add(n, r.PostForm.Get("body"))
			return http.StatusCreated, map[string]any{"id": c.ID, "body": c.Body}
		case r.Method == http.MethodPut && glNoteOne.MatchString(path):
			id, _ := strconv.ParseInt(glNoteOne.FindStringSubmatch(path)[2], 10, 64)
			c, ok := f.comments[id]
			if !ok {
				return http.StatusNotFound, map[string]string{"message": "404 Not found"}
			}
			c.Body, c.Edits = r.PostForm.Get("body"), c.Edits+1
			return http.StatusOK, map[string]any{"id": c.ID, "body": c.Body}
		}
		return http.StatusNotFound, map[string]string{"message": "404 Not found"}
	}
	var in struct {
		State       string `json:"state"`
		Description string `json:"description"`
		Context     string `json:"context"`
		TargetURL   string `json:"target_url"`
		Body        string `json:"body"`
	}
	if r.Method != http.MethodGet {
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			return http.StatusBadRequest, map[string]string{"message": "Problems parsing JSON"}
		}
	}
	switch {
	case r.Method == http.MethodPost && ghStatus.MatchString(path):
		f.statuses = append(f.statuses, Status{SHA: ghStatus.FindStringSubmatch(path)[1], State: in.State, Description: in.Description,
			Context: in.Context, TargetURL: in.TargetURL})
		return http.StatusCreated, map[string]any{"id": len(f.statuses), "state": in.State, "context": in.Context}
	case r.Method == http.MethodPost && ghCreate.MatchString(path):
		n, _ := strconv.Atoi(ghCreate.FindStringSubmatch(path)[1])
		c := f.add(n, in.Body)
		return http.StatusCreated, f.ghComment(c)
	case r.Method == http.MethodPatch && ghEdit.MatchString(path):
		id, _ := strconv.ParseInt(ghEdit.FindStringSubmatch(path)[1], 10, 64)
		c, ok := f.comments[id]
		if !ok {
			return http.StatusNotFound, map[string]string{"message": "Not Found"}
		}
		c.Body, c.Edits = in.Body, c.Edits+1
		return http.StatusOK, f.ghComment(c)
	}
	return http.StatusNotFound, map[string]string{"message": "Not Found"}
}

func (f *Forge) add(number int, body string) *Comment {
	c := &Comment{ID: f.nextID, Number: number, Body: body}
	f.nextID++
	f.comments[c.ID] = c
	return c
}

func (f *Forge) ghComment(c *Comment) map[string]any {
	return map[string]any{"id": c.ID, "body": c.Body, "html_url": fmt.Sprintf("%s/acme/infra/pull/%d#issuecomment-%d", f.URL, c.Number, c.ID)}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
