package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/noop"
	"github.com/trueup-dev/trueup/internal/server"
	"github.com/trueup-dev/trueup/internal/store"
)

// apiLoadClients is how many API clients keep requests going while resources reconcile.
const apiLoadClients = 500

// apiLoadFigures measures reconcile throughput of 10,000 noop resources alone, then with 500
// API clients each sending one request after another (lists, a resource, events, the
// dashboard) to a server on the same database through its own pool, as `trueup serve` wires
// it; the figure is the drop, which must stay under 20%.
func (b *bench) apiLoadFigures(ctx context.Context) error {
	const n = 10000
	alone, _, err := b.throughputUnderAPILoad(ctx, n, 0)
	if err != nil {
		return err
	}
	loaded, served, err := b.throughputUnderAPILoad(ctx, n, apiLoadClients)
	if err != nil {
		return err
	}
	record("reconcile_throughput_api_alone", alone, "1/s", "", nil)
	record(fmt.Sprintf("reconcile_throughput_%d_api_clients", apiLoadClients), loaded, "1/s", "", nil)
	record("reconcile_api_load_drop", 100*(1-loaded/alone), "%", "≤ 20", atMost(20))
	record("api_requests_served_under_load", served, "1/s", "", nil)
	return nil
}

func (b *bench) throughputUnderAPILoad(ctx context.Context, n, clients int) (rate, served float64, err error) {
	st, url, err := b.freshStore(ctx, 4)
	if err != nil {
		return 0, 0, err
	}
	defer st.Close()
	if err := b.seed(ctx, st, n); err != nil {
		return 0, 0, err
	}
	// The seeded resources are due at once: hold them back until the clients are running.
	if _, err := st.Pool().Exec(ctx, "UPDATE resources SET run_at = now() + interval '1 hour'"); err != nil {
		return 0, 0, err
	}
	var done, failed atomic.Int64
	stopClients := func() {}
	if clients > 0 {
		apiStore, err := store.Open(ctx, url, store.Options{MaxConns: 6})
		if err != nil {
			return 0, 0, err
		}
		defer apiStore.Close()
		srv := server.New(apiStore, server.Options{}, b.log)
		ts := httptest.NewServer(srv.Handler())
		cctx, cancel := context.WithCancel(ctx)
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
		paths := []string{"/api/v1/resources?limit=50", "/api/v1/resources/ns01/Widget/w000001", "/api/v1/events?limit=50",
			"/", "/api/v1/resources?namespace=ns03&limit=20", "/api/v1/sources"}
		var wg sync.WaitGroup
		for i := 0; i < clients; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				for j := i; cctx.Err() == nil; j++ {
					req, _ := http.NewRequestWithContext(cctx, http.MethodGet, ts.URL+paths[j%len(paths)], nil)
					resp, err := client.Do(req)
					if err != nil {
						if cctx.Err() == nil && failed.Add(1) == 1 {
							fmt.Fprintf(os.Stderr, "api request: %v\n", err)
						}
						continue
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						done.Add(1)
					} else if failed.Add(1) == 1 {
						fmt.Fprintf(os.Stderr, "api request %s: status %d\n", paths[j%len(paths)], resp.StatusCode)
					}
				}
			}(i)
		}
		time.Sleep(time.Second) // every client has a request going
		stopClients = func() {
			cancel()
			wg.Wait()
			ts.Close()
			srv.Stop()
		}
	}
	act, _ := noop.New(nil, actions.Env{Name: "act", Logger: b.log})
	stop, err := b.runReconcilers(ctx, url, 1, 32, act)
	if err != nil {
		stopClients()
		return 0, 0, err
	}
	before := done.Load()
	start := time.Now()
	if _, err := st.Pool().Exec(ctx, "UPDATE resources SET run_at = now()"); err != nil {
		stop()
		stopClients()
		return 0, 0, err
	}
	err = waitReady(ctx, st, n, 5*time.Minute)
	took := time.Since(start)
	served = float64(done.Load()-before) / took.Seconds()
	stop()
	stopClients()
	if err != nil {
		return 0, 0, err
	}
	return float64(n) / took.Seconds(), served, nil
}
