package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/commitstatus"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/liveness"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/metrics"
	"github.com/trueup-dev/trueup/internal/notifier"
	"github.com/trueup-dev/trueup/internal/preview"
	"github.com/trueup-dev/trueup/internal/reconciler"
	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/internal/secrets"
	"github.com/trueup-dev/trueup/internal/server"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/syncer"
	"github.com/trueup-dev/trueup/internal/webhook"
	"github.com/trueup-dev/trueup/sources"
)

// reloader is what a config reload changes while serve runs: the config, the action
// instances, the running sources (syncer, commit status reporter, preview runner) and the
// notification sender. Everything else serve built at start (database, listener, auth,
// workers, secret stores) stays until the next restart.
//
// One goroutine owns it (loop): SIGHUP and POST /api/v1/admin/reload both ask that goroutine,
// so reloads never overlap. The other goroutines read its parts through atomic pointers.
type reloader struct {
	path    string
	adjust  func(*config.Config) error // serve's flags, applied to every config read
	ctx     context.Context            // serve's: the sources started live under it
	replica string
	log     *slog.Logger
	logOut  *scrubWriter
	reg     *actions.Registry
	dbURL   *lateURL
	trees   *lateTrees

	// Set once the database is open.
	store    *store.Store
	met      *metrics.Metrics
	resolver *secrets.Resolver
	hooks    *webhook.Handler
	// live is the replica's liveness session, set once it is first held; singleton lease
	// takers ask liveHeld before every attempt.
	live atomic.Pointer[liveness.Liveness]

	cfg    atomic.Pointer[config.Config]
	hash   string // of the config file running
	acts   *actionSet
	srcs   atomic.Pointer[map[string]*runningSource]
	reveal atomic.Pointer[reconciler.Reveal]
	last   atomic.Pointer[server.ReloadResult]

	// Owned by the loop goroutine (and by serve before it starts).
	secrets []string // every secret of every config loaded: the log keeps scrubbing them
	sender  *notifier.Sender
	running bool // the sources' syncers run (serve finished starting)
	wg      sync.WaitGroup

	requests chan chan server.ReloadResult
}

// runningSource is one configured source while serve runs it.
type runningSource struct {
	cfg      config.Source
	reg      store.SourceConfig
	src      sources.Source
	syncer   *syncer.Syncer
	reporter *commitstatus.Reporter
	preview  *preview.Runner
	release  func() // the action instances the preview runner plans with
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{} // closed when the syncer has returned (nil: not run)
}

// loaded is a config read and checked, with every part built but nothing started.
type loaded struct {
	cfg     *config.Config
	hash    string
	acts    map[string]actions.Action
	keys    map[string]*sealed.Keys
	sources map[string]*runningSource
	sender  *notifier.Sender // nil: notifications unchanged
}

// close drops what was built and not taken.
func (l *loaded) close() {
	closeActions(l.acts)
	for _, rs := range l.sources {
		rs.close()
	}
}

// load reads the config file as serve's start does, and builds every part of it as `trueup
// config check` does (every action instance), plus the decryption keys and the sources
// (built, not started): any error refuses the whole config.
func (rt *reloader) load() (*loaded, error) {
	cfg, err := loadConfig(rt.path)
	if err != nil {
		return nil, err
	}
	if err := rt.adjust(cfg); err != nil {
		return nil, cfg.ScrubError(err)
	}
	l := &loaded{cfg: cfg, hash: configHash(rt.path), sources: map[string]*runningSource{}}
	if l.acts, err = newActions(cfg, rt.reg, rt.log, rt.dbURL.get, rt.trees.read); err != nil {
		return nil, cfg.ScrubError(err) // factories quote the config values they refuse
	}
	if l.keys, err = sourceKeys(cfg); err != nil {
		l.close()
		return nil, cfg.ScrubError(err)
	}
	var errs []error
	for _, sc := range cfg.Sources {
		rs, err := rt.buildSource(cfg, sc, l.keys, l.acts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		l.sources[sc.Name] = rs
	}
	if err := errors.Join(errs...); err != nil {
		l.close()
		return nil, actions.ScrubError(cfg.ScrubError(err), scrubber(cfg, l.acts))
	}
	return l, nil
}

// buildSource builds sc's source, commit status reporter, syncer and preview runner without
// starting any; acts are the instances its ResourceTypes are checked against (the set in
// use once running).
func (rt *reloader) buildSource(cfg *config.Config, sc config.Source, keys map[string]*sealed.Keys, acts map[string]actions.Action) (*runningSource, error) {
	src, reg, err := newSource(cfg, sc, rt.log)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", sc.Name, err)
	}
	rs := &runningSource{cfg: sc, reg: reg, src: src}
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
	scrub := rt.scrub
	rs.syncer = syncer.New(rt.store, syncer.Options{Name: sc.Name, Source: src, Interval: interval,
		Prune: sc.PruneEnabled(), MaxPruneFraction: sc.Prune.MaxFraction, Replica: rt.replica, LeaseTTL: cfg.Reconcile.LeaseTTL, Live: rt.liveHeld,
		CheckAction: rt.checkAction, Limits: manifest.Limits(cfg.Limits), Scrub: scrub, Metrics: rt.met, Reporter: reporter,
		Opener: sealed.NewOpener(keys[sc.Name])}, rt.log)
	if sc.PreviewEnabled() {
		if rs.preview, err = newPreviewRunner(cfg, sc, src, rt.store, acts, scrub, rt.replica, rt.log); err != nil {
			rs.close()
			return nil, err
		}
	}
	return rs, nil
}

// checkAction is the syncers' CheckAction: against the action instances configured now.
func (rt *reloader) checkAction(name string, with json.RawMessage) error {
	return checkAction(rt.acts.current())(name, with)
}

// start starts rs: its source, registration and preview runner, and its syncer once serve
// runs, all under a context of its own that stop ends.
func (rt *reloader) start(rs *runningSource) error {
	rs.ctx, rs.cancel = context.WithCancel(rt.ctx)
	if st, ok := rs.src.(interface{ Start(context.Context) error }); ok {
		if err := st.Start(rs.ctx); err != nil {
			return fmt.Errorf("source %s: %w", rs.cfg.Name, err)
		}
	}
	if err := rt.store.RegisterSource(rs.ctx, rs.reg); err != nil {
		return err
	}
	if rs.preview != nil {
		if err := rs.preview.Start(rs.ctx); err != nil {
			return fmt.Errorf("source %s: preview: %w", rs.cfg.Name, err)
		}
	}
	if rt.running {
		rt.run(rs)
	}
	return nil
}

// liveHeld reports whether this replica holds its liveness session (false before serve took
// it): a singleton lease taken without one is released by peers and by the next session.
func (rt *reloader) liveHeld() bool {
	l := rt.live.Load()
	return l != nil && l.Held()
}

// run runs rs's syncer until its context ends (stop, or serve's end).
func (rt *reloader) run(rs *runningSource) {
	rs.done = make(chan struct{})
	rt.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		defer close(rs.done)
		_ = rs.syncer.Run(rs.ctx)
	}()
}

// attachPreview rebuilds rs's preview runner against the action instances in use, which it
// holds until it stops.
func (rt *reloader) attachPreview(cfg *config.Config, rs *runningSource) error {
	if rs.preview == nil {
		return nil
	}
	rs.preview.Stop()
	acts, release := rt.acts.snapshot()
	p, err := newPreviewRunner(cfg, rs.cfg, rs.src, rt.store, acts, rt.scrub, rt.replica, rt.log)
	if err != nil {
		release()
		rs.preview = nil
		return err
	}
	rs.preview, rs.release = p, release
	return nil
}

// scrub is the scrubber of the log in use now.
func (rt *reloader) scrub(s string) string { return rt.logOut.current()(s) }

// runAll starts the syncers of the sources started before serve was ready to run them.
func (rt *reloader) runAll() {
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
	if rs.preview != nil {
		rs.preview.Stop()
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
func (rt *reloader) sources() map[string]*runningSource {
	if p := rt.srcs.Load(); p != nil {
		return *p
	}
	return nil
}

// syncer is the running syncer of a source (nil: none).
func (rt *reloader) syncer(name string) *syncer.Syncer {
	if rs := rt.sources()[name]; rs != nil {
		return rs.syncer
	}
	return nil
}

// publish makes m the running sources for every reader.
func (rt *reloader) publish(m map[string]*runningSource) {
	rt.srcs.Store(&m)
	bySrc := make(map[string]sources.Source, len(m))
	for name, rs := range m {
		bySrc[name] = rs.src
	}
	rt.trees.set(bySrc)
	if rt.hooks != nil {
		rt.hooks.SetSources(webhookSources(rt.cfg.Load()))
	}
}

// previewSubmit is the webhook handler's Preview.
func (rt *reloader) previewSubmit(ev preview.Event) error {
	rs := rt.sources()[ev.Source]
	if rs == nil || rs.preview == nil {
		return fmt.Errorf("source %s does not preview pull requests", ev.Source)
	}
	return rs.preview.Submit(ev)
}

// scrubWith adds the secrets of cfg and acts to the log's scrubber. Secrets are never
// dropped: a call started before a reload may still log its instance's.
func (rt *reloader) scrubWith(cfg *config.Config, acts map[string]actions.Action) {
	for _, s := range secretsOf(cfg, acts) {
		if !slices.Contains(rt.secrets, s) {
			rt.secrets = append(rt.secrets, s)
		}
	}
	rt.logOut.set(actions.Scrubber(rt.secrets))
}

// setReveal builds the reconciler's Reveal with keys.
func (rt *reloader) setReveal(keys map[string]*sealed.Keys) {
	r := revealer(rt.store, keys, rt.resolver)
	rt.reveal.Store(&r)
}

// revealCall is reconciler.Options.Reveal.
func (rt *reloader) revealCall(ctx context.Context, c store.Claimed) (json.RawMessage, []string, error) {
	return (*rt.reveal.Load())(ctx, c)
}

// loop serves reload requests (SIGHUP, the API) until ctx ends.
func (rt *reloader) loop(ctx context.Context, hup <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			rt.log.Info("SIGHUP: reloading the config", "file", rt.path)
			rt.reload()
		case reply := <-rt.requests:
			rt.log.Info("reload requested through the API: reloading the config", "file", rt.path)
			reply <- rt.reload()
		}
	}
}

// request is server.Options.Reload: it asks loop and waits for the result.
func (rt *reloader) request(ctx context.Context) server.ReloadResult {
	reply := make(chan server.ReloadResult, 1)
	select {
	case rt.requests <- reply:
	case <-ctx.Done():
		return server.ReloadResult{At: time.Now(), Errors: []string{"the reload did not start: " + ctx.Err().Error()}}
	case <-rt.ctx.Done():
		return server.ReloadResult{At: time.Now(), Errors: []string{"shutting down"}}
	}
	return <-reply
}

// lastReload is server.Options.LastReload.
func (rt *reloader) lastReload() (server.ReloadResult, bool) {
	if p := rt.last.Load(); p != nil {
		return *p, true
	}
	return server.ReloadResult{}, false
}

// reload reads the config again and applies what changed, or refuses it whole.
func (rt *reloader) reload() server.ReloadResult {
	res := server.ReloadResult{At: time.Now()}
	defer func() {
		rt.last.Store(&res)
		rt.met.ConfigLoaded(true, res.OK, res.At)
		rt.record(res)
	}()
	next, err := rt.load()
	if err != nil {
		res.Errors = errorLines(err)
		rt.log.Error("config reload refused: the running config is kept", "file", rt.path, "errors", res.Errors)
		return res
	}
	old := rt.cfg.Load()
	ch := config.Diff(old, next.cfg)
	if ch.Notifications {
		if next.sender, err = newSender(rt.store, next.cfg, rt.replica, rt.liveHeld, rt.met, rt.log); err != nil {
			next.close()
			res.Errors = errorLines(err)
			rt.log.Error("config reload refused: the running config is kept", "file", rt.path, "errors", res.Errors)
			return res
		}
	}
	res.OK, res.Hash = true, next.hash
	res.SourcesAdded, res.SourcesRemoved, res.SourcesChanged = ch.SourcesAdded, ch.SourcesRemoved, ch.SourcesChanged
	res.ActionsAdded, res.ActionsRemoved, res.ActionsChanged = ch.ActionsAdded, ch.ActionsRemoved, ch.ActionsChanged
	res.Notifications, res.RestartRequired = ch.Notifications, ch.RestartRequired
	res.Errors = rt.apply(next, ch)
	rt.hash = next.hash
	for _, b := range ch.RestartRequired {
		rt.log.Warn(b+" changed: takes effect at the next restart", "block", b)
	}
	rt.log.Info("config reloaded", "hash", next.hash, "sources_added", ch.SourcesAdded, "sources_removed", ch.SourcesRemoved,
		"sources_changed", ch.SourcesChanged, "actions_added", ch.ActionsAdded, "actions_removed", ch.ActionsRemoved,
		"actions_changed", ch.ActionsChanged, "notifications", ch.Notifications, "restart_required", ch.RestartRequired)
	return res
}

// apply makes next the running config; ch is what changed. It returns what failed to start
// (a source whose Start failed is left out until the next reload or restart).
func (rt *reloader) apply(next *loaded, ch config.Changes) []string {
	// The scrubber first: the new instances and sources may log their secrets from now on.
	rt.scrubWith(next.cfg, next.acts)
	keep := map[string]bool{}
	for _, a := range next.cfg.Actions {
		keep[a.Name] = !slices.Contains(ch.ActionsAdded, a.Name) && !slices.Contains(ch.ActionsChanged, a.Name)
	}
	rt.acts.replace(next.acts, keep)
	next.acts = nil
	rt.setReveal(next.keys)
	rt.cfg.Store(next.cfg)

	// A preview runner plans with the instances it was built with: with any instance
	// changed, its source restarts.
	restart := slices.Clone(ch.SourcesChanged)
	if len(ch.ActionsAdded)+len(ch.ActionsRemoved)+len(ch.ActionsChanged) > 0 {
		for _, sc := range next.cfg.Sources {
			if sc.PreviewEnabled() && !slices.Contains(restart, sc.Name) && !slices.Contains(ch.SourcesAdded, sc.Name) {
				restart = append(restart, sc.Name)
			}
		}
	}
	running := rt.sources()
	m := make(map[string]*runningSource, len(next.sources))
	for name, rs := range running {
		if !slices.Contains(ch.SourcesRemoved, name) && !slices.Contains(restart, name) {
			m[name] = rs
		}
	}
	// Stopped before the new ones start: a changed Git source reuses its mirror's folder.
	var stopped sync.WaitGroup
	for _, name := range append(slices.Clone(ch.SourcesRemoved), restart...) {
		if rs := running[name]; rs != nil {
			stopped.Go(rs.stop)
		}
	}
	stopped.Wait()
	var failed []string
	for _, sc := range next.cfg.Sources {
		rs := next.sources[sc.Name]
		delete(next.sources, sc.Name)
		if m[sc.Name] != nil {
			rs.close() // unchanged: built only to check it
			continue
		}
		err := rt.attachPreview(next.cfg, rs)
		if err == nil {
			err = rt.start(rs)
		}
		if err != nil {
			msg := rt.logOut.current()(err.Error())
			rt.log.Error("reload: source not started", "source", sc.Name, "err", msg)
			failed = append(failed, msg)
			rs.stop()
			continue
		}
		m[sc.Name] = rs
	}
	rt.publish(m)
	if next.sender != nil {
		rt.sender.Stop()
		if err := next.sender.Start(rt.ctx); err != nil {
			failed = append(failed, "notifications: "+err.Error())
		}
		rt.sender = next.sender
	}
	return failed
}

// record writes this replica's config status to its replicas row (the dashboard's replicas
// table): the config running, or the errors of the reload refused.
func (rt *reloader) record(res server.ReloadResult) {
	c := store.ReplicaConfig{Hash: rt.hash, LoadedAt: res.At}
	if !res.OK {
		c = store.ReplicaConfig{Error: strings.Join(res.Errors, "\n"), ErrorAt: res.At}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(rt.ctx), 5*time.Second)
	defer cancel()
	if err := rt.store.SetReplicaConfig(ctx, rt.replica, c); err != nil {
		rt.log.Warn("record the config status", "err", err)
	}
}

// newSender builds the notification sender of cfg. It runs without a notifications block
// too: the outbox is written whatever the config says, and with no rule its entries are
// finished unsent and trimmed.
func newSender(st *store.Store, cfg *config.Config, replica string, live func() bool, met *metrics.Metrics, logger *slog.Logger) (*notifier.Sender, error) {
	ncfg := config.Notifications{MaxAttempts: 1}
	if cfg.Notifications != nil {
		ncfg = *cfg.Notifications
	}
	s, err := notifier.New(st, ncfg, notifier.Options{Replica: replica, LeaseTTL: cfg.Reconcile.LeaseTTL, Live: live,
		ExternalURL: cfg.Server.ExternalURL, Metrics: met,
		KeepSent: cfg.Retention.Notifications.Sent, KeepDead: cfg.Retention.Notifications.Dead}, logger)
	if err != nil {
		return nil, cfg.ScrubError(fmt.Errorf("notifications: %w", err))
	}
	return s, nil
}

// configHash names the content of the config file at path (sha256, shortened; "" when it
// cannot be read).
func configHash(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:6])
}

// errorLines splits a (joined) error into its lines.
func errorLines(err error) []string {
	var out []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
