package server

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Limits that keep API and dashboard clients from slowing the engine (DESIGN §9): requests
// read through their own small database pool (cmd/trueup opens one for the server), at most
// Options.MaxInFlight of them run at once (default defaultMaxInFlight) — the others wait their
// turn for up to queueWait, then get 503 with Retry-After — and each client holds at most
// maxWatchesPerClient watch streams.
//
// One at a time by default: on a 2-core machine, 500 clients sending request after request
// took 34–50% of reconcile throughput with 2 or 4 in flight, and 0–12% with 1 (make bench,
// reconcile_api_load_drop), while one request at a time still serves 100–170 requests/s.
const (
	defaultMaxInFlight  = 1
	queueWait           = 5 * time.Second
	maxWatchesPerClient = 16
)

// limiter bounds the API and dashboard requests running at once. Health checks, webhooks
// (which write one row and return) and watch streams (bounded per client) pass by.
type limiter struct {
	slots chan struct{}
	wait  time.Duration
}

func newLimiter(n int, wait time.Duration) *limiter {
	return &limiter{slots: make(chan struct{}, n), wait: wait}
}

func exempt(path string) bool {
	return path == "/healthz" || path == "/readyz" || path == "/metrics" || path == "/api/v1/watch" ||
		strings.HasPrefix(path, "/hooks/") || strings.HasPrefix(path, "/static/")
}

func (l *limiter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if exempt(r.URL.Path) {
			h.ServeHTTP(w, r)
			return
		}
		t := time.NewTimer(l.wait)
		defer t.Stop()
		select {
		case l.slots <- struct{}{}:
		case <-r.Context().Done():
			return
		case <-t.C:
			w.Header().Set("Retry-After", strconv.Itoa(1))
			writeError(w, http.StatusServiceUnavailable, "too many requests at once; retry shortly")
			return
		}
		defer func() { <-l.slots }()
		h.ServeHTTP(w, r)
	})
}

// streams counts the watch streams each client holds.
type streams struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

// clientKey names who holds a stream: the authenticated identity when there is one, else the
// remote address (without its port).
func clientKey(r *http.Request) string {
	if id := identity(r); id.Kind != "" && id.Kind != "anonymous" {
		return id.Actor()
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// acquire takes a stream for the client, or reports false when it holds max already.
func (s *streams) acquire(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[key] >= s.max {
		return false
	}
	s.n[key]++
	return true
}

func (s *streams) release(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[key]--; s.n[key] <= 0 {
		delete(s.n, key)
	}
}

func (s *streams) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := clientKey(r)
		if !s.acquire(key) {
			w.Header().Set("Retry-After", "5")
			writeError(w, http.StatusTooManyRequests, "too many watch streams from this client (at most "+strconv.Itoa(s.max)+")")
			return
		}
		defer s.release(key)
		h.ServeHTTP(w, r)
	})
}
