package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/trueup-dev/trueup/internal/server"
)

// scale1mReads records the read figures of the scale1m group against env's server:
// api_list_p99_1m, api_get_p99_1m and dashboard_overview_1m. It learns the namespaces, kinds,
// labels and names to ask for from the API itself, so it fits whatever the set-up synced.
func (b *bench) scale1mReads(ctx context.Context, env scale1mEnv) error {
	c := &readClient{base: env.apiURL, token: env.token, http: &http.Client{Timeout: 30 * time.Second}}
	var first struct {
		Items []struct {
			Metadata struct {
				Namespace, Name string
				Labels          map[string]string
			}
			Kind string
		}
		Continue string
	}
	// Samples spread over the identity order: the first page and pages reached by continue
	// tokens (keyset paging: a deep page costs what the first does).
	var samples [][3]string
	labels := map[string]string{}
	cont := ""
	for i := 0; i < 20; i++ {
		path := "/api/v1/resources?limit=1000"
		if cont != "" {
			path += "&continue=" + url.QueryEscape(cont)
		}
		if _, err := c.get(ctx, path, &first); err != nil {
			return err
		}
		for j, it := range first.Items {
			if j%100 == 0 {
				samples = append(samples, [3]string{it.Metadata.Namespace, it.Kind, it.Metadata.Name})
			}
			for k, v := range it.Metadata.Labels {
				labels[k] = v
			}
		}
		if cont = first.Continue; cont == "" {
			break
		}
	}
	if len(samples) == 0 {
		return fmt.Errorf("scale1m reads: the API lists no resources")
	}
	label := ""
	for k, v := range labels {
		if k != "trueup.dev/resource-set" {
			label = k + "=" + v
			break
		}
	}
	var lists []string
	for i, s := range samples {
		switch i % 6 {
		case 5:
			// A selector nothing matches (a typo): found empty through the labels index.
			lists = append(lists, "/api/v1/resources?limit=100&labelSelector="+url.QueryEscape("trueup.dev/bench=none"))
		case 0:
			lists = append(lists, "/api/v1/resources?limit=100")
		case 1:
			lists = append(lists, "/api/v1/resources?limit=100&namespace="+url.QueryEscape(s[0]))
		case 2:
			lists = append(lists, "/api/v1/resources?limit=100&kind="+url.QueryEscape(s[1]))
		case 3:
			lists = append(lists, "/api/v1/resources?limit=100&kind="+url.QueryEscape(s[1])+"&phase=Ready")
		case 4:
			if label != "" {
				lists = append(lists, "/api/v1/resources?limit=100&labelSelector="+url.QueryEscape(label))
			} else {
				lists = append(lists, "/api/v1/resources?limit=100&namespace="+url.QueryEscape(s[0])+"&kind="+url.QueryEscape(s[1]))
			}
		}
	}
	gets := make([]string, len(samples))
	for i, s := range samples {
		gets[i] = "/api/v1/resources/" + url.PathEscape(s[0]) + "/" + url.PathEscape(s[1]) + "/" + url.PathEscape(s[2])
	}
	// Warm the pool's connections and the statement caches as a running server is.
	if _, _, err := c.run(ctx, lists, 1, len(lists)); err != nil {
		return err
	}
	for _, fig := range []struct {
		name   string
		paths  []string
		target float64
	}{{"api_list_p99_1m", lists, 10}, {"api_get_p99_1m", gets, 5}} {
		alone, starts, err := c.run(ctx, fig.paths, 1, 1000)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "scale1m: %s slowest alone: %s\n", fig.name, slowest(alone, starts, fig.paths, 10))
		crowd, _, err := c.run(ctx, fig.paths, 4, 2000)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "scale1m: %s one client %.2f ms, 4 clients %.2f ms (p50 %.2f / %.2f ms)\n", fig.name,
			ms(percentile(alone, 0.99)), ms(percentile(crowd, 0.99)), ms(percentile(alone, 0.5)), ms(percentile(crowd, 0.5)))
		if fig.name == "api_list_p99_1m" {
			// Which filter is slow: the p99 of each of the six shapes of list.
			var by [6][]time.Duration
			for i, d := range alone {
				by[(i%len(lists))%6] = append(by[(i%len(lists))%6], d)
			}
			for k, l := range by {
				fmt.Fprintf(os.Stderr, "scale1m: list shape %d (%s): p99 %.2f ms\n", k, lists[k], ms(percentile(l, 0.99)))
			}
		}
		record(fig.name, ms(percentile(alone, 0.99)), "ms", fmt.Sprintf("≤ %g", fig.target), atMost(fig.target))
		record(fig.name+"_4_clients", ms(percentile(crowd, 0.99)), "ms", "", nil)
	}
	// The overview page: counts by phase, sources, recent failures and events.
	over, _, err := c.run(ctx, []string{"/"}, 1, 50)
	if err != nil {
		return err
	}
	record("dashboard_overview_1m", ms(percentile(over, 0.99)), "ms", "≤ 100", atMost(100))
	return nil
}

// readClient sends GETs with a bearer token and times them.
type readClient struct {
	base, token string
	http        *http.Client
}

// get fetches path; with into, the body is decoded as JSON.
func (c *readClient) get(ctx context.Context, path string, into any) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return 0, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	t := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if into != nil {
		err = json.NewDecoder(resp.Body).Decode(into)
	} else {
		_, err = io.Copy(io.Discard, resp.Body)
	}
	d := time.Since(t)
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return d, err
}

// run sends n requests over clients concurrent clients, cycling through paths, and returns
// their latencies and start times.
func (c *readClient) run(ctx context.Context, paths []string, clients, n int) ([]time.Duration, []time.Time, error) {
	lat := make([]time.Duration, n)
	starts := make([]time.Time, n)
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += clients {
				starts[i] = time.Now()
				d, err := c.get(ctx, paths[i%len(paths)], nil)
				if err != nil {
					errs <- err
					return
				}
				lat[i] = d
			}
		}()
	}
	wg.Wait()
	close(errs)
	return lat, starts, <-errs
}

// slowest names the k slowest of the requests whose latencies and start times run returned,
// slowest first: each one's latency, its start (UTC, to the millisecond: to be matched with
// PostgreSQL's log and the collector's trace) and its shape's index in paths.
func slowest(lat []time.Duration, starts []time.Time, paths []string, k int) string {
	idx := make([]int, len(lat))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(lat[b], lat[a]) })
	var b strings.Builder
	for j, i := range idx[:min(k, len(idx))] {
		if j > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%.2f ms at %s (#%d)", ms(lat[i]), starts[i].UTC().Format("15:04:05.000"), i%len(paths))
	}
	return b.String()
}

// reads1mFigures measures the read figures on a million rows written straight into the
// resources table (no sync, no reconcile), served by an in-process server: the reads' own
// fixture, run only when named (-only reads1m).
func (b *bench) reads1mFigures(ctx context.Context) error {
	st, _, err := b.freshStore(ctx, 8)
	if err != nil {
		return err
	}
	defer st.Close()
	t := time.Now()
	if err := writeReads1mFixture(ctx, st.Pool(), 1000000); err != nil {
		return fmt.Errorf("fixture: %w", err)
	}
	fmt.Fprintf(os.Stderr, "reads1m: fixture written in %s\n", time.Since(t).Round(time.Millisecond))
	srv := server.New(st, server.Options{}, b.log)
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	return b.scale1mReads(ctx, scale1mEnv{apiURL: ts.URL})
}

// writeReads1mFixture writes the source bench and n rows of reads1mFixture, settled: the
// insert trigger makes every row due, and the fixture is rows a sync wrote and the engine has
// reconciled since, with nothing due (a due row would make the engine busy, and the API's
// pacer would pace the reads measured).
func writeReads1mFixture(ctx context.Context, pool *pgxpool.Pool, n int) error {
	if _, err := pool.Exec(ctx, `INSERT INTO sources (name) VALUES ('bench')`); err != nil {
		return err
	}
	// In batches of 100,000, as the syncer writes: one statement's temporary files stay small.
	for i := 0; i < n; i += 100000 {
		if _, err := pool.Exec(ctx, reads1mFixture, i, min(i+100000, n)-1); err != nil {
			return err
		}
	}
	for _, q := range []string{`UPDATE resource_queue SET run_at = NULL`, `VACUUM ANALYZE resources`, `VACUUM ANALYZE resource_queue`,
		`VACUUM ANALYZE resource_phases`} {
		if _, err := pool.Exec(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// reads1mFixture writes resources $1 to $2 of a million as a sync of 2,000 files would: 1,000
// namespaces of 1,000, two kinds, a team label, a few hundred not Ready. The vacuum after it
// is what autovacuum runs within a minute of a bulk load.
const reads1mFixture = `INSERT INTO resources (namespace, kind, name, api_version, source, file_path, file_line, revision, labels, spec,
		spec_hash, meta_hash, phase, observed_generation, conditions, status_updated_at)
	SELECT 'ns' || lpad((i / 1000)::text, 4, '0'),
		CASE WHEN i % 2 = 0 THEN 'Widget' ELSE 'Gadget' END,
		'w' || lpad(i::text, 7, '0'), 'bench.trueup.dev/v1', 'bench',
		'f' || (i / 500) || '.yaml', (i % 500) * 6 + 1, 'r1',
		jsonb_build_object('team', 't' || (i % 10)), jsonb_build_object('size', i % 100),
		md5(i::text), md5('m' || i), CASE WHEN i % 5000 = 0 THEN 'Failed' WHEN i % 7919 = 0 THEN 'Pending' ELSE 'Ready' END, 1,
		jsonb_build_array(jsonb_build_object('type', 'Ready', 'status', CASE WHEN i % 5000 = 0 THEN 'False' ELSE 'True' END,
			'reason', 'Reconciled', 'message', '', 'lastTransitionTime', now())), now() - (i % 3600) * interval '1 second'
	FROM generate_series($1::int, $2::int) i`
