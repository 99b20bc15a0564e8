package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/noop"
	"github.com/trueup-dev/trueup/internal/server"
	"github.com/trueup-dev/trueup/internal/store"
)

// apiLoadClients is how many API clients keep requests going, alone and while resources
// reconcile.
const apiLoadClients = 500

// apiLoadPaths is the clients' mix of lists, single resources and events.
var apiLoadPaths = []string{"/api/v1/resources?limit=50", "/api/v1/resources/ns01/Widget/w000001", "/api/v1/events?limit=50",
	"/api/v1/resources?namespace=ns03&limit=20", "/api/v1/resources/ns02/Widget/w000002"}

// apiLoadFigures measures the API alone (500 clients each sending one request after another
// to a server wired as `trueup serve` wires it, on 10,000 resources), then reconcile
// throughput of 10,000 noop resources alone and with the same clients; the drop must stay
// under 20% while the API serves at least 1,000 requests a second.
func (b *bench) apiLoadFigures(ctx context.Context) error {
	const n = 10000
	alone, err := b.apiAlone(ctx, n, apiLoadClients, 5*time.Second)
	if err != nil {
		return err
	}
	reconcileAlone, _, err := b.throughputUnderAPILoad(ctx, n, 0)
	if err != nil {
		return err
	}
	loaded, under, err := b.throughputUnderAPILoad(ctx, n, apiLoadClients)
	if err != nil {
		return err
	}
	record("api_requests_alone", alone.rate, "1/s", "≥ 3000", atLeast(3000))
	record("api_get_p99", ms(alone.getP99), "ms", "", nil)
	record("reconcile_throughput_api_alone", reconcileAlone, "1/s", "", nil)
	record(fmt.Sprintf("reconcile_throughput_%d_api_clients", apiLoadClients), loaded, "1/s", "", nil)
	record("reconcile_api_load_drop", 100*(1-loaded/reconcileAlone), "%", "≤ 20", atMost(20))
	record("api_requests_served_under_load", under.rate, "1/s", "≥ 1000", atLeast(1000))
	record("api_get_p99_under_load", ms(under.getP99), "ms", "", nil)
	return nil
}

// apiServed is what the clients got: requests answered 200 a second, and the p99 latency of
// the single-resource GETs among them.
type apiServed struct {
	rate   float64
	getP99 time.Duration
}

// apiClients serves the API on st and runs n clients; stop ends them and reports what they
// got since the last mark.
type apiClients struct {
	done, failed atomic.Int64
	mu           sync.Mutex
	gets         []time.Duration
	since        time.Time
	stop         func()
}

func (b *bench) startAPIClients(ctx context.Context, url string, n int) (*apiClients, error) {
	apiStore, err := store.Open(ctx, url, store.Options{MaxConns: server.PoolSize(0)})
	if err != nil {
		return nil, err
	}
	srv := server.New(apiStore, server.Options{}, b.log)
	ts := httptest.NewServer(srv.Handler())
	cctx, cancel := context.WithCancel(ctx)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}}
	c := &apiClients{}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var gets []time.Duration
			defer func() { c.mu.Lock(); c.gets = append(c.gets, gets...); c.mu.Unlock() }()
			for j := i; cctx.Err() == nil; j++ {
				path := apiLoadPaths[j%len(apiLoadPaths)]
				req, _ := http.NewRequestWithContext(cctx, http.MethodGet, ts.URL+path, nil)
				t := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					if cctx.Err() == nil && c.failed.Add(1) == 1 {
						fmt.Fprintf(os.Stderr, "api request: %v\n", err)
					}
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					if c.failed.Add(1) == 1 {
						fmt.Fprintf(os.Stderr, "api request %s: status %d\n", path, resp.StatusCode)
					}
					continue
				}
				c.done.Add(1)
				if strings.HasPrefix(path, "/api/v1/resources/") && t.After(c.sinceTime()) {
					gets = append(gets, time.Since(t))
				}
			}
		}(i)
	}
	c.stop = func() {
		cancel()
		wg.Wait()
		ts.Close()
		srv.Stop()
		apiStore.Close()
	}
	return c, nil
}

func (c *apiClients) sinceTime() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.since
}

// mark starts counting from now.
func (c *apiClients) mark() int64 {
	c.mu.Lock()
	c.since = time.Now()
	c.mu.Unlock()
	return c.done.Load()
}

// end stops the clients and reports what they got since from (the count mark returned).
func (c *apiClients) end(from int64, took time.Duration) apiServed {
	n := c.done.Load() - from
	c.stop()
	return apiServed{rate: float64(n) / took.Seconds(), getP99: percentile(c.gets, 0.99)}
}

// apiAlone runs n clients against a server on r seeded resources for d, nothing else running.
func (b *bench) apiAlone(ctx context.Context, r, n int, d time.Duration) (apiServed, error) {
	st, url, err := b.seededStore(ctx, r)
	if err != nil {
		return apiServed{}, err
	}
	defer st.Close()
	// No engine runs here: nothing is due, as after the resources reconciled.
	if _, err := st.Pool().Exec(ctx, "UPDATE resources SET run_at = now() + interval '1 hour'"); err != nil {
		return apiServed{}, err
	}
	c, err := b.startAPIClients(ctx, url, n)
	if err != nil {
		return apiServed{}, err
	}
	time.Sleep(time.Second) // warm: every client has a request going
	from := c.mark()
	time.Sleep(d)
	return c.end(from, d), nil
}

func (b *bench) throughputUnderAPILoad(ctx context.Context, n, clients int) (rate float64, served apiServed, err error) {
	st, url, err := b.seededStore(ctx, n)
	if err != nil {
		return 0, served, err
	}
	defer st.Close()
	// The seeded resources are due at once: hold them back until the clients are running.
	if _, err := st.Pool().Exec(ctx, "UPDATE resources SET run_at = now() + interval '1 hour'"); err != nil {
		return 0, served, err
	}
	var c *apiClients
	if clients > 0 {
		if c, err = b.startAPIClients(ctx, url, clients); err != nil {
			return 0, served, err
		}
		time.Sleep(time.Second) // every client has a request going
	}
	end := func(from int64, took time.Duration) {
		if c != nil {
			served = c.end(from, took)
		}
	}
	act, _ := noop.New(nil, actions.Env{Name: "act", Logger: b.log})
	stop, err := b.runReconcilers(ctx, url, 1, 32, act)
	if err != nil {
		end(0, time.Second)
		return 0, served, err
	}
	// The drain starts when the work is due, as a sync's commit makes it: the engine (and the
	// API's pacer) cannot see the work while the transaction that makes it due is open.
	if _, err := st.Pool().Exec(ctx, "UPDATE resources SET run_at = now()"); err != nil {
		stop()
		end(0, time.Second)
		return 0, served, err
	}
	var from int64
	if c != nil {
		from = c.mark()
	}
	start := time.Now()
	err = waitReady(ctx, st, n, 5*time.Minute)
	took := time.Since(start)
	end(from, took)
	stop()
	if err != nil {
		return 0, served, err
	}
	return float64(n) / took.Seconds(), served, nil
}
