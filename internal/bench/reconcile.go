package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/noop"
	"github.com/trueup-dev/trueup/internal/changewindow"
	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/policy"
	"github.com/trueup-dev/trueup/internal/reconciler"
	"github.com/trueup-dev/trueup/internal/server"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
)

const benchType = `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Widget}
spec:
  group: bench.example.com
  versions:
    - name: v1
      schema:
        type: object
        required: [size]
        properties:
          size: {type: integer, minimum: 0}
          color: {type: string, default: blue}
  action: {name: act}
`

// benchRulesType is benchType with two x-trueup-validations rules, one of them a transition
// rule, for the figures of syncs that evaluate CEL (sync_*_rules).
var benchRulesType = strings.Replace(benchType, "        required: [size]\n", `        required: [size]
        x-trueup-validations:
          - {rule: "self.size >= 0 && self.size < 1000000", message: "size out of range"}
          - {rule: "!has(oldSelf.color) || self.color == oldSelf.color", message: "color is immutable", fieldPath: ".color"}
`, 1)

// widgets renders n resources in files of perFile documents, with size+delta as spec.
func widgets(n, perFile, delta int) map[string]string {
	files := map[string]string{"types/widget.yaml": benchType}
	for f := 0; f*perFile < n; f++ {
		var b strings.Builder
		for i := f * perFile; i < n && i < (f+1)*perFile; i++ {
			fmt.Fprintf(&b, "---\napiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: w%06d, namespace: ns%02d, labels: {team: t%d}}\nspec: {size: %d}\n", i, i%20, i%7, i+delta)
		}
		files[fmt.Sprintf("widgets/w%04d.yaml", f)] = b.String()
	}
	return files
}

func loadSet(files map[string]string) (*manifest.Set, error) {
	return loadSetWith(manifest.NewLoader(), files)
}

func loadSetWith(l *manifest.Loader, files map[string]string) (*manifest.Set, error) {
	var fs []sources.File
	for p, d := range files {
		fs = append(fs, sources.File{Path: p, Data: []byte(d)})
	}
	return l.Load(fs, manifest.Options{})
}

func (b *bench) seed(ctx context.Context, st *store.Store, n int) error {
	set, err := loadSet(widgets(n, 200, 0))
	if err != nil {
		return err
	}
	if err := st.RegisterSource(ctx, store.SourceConfig{Name: "bench"}); err != nil {
		return err
	}
	_, err = st.ApplyRevision(ctx, store.ApplyParams{Source: "bench", Revision: "r1", Set: set, Prune: true})
	return err
}

// seededStore is a fresh database with n seeded resources, due at once.
func (b *bench) seededStore(ctx context.Context, n int) (*store.Store, string, error) {
	st, url, err := b.freshStore(ctx, 4)
	if err != nil {
		return nil, "", err
	}
	if err := b.seed(ctx, st, n); err != nil {
		st.Close()
		return nil, "", err
	}
	return st, url, nil
}

// drainRate starts replicas reconcilers of 32 workers calling act and measures how many of
// the n seeded resources a second become Ready.
func (b *bench) drainRate(ctx context.Context, url string, st *store.Store, n, replicas int, act actions.Action) (float64, error) {
	start := time.Now()
	stop, err := b.runReconcilers(ctx, url, replicas, 32, act)
	if err != nil {
		return 0, err
	}
	err = waitReady(ctx, st, n, 5*time.Minute)
	took := time.Since(start)
	stop()
	return float64(n) / took.Seconds(), err
}

// runReconcilers starts replicas reconcilers (each with its own pool and LISTEN connection)
// with the noop action; stop waits for them.
func (b *bench) runReconcilers(ctx context.Context, url string, replicas, workers int, act actions.Action) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var stores []*store.Store
	for i := 0; i < replicas; i++ {
		st, err := store.Open(ctx, url, store.Options{MaxConns: int32(workers + 4)})
		if err != nil {
			cancel()
			return nil, err
		}
		stores = append(stores, st)
		opts := reconciler.Options{Replica: fmt.Sprintf("bench-%d", i), Workers: workers, LeaseTTL: 30 * time.Second, ResyncInterval: b.resync}
		if set := b.policies; set != nil {
			opts.Policies = func() (*policy.Set, time.Duration) { return set, 24 * time.Hour }
		}
		if set := b.windows; set != nil {
			opts.Windows = func() *changewindow.Set { return set }
		}
		r := reconciler.New(st, map[string]actions.Action{"act": act}, opts, b.log)
		wg.Add(2)
		go func() { defer wg.Done(); _ = r.Run(ctx) }()
		go func() {
			defer wg.Done()
			st.Listen(ctx, []string{store.WorkChannel}, func(string, string) { r.Wake() }, b.log)
		}()
	}
	return func() {
		cancel()
		wg.Wait()
		for _, st := range stores {
			st.Close()
		}
	}, nil
}

// readyCount is how many resources are Ready, as the overview counts them
// (store.CountResources: the total less the rows in other phases, read from their partial
// index), so that a wait reads no table beside the work it waits for.
func readyCount(ctx context.Context, st *store.Store) (int, error) {
	counts, err := st.CountResources(ctx, store.Everything)
	ready := 0
	for _, c := range counts {
		if c.Phase == "Ready" {
			ready += c.Count
		}
	}
	return ready, err
}

func waitReady(ctx context.Context, st *store.Store, n int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		ready, err := readyCount(ctx, st)
		if err != nil {
			return err
		}
		if ready >= n {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("not all %d resources Ready within %s", n, limit)
}

func (b *bench) reconcileThroughput(ctx context.Context) error {
	const n = 20000
	for _, replicas := range []int{1, 3} {
		if err := b.throughput(ctx, n, replicas, 0, ""); err != nil {
			return err
		}
	}
	// Idle watchers: connected, filtered to a namespace with no changes (a dashboard open on a
	// quiet page). Streaming watchers receive every one of the 20,000 changes.
	if err := b.throughput(ctx, n, 1, 200, "?namespace=quiet"); err != nil {
		return err
	}
	return b.throughput(ctx, n, 1, 200, "")
}

// chainThroughput reconciles n resources in chains of length (each depends on the one
// before it, dependsOn) with the noop action on one replica: the figure includes every wait
// and every refresh of what waited.
func (b *bench) chainThroughput(ctx context.Context, n, length int) error {
	st, url, err := b.freshStore(ctx, 4)
	if err != nil {
		return err
	}
	defer st.Close()
	set, err := loadSet(widgets(n, 200, 0))
	if err != nil {
		return err
	}
	// widgets are sorted by namespace, kind, name: chain them by name order, which is i.
	byName := make(map[string]int, n)
	for i := range set.Resources {
		byName[set.Resources[i].Name] = i
	}
	for i := 0; i < n; i++ {
		if i%length == 0 {
			continue
		}
		prev := &set.Resources[byName[fmt.Sprintf("w%06d", i-1)]]
		r := &set.Resources[byName[fmt.Sprintf("w%06d", i)]]
		r.DependsOn = []manifest.Dependency{{Target: graph.ID{Kind: prev.Kind, Namespace: prev.Namespace, Name: prev.Name}, Explicit: true}}
	}
	if err := st.RegisterSource(ctx, store.SourceConfig{Name: "bench"}); err != nil {
		return err
	}
	res, err := st.ApplyRevision(ctx, store.ApplyParams{Source: "bench", Revision: "r1", Set: set, Prune: true})
	if err != nil {
		return err
	}
	if err := st.RefreshDependencies(ctx, res.Refresh); err != nil {
		return err
	}
	act, _ := noop.New(nil, actions.Env{Name: "act", Logger: b.log})
	rate, err := b.drainRate(ctx, url, st, n, 1, act)
	if err != nil {
		return err
	}
	record("reconcile_throughput_chain", rate, "1/s", "≥ 2000", atLeast(2000))
	return nil
}

// throughput reconciles n resources with the noop action on replicas reconcilers, with
// watchers idle SSE clients connected to a server on the same database.
func (b *bench) throughput(ctx context.Context, n, replicas, watchers int, query string) error {
	st, url, err := b.freshStore(ctx, 4)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := b.seed(ctx, st, n); err != nil {
		return err
	}
	act, _ := noop.New(nil, actions.Env{Name: "act", Logger: b.log})
	if watchers > 0 {
		stopWatch, err := b.watchers(ctx, st, watchers, query)
		if err != nil {
			return err
		}
		defer stopWatch()
	}
	rate, err := b.drainRate(ctx, url, st, n, replicas, act)
	if err != nil {
		return err
	}
	name := "reconcile_throughput"
	switch {
	case watchers > 0 && query != "":
		name = fmt.Sprintf("reconcile_throughput_%d_watchers", watchers)
	case watchers > 0:
		name = fmt.Sprintf("reconcile_throughput_%d_streaming_watchers", watchers)
	case replicas > 1:
		name = fmt.Sprintf("reconcile_throughput_%d_replicas", replicas)
	}
	record(name, rate, "1/s", "≥ 5000", atLeast(5000))
	return nil
}

// watchers serves the API on st and connects n SSE clients that read and discard.
func (b *bench) watchers(ctx context.Context, st *store.Store, n int, query string) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	srv := server.New(st, server.Options{MaxWatchesPerClient: n}, b.log) // one client holds them all
	api := httptest.NewServer(srv.Handler())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		st.Listen(ctx, []string{store.ChangesChannel}, func(string, string) { srv.NotifyChanges() }, b.log)
	}()
	for i := 0; i < n; i++ {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, api.URL+"/api/v1/watch"+query, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
		}()
	}
	return func() {
		cancel()
		srv.Stop()
		api.Close()
		wg.Wait()
	}, nil
}
