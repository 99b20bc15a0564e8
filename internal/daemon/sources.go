package daemon

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync/atomic"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/commitstatus"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/preview"
	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/syncer"
	"github.com/trueup-dev/trueup/sources"
)

// runningSource is one configured source while the daemon runs it.
type runningSource struct {
	cfg      config.Source
	keys     *sealed.Keys // its decryption keys (nil: none), read when it was built
	reg      store.SourceConfig
	src      sources.Source
	syncer   *syncer.Syncer
	reporter *commitstatus.Reporter
	preview  atomic.Pointer[preview.Runner] // replaced by a reload that changes action instances
	release  func()                         // the action instances the preview runner plans with (loop-owned)
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{} // closed when the syncer has returned (nil: not run)
}

// buildSource builds sc's source, commit status reporter, syncer and preview runner without
// starting any; acts are the instances its ResourceTypes are checked against (the set in
// use once running).
func (rt *Daemon) buildSource(cfg *config.Config, sc config.Source, keys map[string]*sealed.Keys, acts map[string]actions.Action) (*runningSource, error) {
	src, reg, err := NewSource(cfg, sc, rt.log)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", sc.Name, err)
	}
	reg.Prune = &store.SourcePrune{Enabled: sc.PruneEnabled(), MaxFraction: sc.Prune.MaxFraction, AllowEmpty: sc.Prune.AllowEmpty}
	rs := &runningSource{cfg: sc, keys: keys[sc.Name], reg: reg, src: src}
	interval := time.Minute
	if sc.Git != nil {
		interval = sc.Git.Interval
	} else if sc.Dir != nil {
		interval = sc.Dir.Interval
	}
	var reporter syncer.Reporter
	if cs := sc.CommitStatus; cs != nil {
		rep, err := commitstatus.New(commitstatus.Config{Provider: cs.Provider, Token: cs.Token, BaseURL: cs.BaseURL, Insecure: cs.Insecure, Repo: cs.Repo,
			TargetURL: strings.TrimSuffix(cfg.Server.ExternalURL, "/") + "/sources/" + sc.Name}, sc.Name, rt.store, rt.log)
		if err != nil {
			rs.close()
			return nil, fmt.Errorf("source %s: commitStatus: %w", sc.Name, err)
		}
		rs.reporter, reporter = rep, rep
	}
	rs.syncer = syncer.New(rt.store, syncer.Options{Name: sc.Name, Source: src, Interval: interval,
		Prune: sc.PruneEnabled(), MaxPruneFraction: sc.Prune.MaxFraction, AllowEmpty: sc.Prune.AllowEmpty, Replica: rt.replica, LeaseTTL: cfg.Reconcile.LeaseTTL, Live: rt.liveHeld,
		CheckAction: rt.checkAction, CheckReference: rt.checkReference, Limits: manifest.Limits(cfg.Limits), Redact: rt.redact, Metrics: rt.met, Reporter: reporter,
		Opener: sealed.NewOpener(keys[sc.Name])}, rt.log)
	if sc.PreviewEnabled() {
		p, err := newPreviewRunner(cfg, sc, src, rt.store, acts, rt.acts.Plans(), rt.checkReference, rt.redact, rt.replica, rt.log)
		if err != nil {
			rs.close()
			return nil, err
		}
		rs.preview.Store(p)
	}
	return rs, nil
}

// start starts rs: its source, registration and preview runner, and its syncer once the daemon
// runs, all under a context of its own that stop ends.
func (rt *Daemon) start(rs *runningSource) error {
	rs.ctx, rs.cancel = context.WithCancel(rt.ctx)
	if rt.test.startSource != nil {
		if err := rt.test.startSource(rs.cfg.Name); err != nil {
			return fmt.Errorf("source %s: %w", rs.cfg.Name, err)
		}
	}
	if st, ok := rs.src.(interface{ Start(context.Context) error }); ok {
		if err := st.Start(rs.ctx); err != nil {
			return fmt.Errorf("source %s: %w", rs.cfg.Name, err)
		}
	}
	if err := rt.store.RegisterSource(rs.ctx, rs.reg); err != nil {
		return fmt.Errorf("source %s: %w", rs.cfg.Name, err)
	}
	if err := rs.startPreview(); err != nil {
		return err
	}
	if rt.running {
		rt.run(rs)
	}
	return nil
}

// run runs rs's syncer until its context ends (stop, or the daemon's).
func (rt *Daemon) run(rs *runningSource) {
	rs.done = make(chan struct{})
	rt.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		defer close(rs.done)
		_ = rs.syncer.Run(rs.ctx)
	}()
}

// attachPreview rebuilds rs's preview runner against the action instances in use, which it
// holds until it stops; the runner it replaces is stopped and its instances released.
func (rt *Daemon) attachPreview(cfg *config.Config, rs *runningSource) error {
	old := rs.preview.Load()
	if old == nil {
		return nil
	}
	old.Stop()
	if rs.release != nil {
		rs.release()
		rs.release = nil
	}
	acts, release := rt.acts.Snapshot()
	p, err := newPreviewRunner(cfg, rs.cfg, rs.src, rt.store, acts, rt.acts.Plans(), rt.checkReference, rt.redact, rt.replica, rt.log)
	if err != nil {
		release()
		rs.preview.Store(nil)
		return err
	}
	rs.preview.Store(p)
	rs.release = release
	return nil
}

// startPreview starts rs's preview runner (if any) under rs's context.
func (rs *runningSource) startPreview() error {
	if p := rs.preview.Load(); p != nil {
		if err := p.Start(rs.ctx); err != nil {
			return fmt.Errorf("source %s: preview: %w", rs.cfg.Name, err)
		}
	}
	return nil
}

// runAll starts the syncers of the sources started before the daemon was ready to run them.
func (rt *Daemon) runAll() {
	rt.running = true
	for _, rs := range rt.sources() {
		rt.run(rs)
	}
}

// stop ends rs: its syncer (which gives its lease up, so that a replica that still has the
// source takes it at once), its preview runner and reporter, then the source. The source's
// resources are not touched.
func (rs *runningSource) stop() {
	if rs.cancel != nil {
		rs.cancel()
	}
	if rs.done != nil {
		<-rs.done
	}
	rs.close()
}

func (rs *runningSource) close() {
	if p := rs.preview.Load(); p != nil {
		p.Stop()
	}
	if rs.release != nil {
		rs.release()
	}
	if rs.reporter != nil {
		_ = rs.reporter.Close()
	}
	_ = rs.src.Close()
}

// sources are the running sources by name.
func (rt *Daemon) sources() map[string]*runningSource {
	if p := rt.srcs.Load(); p != nil {
		return *p
	}
	return nil
}

// syncer is the running syncer of a source (nil: none).
func (rt *Daemon) syncer(name string) *syncer.Syncer {
	if rs := rt.sources()[name]; rs != nil {
		return rs.syncer
	}
	return nil
}

// publish makes m the running sources for every reader; restarting are the sources between
// two copies (a nil entry for ReadTree: retried, not refused).
func (rt *Daemon) publish(m map[string]*runningSource, restarting []string) {
	m = maps.Clone(m) // readers iterate it while apply goes on filling the caller's
	rt.srcs.Store(&m)
	bySrc := make(map[string]sources.Source, len(m))
	for _, name := range restarting {
		bySrc[name] = nil
	}
	for name, rs := range m {
		bySrc[name] = rs.src
	}
	rt.trees.set(bySrc)
	if rt.hooks != nil {
		rt.hooks.SetSources(webhookSources(rt.cfg.Load()))
	}
}

// previewSubmit is the webhook handler's Preview.
func (rt *Daemon) previewSubmit(ev preview.Event) error {
	rs := rt.sources()[ev.Source]
	var p *preview.Runner
	if rs != nil {
		p = rs.preview.Load()
	}
	if p == nil {
		return fmt.Errorf("source %s does not preview pull requests", ev.Source)
	}
	return p.Submit(ev)
}

// startSource attaches rs's preview runner to the action instances in use and starts rs.
func (rt *Daemon) startSource(cfg *config.Config, rs *runningSource) error {
	err := rt.attachPreview(cfg, rs)
	if err == nil {
		err = rt.start(rs)
	}
	return err
}

// swapIn starts next, whose previous copy (if any) is stopped. When next fails to start it
// is stopped and, for a changed source, rebuild builds and starts the previous copy again, so
// that a source is never left dead by a reload that reports it. It returns the copy that
// runs (nil: none) and why next is not it.
func swapIn(next *runningSource, start func(*runningSource) error, rebuild func() (*runningSource, error)) (*runningSource, error) {
	err := start(next)
	if err == nil {
		return next, nil
	}
	next.stop()
	if rebuild == nil {
		return nil, fmt.Errorf("%w (not running on this replica until the next reload or restart)", err)
	}
	back, berr := rebuild()
	if berr != nil {
		if back != nil {
			back.stop()
		}
		return nil, fmt.Errorf("%w; its previous config failed to start again too (not running on this replica until the next reload or restart): %w", err, berr)
	}
	return back, fmt.Errorf("%w (its previous config runs again)", err)
}
