package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/commitstatus"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/metrics"
	"github.com/trueup-dev/trueup/internal/policy"
	"github.com/trueup-dev/trueup/internal/preview"
	"github.com/trueup-dev/trueup/internal/redact"
	"github.com/trueup-dev/trueup/internal/render"
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

// sourceEnv is what the running sources take from the daemon.
type sourceEnv struct {
	store          *store.Store
	kinds          *sources.Registry // the source kinds
	log            *slog.Logger
	replica        string
	met            *metrics.Metrics
	acts           *actions.Set // the instances in use: preview runners plan with them
	redact         *redact.Registry
	live           func() bool
	checkAction    func(name string, with json.RawMessage) error
	checkReference func(from string, target graph.ID, outputs []string) error
	// policies are the policies of the config running (a reload applies them at once):
	// previews decide with them what a merge would wait for.
	policies func() *policy.Set
	// published is told each time the set publishes its sources (nil: nobody).
	published func()
	// reveal is told the keys of the copies that run: names are the configured sources
	// (nil: nobody).
	reveal func(names []string, running map[string]*runningSource)
	// startHook runs before a source's copy starts (this package's tests; nil: none).
	startHook func(name string) error
}

// sourceSet is the running sources: Build builds a config's sources without starting any,
// Start starts them as the set, Run starts their syncers, Wait waits for the syncers to
// return, Swap makes a reload's the set in place of the running ones
// (Rollback runs the previous copy of a changed source whose new copy fails to start), Stop
// stops them. One goroutine changes the set (the daemon's Start, then its reload loop);
// readers (webhooks, previews, terraform module reads, maintenance) see one published map
// at a time.
type sourceSet struct {
	env  sourceEnv
	ctx  context.Context // each source runs under a context of its own below it
	srcs atomic.Pointer[map[string]*runningSource]
	// trees are ReadTree's sources: a nil entry is one between two copies.
	trees   atomic.Pointer[map[string]sources.Source]
	running bool // the syncers run (Run)
	wg      sync.WaitGroup
}

func newSourceSet(ctx context.Context, env sourceEnv) *sourceSet {
	return &sourceSet{env: env, ctx: ctx}
}

// pendingSources are a config's sources built by Build, none started.
type pendingSources struct {
	cfg   *config.Config
	built map[string]*runningSource
}

// Close drops what was built and not taken.
func (p *pendingSources) Close() {
	if p == nil {
		return
	}
	for name, rs := range p.built {
		rs.close()
		delete(p.built, name)
	}
}

// Build builds every source of cfg (keys: their decryption keys; acts: the instances their
// ResourceTypes are checked against) without starting any; any error refuses them all.
func (s *sourceSet) Build(cfg *config.Config, keys map[string]*sealed.Keys, acts map[string]actions.Action) (*pendingSources, error) {
	p := &pendingSources{cfg: cfg, built: map[string]*runningSource{}}
	var errs []error
	for _, sc := range cfg.Sources {
		rs, err := s.build(cfg, sc, keys, acts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.built[sc.Name] = rs
	}
	if err := errors.Join(errs...); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Start starts p's sources as the set (the daemon's start), in the config's order: the first
// that fails stops the start; those started before it stay in the set, for Stop.
func (s *sourceSet) Start(p *pendingSources) error {
	running := map[string]*runningSource{}
	defer p.Close()
	for _, sc := range p.cfg.Sources {
		rs := p.built[sc.Name]
		delete(p.built, sc.Name)
		if err := s.startSource(p.cfg, rs); err != nil {
			rs.stop()
			s.publish(running, nil)
			return err
		}
		running[sc.Name] = rs
	}
	s.publish(running, nil)
	return nil
}

// build builds sc's source, commit status reporter, syncer and preview runner without
// starting any; acts are the instances its ResourceTypes are checked against (the set in
// use once running).
func (s *sourceSet) build(cfg *config.Config, sc config.Source, keys map[string]*sealed.Keys, acts map[string]actions.Action) (*runningSource, error) {
	src, info, err := NewSource(s.env.kinds, cfg, sc, s.env.log)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", sc.Name, err)
	}
	rs := &runningSource{cfg: sc, keys: keys[sc.Name], reg: registration(sc, info), src: src}
	var reporter syncer.Reporter
	if sc.CommitStatus != nil {
		rep, err := commitstatus.New(reporterConfig(cfg, sc), sc.Name, s.env.store, s.env.log)
		if err != nil {
			rs.close()
			return nil, fmt.Errorf("source %s: commitStatus: %w", sc.Name, err)
		}
		rs.reporter, reporter = rep, rep
	}
	e := &s.env
	rs.syncer = syncer.New(e.store, syncer.Options{Name: sc.Name, Source: src, Interval: info.Interval,
		Prune: sc.PruneEnabled(), MaxPruneFraction: sc.Prune.MaxFraction, AllowEmpty: sc.Prune.AllowEmpty, Replica: e.replica, LeaseTTL: cfg.Reconcile.LeaseTTL, Live: e.live,
		CheckAction: e.checkAction, CheckReference: e.checkReference, Limits: manifest.Limits(cfg.Limits), Redact: e.redact, Metrics: e.met, Reporter: reporter,
		Opener: sealed.NewOpener(keys[sc.Name]), Render: render.ForSource(sc, cfg.Reconcile.LeaseTTL*2/3)}, e.log)
	if sc.PreviewEnabled() {
		p, err := newPreviewRunner(cfg, sc, src, e.store, acts, e.acts.Plans(), e.checkReference, e.policies, e.redact, e.replica, e.log)
		if err != nil {
			rs.close()
			return nil, err
		}
		rs.preview.Store(p)
	}
	return rs, nil
}

// statusConfig is the forge client config of sc's commitStatus block (set).
func statusConfig(sc config.Source) commitstatus.Config {
	cs := sc.CommitStatus
	return commitstatus.Config{Provider: cs.Provider, Token: cs.Token, BaseURL: cs.BaseURL, Insecure: cs.Insecure, Repo: cs.Repo}
}

// reporterConfig is the config of sc's commit status reporter (commitStatus set): its
// statuses link to the source's dashboard page.
func reporterConfig(cfg *config.Config, sc config.Source) commitstatus.Config {
	c := statusConfig(sc)
	c.TargetURL = strings.TrimSuffix(cfg.Server.ExternalURL, "/") + "/sources/" + sc.Name
	return c
}

// start starts rs: its source, registration and preview runner, and its syncer once the set
// runs, all under a context of its own that stop ends.
func (s *sourceSet) start(rs *runningSource) error {
	rs.ctx, rs.cancel = context.WithCancel(s.ctx)
	if s.env.startHook != nil {
		if err := s.env.startHook(rs.cfg.Name); err != nil {
			return fmt.Errorf("source %s: %w", rs.cfg.Name, err)
		}
	}
	if st, ok := rs.src.(sources.Starter); ok {
		if err := st.Start(rs.ctx); err != nil {
			return fmt.Errorf("source %s: %w", rs.cfg.Name, err)
		}
	}
	if err := s.env.store.RegisterSource(rs.ctx, rs.reg); err != nil {
		return fmt.Errorf("source %s: %w", rs.cfg.Name, err)
	}
	if err := rs.startPreview(); err != nil {
		return err
	}
	if s.running {
		s.run(rs)
	}
	return nil
}

// run runs rs's syncer until its context ends (stop, or the set's).
func (s *sourceSet) run(rs *runningSource) {
	rs.done = make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(rs.done)
		_ = rs.syncer.Run(rs.ctx)
	}()
}

// attachPreview rebuilds rs's preview runner against the action instances in use, which it
// holds until it stops; the runner it replaces is stopped and its instances released.
func (s *sourceSet) attachPreview(cfg *config.Config, rs *runningSource) error {
	old := rs.preview.Load()
	if old == nil {
		return nil
	}
	old.Stop()
	if rs.release != nil {
		rs.release()
		rs.release = nil
	}
	e := &s.env
	acts, release := e.acts.Snapshot()
	p, err := newPreviewRunner(cfg, rs.cfg, rs.src, e.store, acts, e.acts.Plans(), e.checkReference, e.policies, e.redact, e.replica, e.log)
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

// Run starts the syncers of the sources started before the daemon was ready to run them;
// those started later run at once.
func (s *sourceSet) Run() {
	s.running = true
	for _, rs := range s.All() {
		s.run(rs)
	}
}

// Wait returns once every syncer has returned (their contexts ended).
func (s *sourceSet) Wait() { s.wg.Wait() }

// Stop stops every source of the set.
func (s *sourceSet) Stop() {
	for _, rs := range s.All() {
		rs.stop()
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

// All are the running sources by name (a nil set has none).
func (s *sourceSet) All() map[string]*runningSource {
	if s == nil {
		return nil
	}
	if p := s.srcs.Load(); p != nil {
		return *p
	}
	return nil
}

// publish makes m the running sources for every reader; restarting are the sources between
// two copies (a nil entry for ReadTree: retried, not refused).
func (s *sourceSet) publish(m map[string]*runningSource, restarting []string) {
	m = maps.Clone(m) // readers iterate it while Swap goes on filling the caller's
	s.srcs.Store(&m)
	bySrc := make(map[string]sources.Source, len(m))
	for _, name := range restarting {
		bySrc[name] = nil
	}
	for name, rs := range m {
		bySrc[name] = rs.src
	}
	s.trees.Store(&bySrc)
	if s.env.published != nil {
		s.env.published()
	}
}

// ReadTree is actions.Env.ReadTree: the files under dir of a running source's revision.
func (s *sourceSet) ReadTree(ctx context.Context, source, revision, dir string) ([]sources.TreeFile, error) {
	p := s.trees.Load()
	if p == nil {
		return nil, fmt.Errorf("source %q is not open yet", source)
	}
	src, ok := (*p)[source]
	switch {
	case !ok:
		return nil, actions.Terminalf("no source named %q", source)
	case src == nil:
		return nil, fmt.Errorf("source %q is not running on this replica (a config reload is restarting it, or it failed to start)", source)
	}
	tr, ok := src.(sources.TreeReader)
	if !ok {
		return nil, actions.Terminalf("source %q has no revisions to read a folder at (a Git or an OCI source has)", source)
	}
	return tr.ReadTree(ctx, revision, dir)
}

// startSource attaches rs's preview runner to the action instances in use and starts rs.
func (s *sourceSet) startSource(cfg *config.Config, rs *runningSource) error {
	err := s.attachPreview(cfg, rs)
	if err == nil {
		err = s.start(rs)
	}
	return err
}

// sources are the running sources by name.
func (rt *Daemon) sources() map[string]*runningSource { return rt.srcs.All() }

// syncer is the running syncer of a source (nil: none).
func (rt *Daemon) syncer(name string) *syncer.Syncer {
	if rs := rt.sources()[name]; rs != nil {
		return rs.syncer
	}
	return nil
}

// publishedSources is the source set's published: the webhook handler takes the sources of
// the config running.
func (rt *Daemon) publishedSources() {
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
