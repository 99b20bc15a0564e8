package server

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

func TestLimiterQueuesThenRefuses(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
	})
	h := newLimiter(1, 200*time.Millisecond).wrap(slow)
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/resources", nil))
			codes[i] = rec.Code
		}()
		if i == 0 {
			<-started // the first holds the only slot
		}
	}
	time.Sleep(400 * time.Millisecond) // the second waited its queueWait out
	close(release)
	wg.Wait()
	if codes[0] != http.StatusOK || codes[1] != http.StatusServiceUnavailable {
		t.Fatalf("codes = %v, want [200 503]", codes)
	}
	// Health checks and watch streams never queue.
	rec := httptest.NewRecorder()
	newLimiter(0, time.Millisecond).wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("healthz queued: %d", rec.Code)
	}
}

func TestWatchStreamsPerClient(t *testing.T) {
	s := &streams{max: 2, n: map[string]int{}}
	hold := make(chan struct{})
	var wg sync.WaitGroup
	h := s.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hold }))
	req := func(addr string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/watch", nil)
		r.RemoteAddr = addr
		return r
	}
	for _, addr := range []string{"10.0.0.1:1000", "10.0.0.1:1001", "10.0.0.2:1000"} {
		wg.Add(1)
		go func() { defer wg.Done(); h.ServeHTTP(httptest.NewRecorder(), req(addr)) }()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		n := s.n["10.0.0.1"] + s.n["10.0.0.2"]
		s.mu.Unlock()
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("streams not held: %v", s.n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req("10.0.0.1:1002"))
	if rec.Code != http.StatusTooManyRequests {
		t.Fatalf("third stream of one client: %d, want 429", rec.Code)
	}
	close(hold)
	wg.Wait()
	if len(s.n) != 0 {
		t.Fatalf("streams not released: %v", s.n)
	}
}
