package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
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

func TestSharedReadsRunOnceAndFollowWrites(t *testing.T) {
	var runs atomic.Int32
	release := make(chan struct{})
	joined := make(chan struct{}, 16)
	entered := make(chan struct{})
	sh := &shared{joined: joined}
	h := sh.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			return
		}
		n := runs.Add(1)
		if n == 1 {
			close(entered)
			<-release
		}
		writeJSON(w, http.StatusOK, map[string]int32{"run": n})
	}))
	get := func(path string) string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Body.String()
	}
	// Eight identical reads while the first is being served: one run, eight copies.
	var wg sync.WaitGroup
	bodies := make([]string, 8)
	for i := range bodies {
		wg.Add(1)
		go func() { defer wg.Done(); bodies[i] = get("/api/v1/resources?limit=5") }()
	}
	<-entered
	for range bodies {
		<-joined
	}
	close(release)
	wg.Wait()
	shared := 0
	for _, b := range bodies {
		if strings.Contains(b, `"run":1`) {
			shared++
		}
	}
	if shared < 2 {
		t.Fatalf("bodies = %q, want copies of run 1", bodies)
	}
	// A read that comes after the answer was made runs again.
	before := runs.Load()
	if b := get("/api/v1/resources?limit=5"); !strings.Contains(b, fmt.Sprintf(`"run":%d`, before+1)) {
		t.Fatalf("read after the answer: %s, want run %d", b, before+1)
	}
	// A write starts a new generation: the next read runs again, however recent the answer.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/resources/ns/Widget/a/reconcile", nil))
	if b := get("/api/v1/resources?limit=5"); strings.Contains(b, `"run":1`) {
		t.Fatalf("read after a write got the answer from before it: %s", b)
	}
	// Other URLs and paths outside the API are never shared.
	if a, b := get("/api/v1/resources?limit=6"), get("/api/v1/resources?limit=7"); a == b {
		t.Fatalf("different URLs shared an answer: %s", a)
	}
}

func TestPacerHoldsTheAPIOnlyWhileTheEngineIsBusy(t *testing.T) {
	var busy atomic.Bool
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	p := newPacer(func(context.Context) (bool, error) { return busy.Load(), nil }, 1, 1, 0)
	h := p.wrap(ok)
	code := func() int {
		p.checked.Store(0) // read the engine's state at every request
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/resources", nil))
		return rec.Code
	}
	for i := 0; i < 3; i++ {
		if c := code(); c != http.StatusOK {
			t.Fatalf("idle engine, request %d: %d", i, c)
		}
	}
	// The idle engine's requests took the tokens: the busy engine's first request is past
	// the rate (no burst let through at once).
	busy.Store(true)
	rec := httptest.NewRecorder()
	p.checked.Store(0)
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/resources", nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("busy engine past its rate: %d %v, want 503 with Retry-After", rec.Code, rec.Header())
	}
	busy.Store(false)
	if c := code(); c != http.StatusOK {
		t.Fatalf("engine idle again: %d", c)
	}
}

// While the engine is busy the handler runs are paced apart from the requests: reads of an
// answer in progress take it without a run of their own, a read that needs a run past the
// runs' rate is refused though the requests' rate has room.
func TestPacerPacesHandlerRunsInsideShared(t *testing.T) {
	var runs atomic.Int32
	entered, release := make(chan struct{}), make(chan struct{})
	p := newPacer(func(context.Context) (bool, error) { return true, nil }, 1000, 1, 0)
	p.runs = rate.NewLimiter(rate.Every(time.Hour), 1) // one run, then none for the test's length
	joined := make(chan struct{}, 16)
	sh := &shared{joined: joined}
	h := p.wrap(sh.wrap(p.wrapRuns(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if runs.Add(1) == 1 {
			close(entered)
			<-release
		}
		writeJSON(w, http.StatusOK, map[string]string{"path": r.URL.RequestURI()})
	}))))
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	var wg sync.WaitGroup
	codes := make([]int, 6)
	wg.Go(func() { codes[0] = get("/api/v1/resources?limit=5").Code })
	<-entered // the first read took the runs' one token
	for i := 1; i < len(codes); i++ {
		wg.Go(func() { codes[i] = get("/api/v1/resources?limit=5").Code })
	}
	for range codes {
		<-joined
	}
	if rec := get("/api/v1/resources?limit=6"); rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("another read past the runs' rate: %d %v, want 503 with Retry-After", rec.Code, rec.Header())
	}
	close(release)
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusOK {
			t.Errorf("read %d: %d", i, c)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("%d handler runs for %d identical reads, want 1", n, len(codes))
	}
}

// Only the reads that can share wait for a handler run: writes and dashboard pages go on the
// requests' rate alone, however many runs the API reads have taken.
func TestPacerPacesRunsOfSharedReadsOnly(t *testing.T) {
	p := newPacer(func(context.Context) (bool, error) { return true, nil }, 1000, 1, 0)
	p.runs = rate.NewLimiter(rate.Every(time.Hour), 1)
	p.runs.Allow() // no run left
	h := p.wrap((&shared{}).wrap(p.wrapRuns(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))))
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{http.MethodPost, "/api/v1/resources/ns/Widget/a/reconcile", http.StatusOK},
		{http.MethodGet, "/resources", http.StatusOK},
		{http.MethodPost, "/resources/ns/Widget/a/reconcile", http.StatusOK},
		{http.MethodGet, "/api/v1/resources?limit=5", http.StatusServiceUnavailable},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, rec.Code, tc.want)
		}
	}
}

// At the rates a 2-CPU server paces with while the engine is busy, 1,000 distinct reads at
// once (none sharing) are all admitted: their runs fit in the wait a request may take.
func TestDistinctReadsAtOnceAdmitted(t *testing.T) {
	p := newPacer(func(context.Context) (bool, error) { return true, nil }, busyRatePerCPU*2, busyRunsPerCPU*2, queueWait)
	h := p.wrap((&shared{}).wrap(p.wrapRuns(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))))
	var refused atomic.Int32
	var wg sync.WaitGroup
	for i := range 1000 {
		wg.Go(func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, fmt.Sprintf("/api/v1/resources/ns/Widget/w%04d", i), nil))
			if rec.Code != http.StatusOK {
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	if n := refused.Load(); n != 0 {
		t.Fatalf("%d of 1,000 distinct reads refused", n)
	}
}

// A read whose client has gone leaves at once, and when no one else waits for its answer the
// run waiting for its turn never starts: its handler does not run and its turn goes back to
// the runs' rate.
func TestSharedReadLeftByItsClientDoesNotRun(t *testing.T) {
	var runs atomic.Int32
	p := newPacer(func(context.Context) (bool, error) { return true, nil }, 1000, 1, 2*time.Hour)
	p.runs = rate.NewLimiter(rate.Every(time.Hour), 1)
	p.runs.Allow() // the next run waits an hour
	joined, finished := make(chan struct{}, 1), make(chan struct{})
	sh := &shared{joined: joined}
	run := p.wrapRuns(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { runs.Add(1) }))
	h := sh.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(finished)
		run.ServeHTTP(w, r)
	}))
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/api/v1/resources/ns/Widget/a", nil).WithContext(ctx))
	}()
	<-joined
	cancel()
	<-returned // an hour without the fix
	<-finished
	if n := runs.Load(); n != 0 {
		t.Fatalf("%d handler runs for a read its client left, want 0", n)
	}
	if tok := p.runs.Tokens(); tok < -0.5 {
		t.Fatalf("runs' tokens %v: the left read's turn was kept", tok)
	}
}

func TestPacedWhileBusyOrUnsure(t *testing.T) {
	fresh := int64(busyCheckEvery)
	for _, tc := range []struct {
		name string
		busy bool
		age  int64 // since the reading (checked 0: never read)
		want bool
	}{
		{"idle, read just now", false, 0, false},
		{"idle, read one check ago", false, fresh, false},
		{"idle, a check in progress", false, int64(busyStaleAfter), false},
		{"idle, the reading too old (check slow)", false, int64(busyStaleAfter) + 1, true},
		{"never read", false, time.Now().UnixNano(), true},
		{"busy, read just now", true, 0, true},
		{"busy, the reading too old", true, int64(time.Hour), true},
	} {
		now := time.Now().UnixNano()
		if got := paced(tc.busy, now-tc.age, now); got != tc.want {
			t.Errorf("%s: paced %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestSharedAnswersKeepTheirBodies: the buffers of shared answers go back to a pool once the
// maker and every read that joined are done with them; reads at once, identical or not, each
// get their own answer whole (under -race, a buffer reused early is a race as well).
func TestSharedAnswersKeepTheirBodies(t *testing.T) {
	sh := &shared{}
	body := func(k int) string { return strings.Repeat(string(rune('a'+k)), 1000*(k+1)) }
	h := sh.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k, _ := strconv.Atoi(r.URL.Query().Get("k"))
		time.Sleep(time.Duration(k) * 100 * time.Microsecond) // answers overlap
		_, _ = io.WriteString(w, body(k))
	}))
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for g := range 16 {
		wg.Go(func() {
			for i := range 40 {
				k := (g + i) % 8
				if g%4 == 0 {
					k = 3 // many reads of one URL: shared answers
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/things?k="+strconv.Itoa(k), nil))
				if got := rec.Body.String(); got != body(k) {
					errs <- fmt.Sprintf("k=%d: a body of %d bytes starting %.10q", k, len(got), got)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
