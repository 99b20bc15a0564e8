package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/noop"
	"github.com/trueup-dev/trueup/internal/auth"
	"github.com/trueup-dev/trueup/internal/cputime"
	"github.com/trueup-dev/trueup/internal/server"
	"github.com/trueup-dev/trueup/internal/store"
)

// apiLoadClients is how many API clients keep requests going, alone and while resources
// reconcile.
const apiLoadClients = 500

// apiLoadPaths is the clients' mix of lists, single resources and events.
var apiLoadPaths = []string{"/api/v1/resources?limit=50", "/api/v1/resources/ns01/Widget/w000001", "/api/v1/events?limit=50",
	"/api/v1/resources?namespace=ns03&limit=20", "/api/v1/resources/ns02/Widget/w000002"}

// The clients' mixes: a crowd cycling apiLoadPaths (mostly identical reads, which share
// answers), or distinct reads, each client reading resources of its own (client i the
// resources i, i+N, i+2N, … of N clients), every other one with a token of its own, so that
// no two reads in flight share an answer.
const (
	apiCrowd    = "crowd"
	apiDistinct = "distinct"
)

// apiLoadFigures measures the API alone (500 clients each sending one request after another
// to a server wired as `trueup serve` wires it, on 10,000 resources), then reconcile
// throughput of 10,000 noop resources alone and with the same clients; the drop must stay
// under 20% while the API serves at least 1,000 requests a second. Then the same drain with
// 500 clients of distinct reads: what they are served, and how many are refused (503).
func (b *bench) apiLoadFigures(ctx context.Context) error {
	const n = 10000
	alone, err := b.apiAlone(ctx, n, apiLoadClients, 5*time.Second)
	if err != nil {
		return err
	}
	reconcileAlone, _, err := b.throughputUnderAPILoad(ctx, n, 0, apiCrowd)
	if err != nil {
		return err
	}
	loaded, under, err := b.throughputUnderAPILoad(ctx, n, apiLoadClients, apiCrowd)
	if err != nil {
		return err
	}
	loadedDistinct, distinct, err := b.throughputUnderAPILoad(ctx, n, apiLoadClients, apiDistinct)
	if err != nil {
		return err
	}
	record("api_requests_alone", alone.rate, "1/s", "≥ 3000", atLeast(3000))
	record("api_get_p99", ms(alone.getP99), "ms", "", nil)
	record("api_cpu_per_request", float64(alone.cpu.Microseconds()), "µs", "", nil)
	record("reconcile_throughput_api_alone", reconcileAlone, "1/s", "", nil)
	record(fmt.Sprintf("reconcile_throughput_%d_api_clients", apiLoadClients), loaded, "1/s", "", nil)
	record("reconcile_api_load_drop", 100*(1-loaded/reconcileAlone), "%", "≤ 20", atMost(20))
	record("api_requests_served_under_load", under.rate, "1/s", "≥ 1000", atLeast(1000))
	record("api_get_p99_under_load", ms(under.getP99), "ms", "", nil)
	record("api_requests_failed_under_load", float64(under.failed), "", "", nil)
	record(fmt.Sprintf("reconcile_throughput_%d_api_distinct_clients", apiLoadClients), loadedDistinct, "1/s", "", nil)
	record("api_distinct_reads_served_under_load", distinct.rate, "1/s", "", nil)
	record("api_distinct_reads_failed_under_load", float64(distinct.failed), "", "", nil)
	record("api_distinct_get_p99_under_load", ms(distinct.getP99), "ms", "", nil)
	return nil
}

// apiServed is what the clients got: requests answered 200 a second, the p99 latency of the
// single-resource GETs among them, the serving process's CPU time per request, and the
// requests that failed (503s and other statuses, errors).
type apiServed struct {
	rate   float64
	getP99 time.Duration
	cpu    time.Duration
	failed int64
}

// apiClientsEnv makes the bench's binary run as the crowd of API clients (apiClientsMain)
// instead of the figures.
const apiClientsEnv = "TRUEUP_BENCH_API_CLIENTS"

// apiClients serves the API on a store and runs the clients in a process of their own, as a
// crowd on other machines: in the serving process, 500 client goroutines would queue in
// front of the engine's goroutines on the same Go scheduler, which no deployment does. stop
// ends them and reports what they got since the last mark.
type apiClients struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	cpu   time.Duration // the serving process's CPU time at the mark
	close func()
}

func (b *bench) startAPIClients(ctx context.Context, url string, n int, mix string) (*apiClients, error) {
	apiStore, err := store.Open(ctx, url, store.Options{MaxConns: server.PoolSize(0)})
	if err != nil {
		return nil, err
	}
	srv := server.New(apiStore, server.Options{Authenticate: benchIdentity}, b.log)
	ts := httptest.NewServer(srv.Handler())
	closeServer := func() { ts.Close(); srv.Stop(); apiStore.Close() }
	self, err := os.Executable()
	if err != nil {
		closeServer()
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d %s %s", apiClientsEnv, n, ts.URL, mix))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		closeServer()
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		closeServer()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		closeServer()
		return nil, err
	}
	return &apiClients{cmd: cmd, in: in, out: bufio.NewReader(out), close: closeServer}, nil
}

// mark starts counting from now.
func (c *apiClients) mark() error {
	c.cpu = cputime.Self()
	_, err := io.WriteString(c.in, "mark\n")
	return err
}

// end stops the clients and reports what they got since the mark, took after it.
func (c *apiClients) end(took time.Duration) (apiServed, error) {
	cpu := cputime.Self() - c.cpu
	defer c.close()
	var served apiServed
	if _, err := io.WriteString(c.in, "end\n"); err != nil {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
		return served, err
	}
	var n, p99, failed int64
	_, err := fmt.Fscanf(c.out, "%d %d %d\n", &n, &p99, &failed)
	if werr := c.cmd.Wait(); err == nil {
		err = werr
	}
	if err != nil {
		return served, fmt.Errorf("api clients: %w", err)
	}
	fmt.Fprintf(os.Stderr, "apiload: %d requests, %d failed; CPU of the clients' process %s\n", n, failed,
		(c.cmd.ProcessState.UserTime() + c.cmd.ProcessState.SystemTime()).Round(time.Millisecond))
	served = apiServed{rate: float64(n) / took.Seconds(), getP99: time.Duration(p99), failed: failed}
	if n > 0 {
		served.cpu = cpu / time.Duration(n)
	}
	return served, nil
}

// benchIdentity is who a bench client is: "Bearer client-N" an admin token of its own, no
// Authorization anonymous (an admin too, as without an auth: section).
func benchIdentity(r *http.Request) (auth.Identity, error) {
	id := auth.Identity{Kind: "anonymous", Name: "anonymous", Role: auth.Admin, Namespaces: []string{auth.AllNamespaces}}
	if name, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		id.Kind, id.Name = "token", name
	}
	return id, nil
}

// apiClientPath is the j-th request of client i of n in the mix, and its token ("": none).
func apiClientPath(mix string, i, j, n int) (path, token string) {
	if mix != apiDistinct {
		return apiLoadPaths[(i+j)%len(apiLoadPaths)], ""
	}
	r := (i + j*n) % 10000
	if i%2 == 1 {
		token = fmt.Sprintf("client-%d", i)
	}
	return fmt.Sprintf("/api/v1/resources/ns%02d/Widget/w%06d", r%20, r), token
}

// apiClientsMain is the clients' process (spec "N URL MIX" in apiClientsEnv): N clients send
// one request after another to URL until "end" on stdin, then it prints the requests
// answered 200 since "mark", the p99 of the single-resource GETs among them (ns) and the
// requests that failed since "mark".
func apiClientsMain(spec string) error {
	var n int
	var base, mix string
	if _, err := fmt.Sscanf(spec, "%d %s %s", &n, &base, &mix); err != nil {
		return fmt.Errorf("%s: %w", apiClientsEnv, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}}
	var (
		done, failed atomic.Int64
		since        atomic.Int64 // the mark (Unix nanoseconds); 0: none yet
		mu           sync.Mutex
		gets         []time.Duration
		wg           sync.WaitGroup
	)
	for i := 0; i < n; i++ {
		wg.Go(func() {
			var mine []time.Duration
			defer func() { mu.Lock(); gets = append(gets, mine...); mu.Unlock() }()
			for j := 0; ctx.Err() == nil; j++ {
				path, token := apiClientPath(mix, i, j, n)
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				t := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil && failed.Add(1) == 1 {
						fmt.Fprintf(os.Stderr, "api request: %v\n", err)
					}
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					if failed.Add(1) == 1 {
						fmt.Fprintf(os.Stderr, "api request %s: status %d\n", path, resp.StatusCode)
					}
					continue
				}
				done.Add(1)
				if m := since.Load(); m != 0 && strings.HasPrefix(path, "/api/v1/resources/") && t.UnixNano() >= m {
					mine = append(mine, time.Since(t))
				}
			}
		})
	}
	var from, failedFrom int64
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "mark":
			from, failedFrom = done.Load(), failed.Load()
			since.Store(time.Now().UnixNano())
		case "end":
			n, f := done.Load()-from, failed.Load()-failedFrom
			cancel()
			wg.Wait()
			fmt.Printf("%d %d %d\n", n, percentile(gets, 0.99), f)
			return nil
		}
	}
	cancel()
	wg.Wait()
	return in.Err()
}

// apiAlone runs n clients against a server on r seeded resources for d, nothing else running.
func (b *bench) apiAlone(ctx context.Context, r, n int, d time.Duration) (apiServed, error) {
	st, url, err := b.seededStore(ctx, r)
	if err != nil {
		return apiServed{}, err
	}
	defer st.Close()
	// No engine runs here: nothing is due, as after the resources reconciled.
	if _, err := st.Pool().Exec(ctx, "UPDATE resource_queue SET run_at = now() + interval '1 hour'"); err != nil {
		return apiServed{}, err
	}
	c, err := b.startAPIClients(ctx, url, n, apiCrowd)
	if err != nil {
		return apiServed{}, err
	}
	time.Sleep(time.Second) // warm: every client has a request going
	if err := c.mark(); err != nil {
		_, _ = c.end(d)
		return apiServed{}, err
	}
	time.Sleep(d)
	return c.end(d)
}

func (b *bench) throughputUnderAPILoad(ctx context.Context, n, clients int, mix string) (rate float64, served apiServed, err error) {
	st, url, err := b.seededStore(ctx, n)
	if err != nil {
		return 0, served, err
	}
	defer st.Close()
	// The seeded resources are due at once: hold them back until the clients are running.
	if _, err := st.Pool().Exec(ctx, "UPDATE resource_queue SET run_at = now() + interval '1 hour'"); err != nil {
		return 0, served, err
	}
	var c *apiClients
	if clients > 0 {
		if c, err = b.startAPIClients(ctx, url, clients, mix); err != nil {
			return 0, served, err
		}
		time.Sleep(time.Second) // every client has a request going
	}
	end := func(took time.Duration) {
		if c != nil {
			var cerr error
			if served, cerr = c.end(took); err == nil {
				err = cerr
			}
		}
	}
	act, _ := noop.New(nil, actions.Env{Name: "act", Logger: b.log})
	stop, err := b.runReconcilers(ctx, url, 1, 32, act)
	if err != nil {
		end(time.Second)
		return 0, served, err
	}
	// The drain starts when the work is due, as a sync's commit makes it: the engine (and the
	// API's pacer) cannot see the work while the transaction that makes it due is open.
	if _, err := st.Pool().Exec(ctx, "UPDATE resource_queue SET run_at = now()"); err != nil {
		stop()
		end(time.Second)
		return 0, served, err
	}
	if c != nil {
		if err = c.mark(); err != nil {
			stop()
			end(time.Second)
			return 0, served, err
		}
	}
	pg, _ := postgresCPU(b.cluster)
	start, cpu := time.Now(), cputime.Self()
	err = waitReady(ctx, st, n, 5*time.Minute)
	took := time.Since(start)
	pg1, _ := postgresCPU(b.cluster)
	fmt.Fprintf(os.Stderr, "apiload: %d clients (%s): drain %s, CPU of the bench's process %s, of PostgreSQL %s\n",
		clients, mix, took.Round(time.Millisecond), (cputime.Self() - cpu).Round(time.Millisecond), (pg1 - pg).Round(time.Millisecond))
	end(took)
	stop()
	if err != nil {
		return 0, served, err
	}
	return float64(n) / took.Seconds(), served, nil
}
