package server

import (
	"bytes"
	"cmp"
	"context"
	"maps"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Limits that keep API and dashboard clients from slowing the engine (DESIGN §9): requests
// read through their own database pool (PoolSize connections, cmd/trueup opens it for the
// server); at most Options.MaxInFlight of them run at once (default: one per CPU the Go
// runtime uses) and the others wait their turn for up to queueWait, then get 503 with
// Retry-After; identical GETs of the API that arrive while one is being served take its
// answer (shared); and each client holds at most maxWatchesPerClient watch streams.
//
// What protects the engine is how little a request costs, not how few run: one request at
// a time served 100–170 requests/s on 2 cores and took 0–12% of reconcile throughput, 2 or 4
// at a time took 34–50% (make bench, reconcile_api_load_drop) because each request ran its
// own queries. A crowd asks the same few lists again and again; shared answers them with one
// query per burst, which leaves concurrency free to follow the machine.
const (
	queueWait           = 5 * time.Second
	maxWatchesPerClient = 16
	// hubConns are the watch hub's reads, beside the requests in flight.
	hubConns = 2
)

// defaultMaxInFlight is one request in flight per CPU the Go runtime uses, at least 2.
func defaultMaxInFlight() int { return max(2, runtime.GOMAXPROCS(0)) }

// PoolSize is the size of the database pool the server's store needs: a connection for each
// request in flight (maxInFlight; 0: the default) and the watch hub's reads.
func PoolSize(maxInFlight int) int32 {
	return int32(cmp.Or(maxInFlight, defaultMaxInFlight()) + hubConns)
}

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

// pacer keeps the API behind the engine: while the engine has work (a lease held or work
// due, checked at most every busyCheckEvery), requests start at most busyRatePerCPU a second
// per CPU, and of the API reads that can share at most busyRunsPerCPU a second per CPU run a
// handler (its queries and encoding); the others take the answer of an identical read in
// progress (shared), which waits for its turn to run meanwhile (golang.org/x/time/rate both). A request that would wait
// past queueWait gets 503 with Retry-After. An idle engine leaves the API unpaced; a state not
// read for busyStaleAfter (the check slow or failing, none made yet) counts as busy (paced).
type pacer struct {
	lim     *rate.Limiter // requests
	runs    *rate.Limiter // handler runs
	check   func(context.Context) (bool, error)
	wait    time.Duration
	busy    atomic.Bool
	checked atomic.Int64 // when busy was last read (Unix nanoseconds)
	reading atomic.Bool
}

const (
	busyRatePerCPU = 500
	// busyRunsPerCPU is measured with reads that share nothing (DESIGN §9): at 50 they
	// waited seconds for their runs while the engine worked.
	busyRunsPerCPU = 250
	busyCheckEvery = 25 * time.Millisecond
	busyStaleAfter = 200 * time.Millisecond
)

// newPacer paces requests at perSecond and handler runs at runsPerSecond while check reports
// the engine busy.
func newPacer(check func(context.Context) (bool, error), perSecond, runsPerSecond int, wait time.Duration) *pacer {
	return &pacer{lim: newBucket(perSecond), runs: newBucket(runsPerSecond), check: check, wait: wait}
}

// newBucket lets perSecond through, a tenth of a second's worth at once.
func newBucket(perSecond int) *rate.Limiter {
	return rate.NewLimiter(rate.Limit(perSecond), max(1, perSecond/10))
}

// paced decides whether a request at now waits its turn: the engine was busy when last read
// at checked, or that reading is too old to go by (Unix nanoseconds both).
func paced(busy bool, checked, now int64) bool {
	return busy || now-checked > int64(busyStaleAfter)
}

// engineBusy reports whether requests are paced. The first request busyCheckEvery after the
// last reading reads the engine's state again; the others go on with the reading they have
// while it is fresh.
func (p *pacer) engineBusy(ctx context.Context) bool {
	now := time.Now().UnixNano()
	if now-p.checked.Load() >= int64(busyCheckEvery) && p.reading.CompareAndSwap(false, true) {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		// A check that fails (the pool taken by requests, the database slow) counts as busy:
		// when unsure, the engine comes first.
		busy, err := p.check(ctx)
		p.busy.Store(busy || err != nil)
		cancel()
		p.checked.Store(now)
		p.reading.Store(false)
	}
	return paced(p.busy.Load(), p.checked.Load(), time.Now().UnixNano())
}

// wrap paces the requests; wrapRuns, inside shared, the handler runs of the reads that can
// share (shareable): waiting there lets identical reads join the answer. Writes and dashboard
// pages, which share nothing, go on the requests' rate alone.
func (p *pacer) wrap(h http.Handler) http.Handler { return p.paceWith(p.lim, h) }
func (p *pacer) wrapRuns(h http.Handler) http.Handler {
	paced := p.paceWith(p.runs, h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if shareable(r) {
			paced.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (p *pacer) paceWith(lim *rate.Limiter, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if exempt(r.URL.Path) {
			h.ServeHTTP(w, r)
			return
		}
		if !p.engineBusy(r.Context()) {
			// Unpaced requests still take the tokens there are, so that the engine's work
			// starts with the bucket empty, not with a burst let through at once.
			lim.Allow()
			h.ServeHTTP(w, r)
			return
		}
		res := lim.Reserve()
		if d := res.Delay(); d > p.wait {
			res.Cancel()
			w.Header().Set("Retry-After", strconv.Itoa(1))
			writeError(w, http.StatusServiceUnavailable, "too many requests while the engine is busy; retry shortly")
			return
		} else if d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-r.Context().Done():
				res.Cancel()
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// shared serves identical API reads at once: a GET under /api/v1/ that arrives while the
// same one (same identity, URL and content headers) is being served waits for that answer and
// gets a copy of it instead of running its own queries. A write through this server (any other
// method) starts a new generation of answers, so that a client reads what it wrote; a write
// made elsewhere shows to a read that shared an answer at most one request's time later, as a
// read from a standby does. A read that arrives after an answer was made never gets it.
//
// The answer is made apart from the requests that wait for it, so that it outlives the one
// that started it while others wait; once every request waiting has gone (clients that left,
// timeouts), its context ends: a run not yet started (waiting for its turn in the pacer) never
// starts, and one under way stops at its next query.
type shared struct {
	gen   atomic.Uint64
	mu    sync.Mutex
	calls map[string]*call
	// joined, when set (tests), hears of each read that waits for an answer.
	joined chan<- struct{}
}

// call is an answer being made for the reads that wait for it.
type call struct {
	waiting int // reads waiting (under shared.mu)
	cancel  context.CancelFunc
	done    chan struct{}
	a       *answer
	panic   any // what the handler panicked with, passed on to each read
	// holders counts the maker of the answer and each read that joined it, until done with
	// it: the last one puts the answer's body back in answerBodies.
	holders atomic.Int32
	body    *[]byte // the pooled buffer a.body began with
}

// answerBodies holds the buffers shared answers are written into (a page of a hundred
// resources is about 90 KB: without them, a buffer that size for every read); one larger
// than maxPooledBody is left to the collector.
var answerBodies = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledBody = 1 << 20

// release is a holder done with c's answer.
func (c *call) release() {
	if c.holders.Add(-1) != 0 {
		return
	}
	if b := c.a.body.Bytes(); cap(b) <= maxPooledBody {
		*c.body = b[:0]
		answerBodies.Put(c.body)
	}
}

// answer keeps what a handler wrote: a response copied to every request that shared it, or
// the answer of an in-process API call of /mcp.
type answer struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (a *answer) Header() http.Header { return a.header }
func (a *answer) Write(b []byte) (int, error) {
	if a.code == 0 {
		a.code = http.StatusOK
	}
	return a.body.Write(b)
}
func (a *answer) WriteHeader(code int) {
	if a.code == 0 {
		a.code = code
	}
}

// shareable reports whether r is a read whose answer others can share.
func shareable(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/v1/") && !exempt(r.URL.Path)
}

func (s *shared) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			s.gen.Add(1)
			defer s.gen.Add(1)
			h.ServeHTTP(w, r)
			return
		}
		if !shareable(r) {
			h.ServeHTTP(w, r)
			return
		}
		key := strconv.FormatUint(s.gen.Load(), 10) + "\x00" + sharedKey(r)
		c := s.join(key, h, r)
		defer c.release()
		if s.joined != nil {
			s.joined <- struct{}{}
		}
		select {
		case <-c.done:
		case <-r.Context().Done():
		}
		s.leave(key, c)
		select {
		case <-c.done:
		default:
			return // the client has gone; the answer, if any, is for the others
		}
		if c.panic != nil {
			panic(c.panic)
		}
		maps.Copy(w.Header(), c.a.header.Clone())
		w.WriteHeader(cmp.Or(c.a.code, http.StatusOK))
		_, _ = w.Write(c.a.body.Bytes())
	})
}

// join counts r among the reads waiting for the answer of key, and starts making it when
// none is being made.
func (s *shared) join(key string, h http.Handler, r *http.Request) *call {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.calls[key]; c != nil {
		c.waiting++
		c.holders.Add(1)
		return c
	}
	if s.calls == nil {
		s.calls = map[string]*call{}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	c := &call{waiting: 1, cancel: cancel, done: make(chan struct{}), a: &answer{header: http.Header{}}}
	c.body = answerBodies.Get().(*[]byte)
	c.a.body = *bytes.NewBuffer((*c.body)[:0])
	c.holders.Store(2) // the maker and r
	s.calls[key] = c
	go func() {
		defer func() {
			if v := recover(); v != nil {
				c.panic = v
			}
			s.mu.Lock()
			if s.calls[key] == c {
				delete(s.calls, key)
			}
			s.mu.Unlock()
			close(c.done)
			cancel()
			c.release()
		}()
		h.ServeHTTP(c.a, r.WithContext(ctx))
	}()
	return c
}

// leave counts a read out of those waiting for c; the last one to leave ends c's context
// and lets the next identical read make an answer of its own.
func (s *shared) leave(key string, c *call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.waiting--; c.waiting == 0 {
		c.cancel()
		if s.calls[key] == c {
			delete(s.calls, key)
		}
	}
}

// sharedKey names what an API read's answer depends on: who asks (their role and
// namespaces scope what they see), what, and in which form.
func sharedKey(r *http.Request) string {
	id := identity(r)
	return strings.Join([]string{id.Kind, id.Name, string(id.Role), strings.Join(id.Namespaces, ","), r.URL.RequestURI(),
		r.Header.Get("Accept"), r.Header.Get("Accept-Encoding"), r.Header.Get("If-None-Match")}, "\x00")
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
