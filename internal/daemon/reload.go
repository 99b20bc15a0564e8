package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/commitstatus"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/crossref"
	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/metrics"
	"github.com/trueup-dev/trueup/internal/notifier"
	"github.com/trueup-dev/trueup/internal/preview"
	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/internal/server"
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

// loaded is a config read and checked, with every part built but nothing started.
type loaded struct {
	cfg     *config.Config // with the running values of the restart-only blocks
	pending []string       // the restart-only blocks whose values in the file are not in effect
	hash    string
	acts    map[string]actions.Action
	keys    map[string]*sealed.Keys
	sources map[string]*runningSource
	sender  *notifier.Sender // nil: notifications unchanged
}

// close drops what was built and not taken.
func (l *loaded) close() {
	CloseActions(l.acts)
	for _, rs := range l.sources {
		rs.close()
	}
}

// load builds every part of cfg (read by Deps.Load or given to Reload; readErr: why it could
// not be read) as `trueup config check` does (every action instance), plus the decryption keys and the sources
// (built, not started): any error refuses the whole config. secrets are the new config's
// (as far as it was read), which reload scrubs every error line of, with every earlier one's.
func (rt *Daemon) load(cfg *config.Config, readErr error) (_ *loaded, secrets []string, _ error) {
	if cfg != nil {
		secrets = cfg.Secrets()
	}
	if readErr != nil {
		return nil, secrets, readErr
	}
	running := rt.cfg.Load()
	pending := config.RestartOnlyChanged(running, cfg)
	if err := refuseRestartOnly(pending); err != nil {
		return nil, secrets, err
	}
	// Before anything is built: nothing a reload builds may use a value not in effect.
	config.KeepRestartOnly(cfg, running)
	var err error
	l := &loaded{cfg: cfg, pending: pending, hash: configHash(rt.deps.Path), sources: map[string]*runningSource{}}
	if l.acts, err = NewActions(cfg, rt.reg, rt.log, rt.dbURL.get, rt.trees.read); err != nil {
		return nil, secrets, err // factories quote the config values they refuse: scrubbed by reload
	}
	secrets = secretsOf(cfg, l.acts)
	if l.keys, err = SourceKeys(cfg); err != nil {
		l.close()
		return nil, secrets, err
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
		return nil, secrets, err
	}
	return l, secrets, nil
}

// refuseRestartOnly refuses a config whose restart-only changes must not look applied: a
// changed auth block (a revoked token, a narrowed role, anonymous access turned off) keeps
// its running values until a restart, so applying the rest of the file would report a
// revocation that is not in effect.
func refuseRestartOnly(pending []string) error {
	if slices.Contains(pending, "auth") {
		return errors.New("auth changed: tokens, roles and sign-in are read only at start, so this reload would leave the old ones in effect; restart trueup to apply the file (nothing of it was applied)")
	}
	return nil
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
	scrub := rt.scrub
	rs.syncer = syncer.New(rt.store, syncer.Options{Name: sc.Name, Source: src, Interval: interval,
		Prune: sc.PruneEnabled(), MaxPruneFraction: sc.Prune.MaxFraction, AllowEmpty: sc.Prune.AllowEmpty, Replica: rt.replica, LeaseTTL: cfg.Reconcile.LeaseTTL, Live: rt.liveHeld,
		CheckAction: rt.checkAction, CheckReference: rt.checkReference, Limits: manifest.Limits(cfg.Limits), Scrub: scrub, Metrics: rt.met, Reporter: reporter,
		Opener: sealed.NewOpener(keys[sc.Name])}, rt.log)
	if sc.PreviewEnabled() {
		p, err := newPreviewRunner(cfg, sc, src, rt.store, acts, rt.checkReference, scrub, rt.replica, rt.log)
		if err != nil {
			rs.close()
			return nil, err
		}
		rs.preview.Store(p)
	}
	return rs, nil
}

// actionType is the plugin type of the action instance name in the config running ("":
// none); the reconciler's traces name it.
func (rt *Daemon) actionType(name string) string {
	for _, a := range rt.cfg.Load().Actions {
		if a.Name == name {
			return a.Type
		}
	}
	return ""
}

// checkAction is the syncers' CheckAction: against the action instances configured now.
func (rt *Daemon) checkAction(name string, with json.RawMessage) error {
	return CheckAction(rt.acts.Current())(name, with)
}

// checkReference is the syncers', previews' and reconciler's CheckReference: against the
// grants of the config running (a reload applies them at once).
func (rt *Daemon) checkReference(from string, target graph.ID, outputs []string) error {
	return crossref.Check(rt.cfg.Load().References.Expose, from, target, outputs)
}

// start starts rs: its source, registration and preview runner, and its syncer once the daemon
// runs, all under a context of its own that stop ends.
func (rt *Daemon) start(rs *runningSource) error {
	rs.ctx, rs.cancel = context.WithCancel(rt.ctx)
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

// liveHeld reports whether this replica holds its liveness session (false before Start took
// it): a singleton lease taken without one is released by peers and by the next session.
func (rt *Daemon) liveHeld() bool {
	l := rt.live.Load()
	return l != nil && l.Held()
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
	p, err := newPreviewRunner(cfg, rs.cfg, rs.src, rt.store, acts, rt.checkReference, rt.scrub, rt.replica, rt.log)
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

// scrub is the scrubber of the log in use now.
func (rt *Daemon) scrub(s string) string { return rt.logOut.Current()(s) }

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

// scrubWith adds the secrets of cfg and acts to the log's scrubber. Secrets are never
// dropped: a call started before a reload may still log its instance's.
func (rt *Daemon) scrubWith(cfg *config.Config, acts map[string]actions.Action) {
	for _, s := range secretsOf(cfg, acts) {
		if !slices.Contains(rt.secrets, s) {
			rt.secrets = append(rt.secrets, s)
		}
	}
	rt.logOut.Set(actions.Scrubber(rt.secrets))
	listed := slices.Clone(rt.secrets)
	rt.listed.Store(&listed)
}

// configSecrets lists the secrets the log's scrubber removes (the reconciler checks output
// numbers against them).
func (rt *Daemon) configSecrets() []string {
	if l := rt.listed.Load(); l != nil {
		return *l
	}
	return nil
}

// setReveal builds the reconciler's Reveal with keys.
func (rt *Daemon) setReveal(keys map[string]*sealed.Keys) {
	rt.keys = keys
	r := revealer(rt.store, keys, rt.resolver)
	rt.reveal.Store(&r)
}

// revealKeys are the keys Reveal decrypts a source's resources with: those its running copy's
// syncer opens them with (running), so that both use the same generation of a rotated key;
// for a configured source with no copy running, those Reveal had.
func revealKeys(names []string, running map[string]*runningSource, had map[string]*sealed.Keys) map[string]*sealed.Keys {
	out := map[string]*sealed.Keys{}
	for _, name := range names {
		k := had[name]
		if rs := running[name]; rs != nil {
			k = rs.keys
		}
		if k != nil {
			out[name] = k
		}
	}
	return out
}

// revealCall is reconciler.Options.Reveal.
func (rt *Daemon) revealCall(ctx context.Context, c store.Claimed) (json.RawMessage, []string, error) {
	return (*rt.reveal.Load())(ctx, c)
}

// loop serves reload requests (Deps.Reloads, the API, Reload) until ctx ends. A request
// picked once ctx ended (select chooses at random among ready cases) is not served: the
// daemon is stopping.
func (rt *Daemon) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-rt.deps.Reloads:
			if ctx.Err() != nil {
				return
			}
			rt.log.Info("SIGHUP: reloading the config", "file", rt.deps.Path)
			rt.reload(rt.readFile())
		case req := <-rt.requests:
			if ctx.Err() != nil {
				req.reply <- shuttingDown()
				return
			}
			if req.cfg == nil {
				rt.log.Info("reload requested through the API: reloading the config", "file", rt.deps.Path)
				req.reply <- rt.reload(rt.readFile())
			} else {
				rt.log.Info("reloading the config")
				req.reply <- rt.reload(req.cfg, nil)
			}
		}
	}
}

// readFile is Deps.Load.
func (rt *Daemon) readFile() (*config.Config, error) {
	if rt.deps.Load == nil {
		return nil, errors.New("this daemon has no config file to read again")
	}
	return rt.deps.Load()
}

func shuttingDown() server.ReloadResult {
	return server.ReloadResult{At: time.Now(), Errors: []string{"shutting down: the config was not reloaded"}}
}

// request is server.Options.Reload: it reloads the file.
func (rt *Daemon) request(ctx context.Context) server.ReloadResult { return rt.ask(ctx, nil) }

// ask asks loop to reload cfg (nil: the file) and waits for the result, or until ctx ends
// (the reload then goes on: its result is logged and shown on the replicas row).
func (rt *Daemon) ask(ctx context.Context, cfg *config.Config) server.ReloadResult {
	if rt.ctx == nil {
		return server.ReloadResult{At: time.Now(), Errors: []string{"the daemon has not started: the config was not reloaded"}}
	}
	reply := make(chan server.ReloadResult, 1) // loop never blocks on a requester gone
	select {
	case rt.requests <- reloadRequest{cfg: cfg, reply: reply}:
	case <-ctx.Done():
		return server.ReloadResult{At: time.Now(), Errors: []string{"the reload did not start: " + ctx.Err().Error()}}
	case <-rt.ctx.Done():
		return shuttingDown()
	}
	select {
	case res := <-reply:
		return res
	case <-ctx.Done():
		return server.ReloadResult{At: time.Now(), Errors: []string{"no result yet (" + ctx.Err().Error() +
			"): the reload goes on; its result is logged and shown on this replica's row of GET /api/v1/replicas"}}
	}
}

// lastReload is server.Options.LastReload.
func (rt *Daemon) lastReload() (server.ReloadResult, bool) {
	if p := rt.last.Load(); p != nil {
		return *p, true
	}
	return server.ReloadResult{}, false
}

// reload applies what changed in cfg (readErr: why it could not be read), or refuses it whole.
func (rt *Daemon) reload(cfg *config.Config, readErr error) server.ReloadResult {
	res := server.ReloadResult{At: time.Now()}
	defer func() {
		rt.last.Store(&res)
		rt.met.ConfigLoaded(true, res.OK, res.At)
		rt.record(res)
	}()
	next, secrets, err := rt.load(cfg, readErr)
	// Every line that leaves (API, banner, log, the replicas row) is scrubbed of the secrets
	// of every config loaded so far and of this one's, refused or not.
	scrub := actions.Scrubber(append(slices.Clone(rt.secrets), secrets...))
	refuse := func(err error) server.ReloadResult {
		res.Errors = scrubLines(scrub, errorLines(err))
		rt.log.Error("config reload refused: the running config is kept", "file", rt.deps.Path, "errors", res.Errors)
		return res
	}
	if err != nil {
		return refuse(err)
	}
	old := rt.cfg.Load()
	ch := config.Diff(old, next.cfg)
	if ch.Notifications {
		if next.sender, err = newSender(rt.store, next.cfg, rt.replica, rt.liveHeld, rt.met, rt.log); err != nil {
			next.close()
			return refuse(err)
		}
	}
	res.OK, res.Hash = true, next.hash
	res.SourcesAdded, res.SourcesRemoved, res.SourcesChanged = ch.SourcesAdded, ch.SourcesRemoved, ch.SourcesChanged
	res.ActionsAdded, res.ActionsRemoved, res.ActionsChanged = ch.ActionsAdded, ch.ActionsRemoved, ch.ActionsChanged
	res.Notifications, res.RestartRequired = ch.Notifications, next.pending
	res.Warnings = scrubLines(scrub, moduleWarnings(next.cfg))
	for _, w := range res.Warnings {
		rt.log.Warn("reload: " + w)
	}
	res.Errors = scrubLines(scrub, rt.apply(old, next, ch))
	if ch.References {
		rt.regrant()
	}
	if len(res.Errors) > 0 {
		// Applied, except what Errors names: not a success, not a refusal either.
		res.OK, res.Partial = false, true
		rt.log.Error("config reload applied in part", "file", rt.deps.Path, "errors", res.Errors)
	}
	rt.hash = next.hash
	for _, b := range next.pending {
		rt.log.Warn(b+" changed: takes effect at the next restart (the running values stay in use)", "block", b)
	}
	rt.log.Info("config reloaded", "hash", next.hash, "sources_added", ch.SourcesAdded, "sources_removed", ch.SourcesRemoved,
		"sources_changed", ch.SourcesChanged, "actions_added", ch.ActionsAdded, "actions_removed", ch.ActionsRemoved,
		"actions_changed", ch.ActionsChanged, "notifications", ch.Notifications, "restart_required", next.pending)
	return res
}

// regrant applies changed reference grants to what was judged by the old ones: each running
// source tries its rejected head again, and every resource with a dependency in another
// namespace runs again (a removed grant stalls it, an added one frees it).
func (rt *Daemon) regrant() {
	for _, rs := range rt.sources() {
		rs.syncer.Reconsider()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(rt.ctx), 15*time.Second)
	defer cancel()
	n, err := rt.store.RequeueCrossNamespace(ctx)
	if err != nil {
		rt.log.Warn("reload: reference grants changed; resources with cross-namespace dependencies run at their next resync", "err", err)
		return
	}
	rt.log.Info("reload: reference grants changed", "resources_requeued", n)
}

// scrubLines passes every line through scrub.
func scrubLines(scrub func(string) string, lines []string) []string {
	for i, l := range lines {
		lines[i] = scrub(l)
	}
	return lines
}

// apply makes next the running config in place of old; ch is what changed. It returns what
// failed to start: a changed source whose new copy failed runs its previous copy again, an
// added one is left out until the next reload or restart.
func (rt *Daemon) apply(old *config.Config, next *loaded, ch config.Changes) []string {
	// The scrubber first: the new instances and sources may log their secrets from now on.
	rt.scrubWith(next.cfg, next.acts)
	var names []string
	for _, sc := range next.cfg.Sources {
		names = append(names, sc.Name)
	}
	// A changed source restarts, unless only its webhook secret changed (the webhook handler
	// takes it from the config published below).
	restart := slices.DeleteFunc(slices.Clone(ch.SourcesChanged), func(n string) bool { return slices.Contains(ch.WebhookOnly, n) })
	running := rt.sources()
	m := make(map[string]*runningSource, len(next.sources))
	for name, rs := range running {
		if !slices.Contains(ch.SourcesRemoved, name) && !slices.Contains(restart, name) {
			m[name] = rs
		}
	}
	for _, sc := range next.cfg.Sources {
		if slices.Contains(ch.WebhookOnly, sc.Name) && m[sc.Name] != nil {
			m[sc.Name].cfg = sc
		}
	}
	// A preview runner plans with the instances it was built with: with any instance
	// changed, the runners of the sources kept are rebuilt (their sources keep running).
	var replan []string
	if len(ch.ActionsAdded)+len(ch.ActionsRemoved)+len(ch.ActionsChanged) > 0 {
		for name, rs := range m {
			if rs.preview.Load() != nil {
				replan = append(replan, name)
			}
		}
	}
	stopping := append(slices.Clone(ch.SourcesRemoved), restart...)
	// Their preview runners before the instances they plan with are replaced: a plan of an
	// old instance must not overlap a call of the new one in the same working copy.
	var stopped sync.WaitGroup
	for _, name := range append(slices.Clone(stopping), replan...) {
		if rs := running[name]; rs != nil {
			if p := rs.preview.Load(); p != nil {
				stopped.Go(p.Stop)
			}
		}
	}
	stopped.Wait()
	keep := map[string]bool{}
	for _, a := range next.cfg.Actions {
		keep[a.Name] = !slices.Contains(ch.ActionsAdded, a.Name) && !slices.Contains(ch.ActionsChanged, a.Name)
	}
	rt.acts.Replace(next.acts, keep)
	next.acts = nil
	rt.cfg.Store(next.cfg)
	// Readers (webhooks, previews, terraform modules) stop getting the sources about to close
	// before they close; a restarting one answers "being restarted" (retried), not "none".
	var failed []string
	rt.publish(m, restart)
	for _, name := range replan {
		rs := m[name]
		err := rt.attachPreview(next.cfg, rs)
		if err == nil {
			err = rs.startPreview()
		}
		if err != nil {
			msg := rt.logOut.Current()(err.Error())
			rt.log.Error("reload: preview runner not started", "source", name, "err", msg)
			failed = append(failed, msg+" (the source syncs; its pull requests are not previewed)")
		}
	}
	// Stopped before the new ones start: a changed Git source reuses its mirror's folder.
	for _, name := range stopping {
		if rs := running[name]; rs != nil {
			stopped.Go(rs.stop)
		}
	}
	stopped.Wait()
	// The keys of the copies about to start, then (below) of those that did.
	starting := maps.Clone(m)
	for name, rs := range next.sources {
		if starting[name] == nil {
			starting[name] = rs
		}
	}
	rt.setReveal(revealKeys(names, starting, rt.keys))
	for _, sc := range next.cfg.Sources {
		rs := next.sources[sc.Name]
		delete(next.sources, sc.Name)
		if m[sc.Name] != nil {
			rs.close() // unchanged: built only to check it
			continue
		}
		prev := running[sc.Name] // stopped; nil: added
		rebuild := func() (*runningSource, error) {
			back, err := rt.buildSource(old, prev.cfg, map[string]*sealed.Keys{prev.cfg.Name: prev.keys}, rt.acts.Current())
			if err == nil {
				err = rt.startSource(old, back)
			}
			return back, err
		}
		if prev == nil {
			rebuild = nil
		}
		run, err := swapIn(rs, func(rs *runningSource) error { return rt.startSource(next.cfg, rs) }, rebuild)
		if err != nil {
			msg := rt.logOut.Current()(err.Error())
			rt.log.Error("reload: source not started", "source", sc.Name, "err", msg)
			failed = append(failed, msg)
		}
		if run != nil {
			m[sc.Name] = run
		}
	}
	rt.setReveal(revealKeys(names, m, rt.keys))
	var notRunning []string
	for _, name := range names {
		if m[name] == nil {
			notRunning = append(notRunning, name)
		}
	}
	rt.publish(m, notRunning)
	if next.sender != nil {
		rt.sender.Stop()
		if err := next.sender.Start(rt.ctx); err != nil {
			failed = append(failed, "notifications: "+err.Error())
		}
		rt.sender = next.sender
	}
	return failed
}

// moduleWarnings names the action instances that read their module from a source cfg does
// not have (a terraform instance's {"module": {"source": …}}): their resources stall.
func moduleWarnings(cfg *config.Config) []string {
	var out []string
	for _, a := range cfg.Actions {
		var c struct {
			Module json.RawMessage `json:"module"`
		}
		var m struct {
			Source string `json:"source"`
		}
		if json.Unmarshal(a.Config, &c) != nil || json.Unmarshal(c.Module, &m) != nil || m.Source == "" {
			continue
		}
		if !slices.ContainsFunc(cfg.Sources, func(s config.Source) bool { return s.Name == m.Source }) {
			out = append(out, fmt.Sprintf("action %s reads its module from source %s, which this config does not have: its resources stall until the source is configured again", a.Name, m.Source))
		}
	}
	return out
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

// record writes this replica's config status to its replicas row (the dashboard's replicas
// table): the config running, and what is not in effect (the errors of a reload refused or
// applied in part; the blocks that wait for a restart).
func (rt *Daemon) record(res server.ReloadResult) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(rt.ctx), 5*time.Second)
	defer cancel()
	for _, c := range replicaConfigs(rt.hash, res) {
		if err := rt.store.SetReplicaConfig(ctx, rt.replica, c); err != nil {
			rt.log.Warn("record the config status", "err", err)
			return
		}
	}
}

// replicaConfigs are the config status writes of a reload's result, in order: the file now
// running (hash), unless the reload was refused, then what of it is not in effect, if
// anything (a refusal keeps the hash running before).
func replicaConfigs(hash string, res server.ReloadResult) []store.ReplicaConfig {
	var out []store.ReplicaConfig
	if res.OK || res.Partial {
		out = append(out, store.ReplicaConfig{Hash: hash, LoadedAt: res.At})
	}
	var lines []string
	if !res.OK {
		lines = append(lines, res.Errors...)
	}
	if len(res.RestartRequired) > 0 {
		lines = append(lines, restartLine(res.RestartRequired))
	}
	if len(lines) > 0 {
		out = append(out, store.ReplicaConfig{Error: strings.Join(lines, "\n"), ErrorAt: res.At})
	}
	return out
}

// restartLine says which blocks of the file are not in effect.
func restartLine(blocks []string) string {
	return "restart required: " + strings.Join(blocks, ", ") + " changed in the file but keep their running values until the next restart"
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
