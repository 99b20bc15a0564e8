// Command bench is trueup's benchmark suite (`make bench`, DESIGN §12). It builds its own
// data in a private PostgreSQL cluster and local Git repositories, prints one line per figure
// as `name value unit`, then a table with the targets.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/internal/changewindow"
	"github.com/trueup-dev/trueup/internal/pgembed"
	"github.com/trueup-dev/trueup/internal/policy"
	"github.com/trueup-dev/trueup/internal/store"
)

type figure struct {
	name   string
	value  float64
	unit   string
	target string
	ok     func(float64) bool
}

var results []figure

func record(name string, value float64, unit, target string, ok func(float64) bool) {
	results = append(results, figure{name, value, unit, target, ok})
	fmt.Printf("%s %.2f %s\n", name, value, unit)
}

func atLeast(x float64) func(float64) bool { return func(v float64) bool { return v >= x } }
func atMost(x float64) func(float64) bool  { return func(v float64) bool { return v <= x } }

func main() {
	if spec := os.Getenv(apiClientsEnv); spec != "" {
		if err := apiClientsMain(spec); err != nil {
			fmt.Fprintln(os.Stderr, "bench: api clients:", err)
			os.Exit(1)
		}
		return
	}
	only := flag.String("only", "", "comma-separated figure groups to run (graph,resourceset,policy,reconcile,longtx,gate,windows,calls,chain,apiload,defaults,sync,syncrules,synckustomize,claim,webhook,failover,serve,preview; scale1m, drain and reads1m only when named)")
	traced := flag.Bool("tracing", false, "export every span to a collector on loopback, as with a tracing: block (figures with tracing on)")
	flag.Parse()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("TRUEUP_BENCH_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if *traced {
		stop, received, err := startTracing(ctx, log)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: tracing:", err)
			os.Exit(1)
		}
		defer func() { stop(); fmt.Printf("tracing: %d bytes of spans exported\n", received.Load()) }()
	}
	if err := run(ctx, *only, log); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	printTable()
}

func run(ctx context.Context, only string, log *slog.Logger) error {
	want := func(g string) bool { return only == "" || strings.Contains(","+only+",", ","+g+",") }
	// Before the database starts: the graph and resourceset figures need none.
	if want("graph") {
		if err := graphIngest(); err != nil {
			return fmt.Errorf("graph ingest: %w", err)
		}
		if only == "graph" {
			return nil
		}
	}
	if want("resourceset") {
		if err := resourceSetExpand(); err != nil {
			return fmt.Errorf("resourceset expansion: %w", err)
		}
		if only == "resourceset" {
			return nil
		}
	}
	if want("policy") {
		if err := policyEval(ctx); err != nil {
			return fmt.Errorf("policy evaluation: %w", err)
		}
		if only == "policy" {
			return nil
		}
	}
	dir, err := os.MkdirTemp("", "trueup-bench-")
	if err != nil {
		return err
	}
	if os.Getenv("TRUEUP_BENCH_KEEP") == "" {
		defer os.RemoveAll(dir)
	}
	// MkdirTemp makes it 0700; as root, the private clusters' user must traverse it, and
	// pgembed does not widen folders it did not create. This one is the benchmark's own.
	if err := os.Chmod(dir, 0o711); err != nil {
		return err
	}
	cluster, err := pgembed.Start(ctx, pgembed.Options{Dir: filepath.Join(dir, "pg"), Logger: log, Fast: true})
	if err != nil {
		return err
	}
	defer cluster.Stop()
	b := &bench{cluster: cluster, dir: dir, log: log}
	if want("reconcile") {
		if err := b.reconcileThroughput(ctx); err != nil {
			return fmt.Errorf("reconcile throughput: %w", err)
		}
	}
	if want("longtx") {
		if err := b.longTxThroughput(ctx, 20000); err != nil {
			return fmt.Errorf("reconcile throughput with a long transaction: %w", err)
		}
	}
	if want("gate") {
		if err := b.gateThroughput(ctx, !want("reconcile")); err != nil {
			return fmt.Errorf("reconcile throughput with policies: %w", err)
		}
	}
	if want("windows") {
		if err := b.windowsThroughput(ctx, !want("reconcile")); err != nil {
			return fmt.Errorf("reconcile throughput with change windows: %w", err)
		}
	}
	if want("calls") {
		// Calls of 1 ms and 20 ms: most calls' starts are stored (a noop call returns before).
		for _, d := range []time.Duration{time.Millisecond, 20 * time.Millisecond} {
			if err := b.callsThroughput(ctx, 10000, d); err != nil {
				return fmt.Errorf("calls throughput: %w", err)
			}
		}
	}
	if want("chain") {
		if err := b.chainThroughput(ctx, 10000, 10); err != nil {
			return fmt.Errorf("chain throughput: %w", err)
		}
	}
	if want("apiload") {
		if err := b.apiLoadFigures(ctx); err != nil {
			return fmt.Errorf("reconcile throughput under API load: %w", err)
		}
	}
	if want("defaults") {
		if err := b.defaultsThroughput(ctx); err != nil {
			return fmt.Errorf("reconcile throughput at the defaults: %w", err)
		}
	}
	if want("sync") {
		if err := b.syncFigures(ctx, false); err != nil {
			return fmt.Errorf("sync: %w", err)
		}
	}
	if want("syncrules") {
		if err := b.syncFigures(ctx, true); err != nil {
			return fmt.Errorf("sync with CEL rules: %w", err)
		}
	}
	if want("synckustomize") {
		if err := b.kustomizeFigures(ctx); err != nil {
			return fmt.Errorf("sync with kustomize: %w", err)
		}
	}
	if want("claim") {
		if err := b.claimLatency(ctx); err != nil {
			return fmt.Errorf("claim latency: %w", err)
		}
	}
	if want("webhook") {
		if err := b.webhookToReconcile(ctx); err != nil {
			return fmt.Errorf("webhook to reconcile: %w", err)
		}
	}
	if want("failover") {
		if err := b.failoverFigures(ctx); err != nil {
			return fmt.Errorf("failover: %w", err)
		}
	}
	if want("preview") {
		if err := b.previewLatency(ctx); err != nil {
			return fmt.Errorf("preview latency: %w", err)
		}
	}
	if want("serve") {
		if err := b.serveFigures(ctx); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
	}
	// scale1m runs only when named: it takes minutes and gigabytes of disk.
	if strings.Contains(","+only+",", ",scale1m,") {
		if err := b.scale1mFigures(ctx); err != nil {
			return fmt.Errorf("a million resources: %w", err)
		}
	}
	if strings.Contains(","+only+",", ",drain,") {
		if err := b.drainFresh(ctx); err != nil {
			return fmt.Errorf("drain of fresh resources: %w", err)
		}
	}
	if strings.Contains(","+only+",", ",reads1m,") {
		if err := b.reads1mFigures(ctx); err != nil {
			return fmt.Errorf("reads at a million: %w", err)
		}
	}
	return nil
}

type bench struct {
	cluster  *pgembed.Cluster
	dir      string
	log      *slog.Logger
	dbs      int
	policies *policy.Set // the policies the reconcilers of runReconcilers read (nil: none)
	// windows are the change windows the reconcilers of runReconcilers read (nil: none).
	windows *changewindow.Set
	// resync is the resync interval of the reconcilers of runReconcilers (0: the default).
	resync time.Duration
}

// freshStore creates an empty migrated database.
func (b *bench) freshStore(ctx context.Context, conns int32) (*store.Store, string, error) {
	b.dbs++
	name := fmt.Sprintf("bench_%d", b.dbs)
	admin, err := store.Open(ctx, b.cluster.URL("trueup"), store.Options{MaxConns: 2})
	if err != nil {
		return nil, "", err
	}
	_, err = admin.Pool().Exec(ctx, "CREATE DATABASE "+name)
	admin.Close()
	if err != nil {
		return nil, "", err
	}
	url := b.cluster.URL(name)
	st, err := store.Open(ctx, url, store.Options{MaxConns: conns})
	if err != nil {
		return nil, "", err
	}
	if _, err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, "", err
	}
	return st, url, nil
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s)-1) * p)
	return s[i]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func git(dir string, args ...string) error {
	cmd := exec.Command("git", append([]string{"-c", "user.name=bench", "-c", "user.email=b@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("git %v: %v: %s", args, err, out)
	}
	return nil
}

func printTable() {
	fmt.Println()
	fmt.Printf("%-44s %12s  %-6s %-12s %s\n", "figure", "value", "unit", "target", "met")
	fmt.Println(strings.Repeat("-", 86))
	for _, r := range results {
		met := "yes"
		if r.ok != nil && !r.ok(r.value) {
			met = "NO"
		}
		if r.target == "" {
			met = ""
		}
		fmt.Printf("%-44s %12.2f  %-6s %-12s %s\n", r.name, r.value, r.unit, r.target, met)
	}
	fmt.Printf("\nmachine: %d CPUs, %s/%s, %s\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
}
