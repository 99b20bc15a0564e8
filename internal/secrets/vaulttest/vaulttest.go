// Package vaulttest is a fake HashiCorp Vault on loopback for tests: KV v2 reads, token
// checks, AppRole login, the namespace header, and a switch that makes it answer 503 as a
// sealed Vault does. Status codes and JSON shapes follow the real API, `errors` arrays
// included, so the client under test meets what it would meet in production.
package vaulttest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Server is the fake. Configure it with its methods before or while the client runs.
type Server struct {
	URL string

	// Namespace, when set, is the X-Vault-Namespace every request must carry; tokens are
	// valid in it only (a request for another namespace gets 403, as in Vault Enterprise).
	Namespace string

	mu      sync.Mutex
	kv      map[string]map[string]any // "mount/path" → data
	tokens  map[string]time.Time      // token → expiry (zero: never)
	roles   map[string]string         // role ID → secret ID
	mounts  map[string]bool           // KV v2 mounts
	amount  string                    // AppRole mount
	ttl     time.Duration             // lease of AppRole tokens
	down    atomic.Bool
	reads   atomic.Int64
	logins  atomic.Int64
	headers []http.Header
}

// New starts the fake with a KV v2 engine at "secret" and AppRole at "approle", and stops it
// at the end of the test.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{
		kv:     map[string]map[string]any{},
		tokens: map[string]time.Time{},
		roles:  map[string]string{},
		mounts: map[string]bool{"secret": true},
		amount: "approle",
		ttl:    time.Hour,
	}
	ts := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(ts.Close)
	s.URL = ts.URL
	return s
}

// Put writes a secret at mount/path (KV v2 path without "data/").
func (s *Server) Put(mount, path string, data map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mounts[mount] = true
	s.kv[mount+"/"+path] = data
}

// AddToken makes tok valid until expiry (zero: forever).
func (s *Server) AddToken(tok string, expiry time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[tok] = expiry
}

// AddRole accepts an AppRole login with roleID and secretID; tokens it hands out last ttl.
func (s *Server) AddRole(roleID, secretID string, ttl time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roles[roleID] = secretID
	s.ttl = ttl
}

// RevokeAll invalidates every token, as `vault token revoke` or a restore would.
func (s *Server) RevokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = map[string]time.Time{}
}

// SetDown makes every request answer 503 with Vault's sealed error (true) or not.
func (s *Server) SetDown(down bool) { s.down.Store(down) }

// Reads counts KV reads that reached the fake (whatever their answer).
func (s *Server) Reads() int { return int(s.reads.Load()) }

// Logins counts AppRole logins attempted.
func (s *Server) Logins() int { return int(s.logins.Load()) }

// Headers returns the headers of every request received, in order.
func (s *Server) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.headers = append(s.headers, r.Header.Clone())
	s.mu.Unlock()
	if s.down.Load() {
		writeErrors(w, http.StatusServiceUnavailable, "Vault is sealed")
		return
	}
	p, ok := strings.CutPrefix(r.URL.Path, "/v1/")
	if !ok {
		writeErrors(w, http.StatusNotFound)
		return
	}
	if login, ok := strings.CutPrefix(p, "auth/"); ok {
		s.login(w, r, login)
		return
	}
	s.readKV(w, r, p)
}

func (s *Server) login(w http.ResponseWriter, r *http.Request, p string) {
	if p != s.amount+"/login" {
		writeErrors(w, http.StatusNotFound, "no handler for route \"auth/"+p+"\". route entry not found.")
		return
	}
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		writeErrors(w, http.StatusMethodNotAllowed, "1 error occurred:\n\t* unsupported operation\n\n")
		return
	}
	s.logins.Add(1)
	var body struct {
		RoleID   string `json:"role_id"`
		SecretID string `json:"secret_id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeErrors(w, http.StatusBadRequest, "failed to parse JSON input: "+err.Error())
		return
	}
	if s.Namespace != "" && r.Header.Get("X-Vault-Namespace") != s.Namespace {
		writeErrors(w, http.StatusBadRequest, "invalid role or secret ID")
		return
	}
	s.mu.Lock()
	want, known := s.roles[body.RoleID]
	ttl := s.ttl
	s.mu.Unlock()
	if body.RoleID == "" {
		writeErrors(w, http.StatusBadRequest, "missing role_id")
		return
	}
	if !known || want != body.SecretID {
		writeErrors(w, http.StatusBadRequest, "invalid role or secret ID")
		return
	}
	tok := "hvs." + randomHex()
	s.AddToken(tok, time.Now().Add(ttl))
	writeJSON(w, http.StatusOK, map[string]any{
		"request_id": randomHex(), "lease_id": "", "renewable": false, "lease_duration": 0,
		"data": nil, "wrap_info": nil, "warnings": nil,
		"auth": map[string]any{
			"client_token": tok, "accessor": randomHex(), "policies": []string{"default", "trueup"},
			"token_policies": []string{"default", "trueup"}, "metadata": map[string]string{"role_name": "trueup"},
			"lease_duration": int64(ttl / time.Second), "renewable": true, "entity_id": randomHex(),
			"token_type": "service", "orphan": true,
		},
	})
}

func (s *Server) readKV(w http.ResponseWriter, r *http.Request, p string) {
	s.reads.Add(1)
	if !s.tokenValid(r) {
		writeErrors(w, http.StatusForbidden, "permission denied")
		return
	}
	mount, rest, ok := strings.Cut(p, "/data/")
	s.mu.Lock()
	isKV := s.mounts[mount]
	data, found := s.kv[mount+"/"+rest]
	s.mu.Unlock()
	if !ok || !isKV {
		writeErrors(w, http.StatusNotFound, "no handler for route \""+p+"\". route entry not found.")
		return
	}
	if r.Method != http.MethodGet {
		writeErrors(w, http.StatusMethodNotAllowed, "1 error occurred:\n\t* unsupported operation\n\n")
		return
	}
	if !found {
		writeErrors(w, http.StatusNotFound) // KV v2 answers a missing secret with "errors": []
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"request_id": randomHex(), "lease_id": "", "renewable": false, "lease_duration": 0,
		"data": map[string]any{
			"data": data,
			"metadata": map[string]any{
				"created_time": "2026-01-01T00:00:00.000000Z", "custom_metadata": nil,
				"deletion_time": "", "destroyed": false, "version": 1,
			},
		},
		"wrap_info": nil, "warnings": nil, "auth": nil,
	})
}

func (s *Server) tokenValid(r *http.Request) bool {
	if s.Namespace != "" && r.Header.Get("X-Vault-Namespace") != s.Namespace {
		return false
	}
	tok := r.Header.Get("X-Vault-Token")
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.tokens[tok]
	return ok && tok != "" && (exp.IsZero() || time.Now().Before(exp))
}

func writeErrors(w http.ResponseWriter, status int, errs ...string) {
	if errs == nil {
		errs = []string{}
	}
	writeJSON(w, status, map[string]any{"errors": errs})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func randomHex() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
