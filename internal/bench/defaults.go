package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/noop"
	"github.com/trueup-dev/trueup/internal/pgembed"
	"github.com/trueup-dev/trueup/internal/reconciler"
	"github.com/trueup-dev/trueup/internal/store"
)

// defaultsThroughput is reconcile_throughput_defaults: one replica at the default reconcile
// settings (16 workers, default lease TTL) draining 30,000 noop resources on a PostgreSQL
// that is durable (fsync and synchronous_commit on), as users run it: every commit waits for
// the disk, so the figure shows what each claim and result write costs.
func (b *bench) defaultsThroughput(ctx context.Context) error {
	const n = 30000
	cluster, err := pgembed.Start(ctx, pgembed.Options{Dir: filepath.Join(b.dir, "pg-durable"), Logger: b.log})
	if err != nil {
		return err
	}
	defer cluster.Stop()
	st, url, err := b.freshStoreOn(ctx, cluster)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := b.seed(ctx, st, n); err != nil {
		return err
	}
	// The replica's warnings are counted: draining alone, it must never report lost leases
	// (a result committed while a renewal ran once looked like one).
	warns := &warnCounter{}
	stop, err := b.defaultReplica(ctx, url, "bench-defaults", slog.New(warns))
	if err != nil {
		return err
	}
	start := time.Now()
	err = waitReady(ctx, st, n, 5*time.Minute)
	took := time.Since(start)
	stop()
	if err != nil {
		return err
	}
	record("reconcile_throughput_defaults", float64(n)/took.Seconds(), "1/s", "≥ 6000", atLeast(6000))
	record("leases_lost_warnings_defaults", float64(warns.lost.Load()), "count", "= 0", atMost(0))
	return nil
}

// freshStoreOn is freshStore on another cluster than the bench's.
func (b *bench) freshStoreOn(ctx context.Context, cluster *pgembed.Cluster) (*store.Store, string, error) {
	saved := b.cluster
	b.cluster = cluster
	defer func() { b.cluster = saved }()
	return b.freshStore(ctx, 4)
}

// defaultReplica starts one replica at the default reconcile settings (its own pool and
// LISTEN connection) with the noop action; stop waits for it and closes its pool.
func (b *bench) defaultReplica(ctx context.Context, url, name string, log *slog.Logger) (stop func(), err error) {
	act, _ := noop.New(nil, actions.Env{Name: "act", Logger: b.log})
	rs, err := store.Open(ctx, url, store.Options{})
	if err != nil {
		return nil, err
	}
	r := reconciler.New(rs, map[string]actions.Action{"act": act}, reconciler.Options{Replica: name}, log)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	go func() { _ = r.Run(ctx); done <- struct{}{} }()
	go func() {
		rs.Listen(ctx, []string{store.WorkChannel}, func(string, string) { r.Wake() }, b.log)
		done <- struct{}{}
	}()
	return func() {
		cancel()
		<-done
		<-done
		rs.Close()
	}, nil
}

// warnCounter is a slog handler counting "leases lost" warnings.
type warnCounter struct{ lost atomic.Int64 }

func (w *warnCounter) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnCounter) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "lost") {
		w.lost.Add(1)
	}
	return nil
}
func (w *warnCounter) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnCounter) WithGroup(string) slog.Handler      { return w }
