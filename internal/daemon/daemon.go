// Package daemon is trueup's runtime: it builds the controller a config describes (database,
// action instances, sources, reconciler, maintenance, notifications, API server), starts
// it, reloads it in place and stops it. `trueup serve` parses its flags, reads the config and
// runs a Daemon until a signal.
//
// A reload follows caddy's order: every part of the new config is built before anything
// changes (an error refuses the whole config and the old keeps running), then the changed
// sources are swapped in; a changed source whose new copy fails to start runs its previous
// copy again.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/liveness"
	"github.com/trueup-dev/trueup/internal/mcp"
	"github.com/trueup-dev/trueup/internal/metrics"
	"github.com/trueup-dev/trueup/internal/notifier"
	"github.com/trueup-dev/trueup/internal/policy"
	"github.com/trueup-dev/trueup/internal/reconciler"
	"github.com/trueup-dev/trueup/internal/redact"
	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/internal/secrets"
	"github.com/trueup-dev/trueup/internal/server"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/tracing"
	"github.com/trueup-dev/trueup/internal/webhook"
	"github.com/trueup-dev/trueup/sources"
)

// ReloadResult is what a reload applied, refused or left for a restart.
type ReloadResult = server.ReloadResult

// Deps are what the daemon takes from its host besides the config.
type Deps struct {
	// Load reads the config file again for a reload asked by a signal or the API, with the
	// host's overrides applied; a config it returns with an error is the one refused (its
	// secrets are scrubbed from the errors). Nil: such reloads are refused.
	Load func() (*config.Config, error)
	// Path is the config file, named in log lines and hashed for the replicas table ("": none).
	Path string
	// Reloads asks for a reload from the file on each value (SIGHUP).
	Reloads <-chan os.Signal
	// Stderr receives the log, scrubbed of every secret of every config loaded.
	Stderr io.Writer
	// Registry holds the action plugin kinds (nil: Registry()).
	Registry *actions.Registry
	// Sources holds the source kinds (nil: SourceRegistry(), git and dir).
	Sources *sources.Registry
	Version string
	Replica string // this replica's name ("": ReplicaName())
}

// Daemon is the controller while it runs. The config, the action instances, the running
// sources (syncer, commit status reporter, preview runner) and the notification sender are
// what a reload changes; everything else Start built (database, listener, auth, workers,
// secret stores) stays until the next start.
//
// One goroutine owns the reloads (loop): a signal, the API and Reload all ask it, so reloads
// never overlap. The other goroutines read its parts through atomic pointers.
type Daemon struct {
	deps    Deps
	first   *config.Config // the config New was given
	ctx     context.Context
	cancel  context.CancelFunc
	replica string
	log     *slog.Logger
	reg     *actions.Registry
	srcReg  *sources.Registry
	dbURL   string // the database's, for actions.Env.DatabaseURL

	// redact holds every secret of every config loaded and of the calls in flight: the log,
	// the reconciler's stored messages, the API's errors and the reload results are scrubbed
	// through it.
	redact *redact.Registry

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
	acts   *actions.Set
	srcs   *sourceSet // set once Start built it
	reveal atomic.Pointer[reconciler.Reveal]
	last   atomic.Pointer[server.ReloadResult]

	// Owned by the loop goroutine (and by Start before it starts).
	keys   map[string]*sealed.Keys // Reveal's, by source: those of the copy of each source that runs
	sender *notifier.Sender

	requests chan reloadRequest
	stops    []stopStep // what Stop undoes, in the order Start did it
	stopOnce sync.Once
	// containment says the processes commands start may outlive trueup once (warnContainment).
	containment sync.Once
	// life makes Start and Stop one at a time: a Stop during Start waits for it, then undoes
	// what it started. begun says Start ran: a daemon starts once. started is the daemon's
	// context once Start began, for Reload, which may come from any goroutine.
	life    sync.Mutex
	begun   bool
	started atomic.Pointer[context.Context]

	test testHooks // set by this package's tests only
}

// stopStep is one thing Stop undoes; name is what the package's tests see of it.
type stopStep struct {
	name string
	f    func()
}

// testHooks let this package's tests fail a step that cannot be made to fail from a config
// and watch the order of Stop; all nil outside them.
type testHooks struct {
	started     func() error            // once everything runs, before Start returns
	startSource func(name string) error // before a source's copy starts
	stopped     func(step string)       // after each step of Stop
	mode        func() (string, error)  // in place of proc.Mode
}

// reloadRequest asks the loop for a reload of cfg (nil: of the file, Deps.Load).
type reloadRequest struct {
	cfg   *config.Config
	reply chan server.ReloadResult
}

// New prepares a daemon for cfg (read and checked, the host's overrides applied); Start
// builds and starts it.
func New(cfg *config.Config, deps Deps) (*Daemon, error) {
	if cfg == nil {
		return nil, errors.New("daemon: no config")
	}
	if deps.Stderr == nil {
		deps.Stderr = os.Stderr
	}
	return &Daemon{deps: deps, first: cfg, requests: make(chan reloadRequest)}, nil
}

// atStop adds f (named step) to what Stop (or a failed Start) undoes, last first.
func (rt *Daemon) atStop(step string, f func()) { rt.stops = append(rt.stops, stopStep{step, f}) }

// Start builds every part of the config and starts it: it returns once the controller
// runs, or the first error (everything started before it is stopped again). Its log lines
// and the error it returns are scrubbed of the config's secrets: many of them quote config
// values (a plugin or a commit status reporter refusing its config, a source failing to
// fetch its URL). ctx ending stops the loops as Stop does; Stop still has to be called.
func (rt *Daemon) Start(ctx context.Context) (err error) {
	rt.life.Lock()
	defer rt.life.Unlock()
	if rt.begun {
		return errors.New("the daemon was started already: a daemon starts once")
	}
	rt.begun = true
	cfg := rt.first
	rt.ctx, rt.cancel = context.WithCancel(ctx)
	rt.started.Store(&rt.ctx)
	rt.redact = Redactor(cfg, nil)
	defer func() {
		if err != nil {
			rt.stop()
			err = rt.redact.Error(err)
		}
	}()
	ctx = rt.ctx
	logger := NewLogger(cfg, rt.redact.Writer(rt.deps.Stderr))
	rt.replica = rt.deps.Replica
	if rt.replica == "" {
		rt.replica = ReplicaName()
	}
	replica := rt.replica
	logger = logger.With("replica", replica)
	rt.log = logger
	following := setMemoryLimit(cfg, logger)
	rt.atStop("memory limit", func() { memFollower.stopFor(following) })
	traces, err := tracing.Setup(ctx, cfg.Tracing, tracing.Service{Version: rt.deps.Version, Instance: replica}, logger)
	if err != nil {
		return err
	}
	rt.atStop("tracing", traces.Shutdown) // last: flushes the spans of everything stopped before it

	if rt.reg = rt.deps.Registry; rt.reg == nil {
		if rt.reg, err = Registry(); err != nil {
			return err
		}
	}
	if rt.srcReg = rt.deps.Sources; rt.srcReg == nil {
		if rt.srcReg, err = SourceRegistry(); err != nil {
			return err
		}
	}
	first := *cfg // the caller's config stays as given
	cfg = &first
	cfg.ReadFiles(rt.reg.Files)
	rt.cfg.Store(cfg)
	rt.hash = configHash(rt.deps.Path)
	// What a config can refuse is refused before the database opens (no private cluster is
	// started for a bad config): the action instances and the sources (with their commit
	// statuses and preview publishers) and the notification sender are built once to check
	// them (their constructors have no side effects), then again below with the database.
	checked, err := NewActions(cfg, rt.reg, slog.New(slog.DiscardHandler), "", nil)
	if err != nil {
		return err
	}
	rt.redact.Add(secretsOf(cfg, checked)...)
	CloseActions(checked)
	scrub := rt.redact.Scrub
	keys, err := SourceKeys(cfg)
	if err != nil {
		return err
	}
	if err := CheckSources(cfg, rt.srcReg); err != nil {
		return rt.redact.Error(err)
	}
	if rt.resolver, err = secrets.New(cfg.SecretStores, logger.With("component", "secrets")); err != nil {
		return errors.New(scrub(err.Error()))
	}
	// The database, then the action instances, which get its URL (terraform's pg backend) and
	// read the trees of the running sources (the set, empty until its sources start).
	db, err := OpenDatabase(ctx, cfg, logger)
	if err != nil {
		return err
	}
	rt.store, rt.dbURL = db.Store, db.URL
	if cfg.Database.URL != "" {
		// Behind a pooler in transaction mode, LISTEN and the liveness lock would each
		// land on any server session: refused unless database.sessionURL carries them.
		if err := db.Store.CheckSessions(ctx); err != nil {
			db.Close()
			return errors.New(scrub(err.Error()))
		}
	}
	rt.acts = actions.NewSet(nil)
	met := metrics.New(metrics.Options{Logger: logger, SpansDropped: traces.SpansDropped, ReadLag: db.Read.ReadLag,
		Queue: func(ctx context.Context) (metrics.QueueStats, error) {
			due, inFlight, scheduled, oldest, err := db.Store.QueueStats(ctx)
			return metrics.QueueStats{Due: due, InFlight: inFlight, Scheduled: scheduled, OldestDueSeconds: oldest.Seconds()}, err
		},
		State:     func(ctx context.Context) (metrics.State, error) { return metricsState(ctx, db.Read, rt.cfg.Load()) },
		Resources: func(ctx context.Context) ([]metrics.ResourceCount, error) { return metricsResources(ctx, db.Read) },
		RateLimits: func() map[string]int {
			out := map[string]int{}
			for name, a := range rt.acts.Current() {
				if rl, ok := a.(actions.RateLimited); ok {
					out[name] = rl.RateLimitRemaining()
				}
			}
			return out
		}})
	rt.met = met
	rt.srcs = newSourceSet(ctx, sourceEnv{store: db.Store, kinds: rt.srcReg, log: logger, replica: replica, met: met, acts: rt.acts, redact: rt.redact,
		live: rt.liveHeld, checkAction: rt.checkAction, checkReference: rt.checkReference, published: rt.publishedSources,
		policies: func() *policy.Set { return rt.cfg.Load().PolicySet() },
		reveal: func(names []string, running map[string]*runningSource) {
			rt.setReveal(revealKeys(names, running, rt.keys))
		},
		startHook: func(name string) error {
			if rt.test.startSource != nil {
				return rt.test.startSource(name)
			}
			return nil
		}})
	rt.atStop("actions", rt.acts.Close)
	// Stop runs these in reverse: the sources stop before the database closes (their syncers
	// have returned by then), so that a preview runner finishing a publication still writes
	// its row, commit status and comment.
	rt.atStop("database", db.Close)
	rt.atStop("sources", rt.srcs.Stop)
	acts, err := NewActions(cfg, rt.reg, logger, rt.dbURL, rt.srcs.ReadTree)
	if err != nil {
		return err
	}
	rt.acts.Replace(acts, nil)
	rt.warnContainment(acts)
	rt.redact.Add(secretsOf(cfg, acts)...)
	applied, repairs, err := db.Migrate(ctx)
	if err != nil {
		return err
	}
	if len(applied) > 0 {
		logger.Info("applied migrations", "migrations", applied)
	}
	for _, m := range repairs.Messages() {
		logger.Warn(m)
	}
	met.ConfigLoaded(false, true, time.Now())
	rt.setReveal(keys)

	// Every source is built before any starts, so a bad source fails the start; the sources
	// are stopped at the end, after the syncers returned.
	pending, err := rt.srcs.Build(cfg, keys, acts)
	if err != nil {
		return err
	}
	if err := rt.srcs.Start(pending); err != nil {
		return err
	}
	requests := syncRequests{store: db.Store, syncers: rt.syncer, log: logger}
	// Always there, so that a reload may add a source with a webhook.
	rt.hooks = webhook.New(webhook.Options{Sources: webhookSources(cfg), Store: db.Store, Logger: logger, Trigger: requests.webhook, Preview: rt.previewSubmit})
	rt.publishedSources()

	rec := reconciler.New(db.Store, nil, reconciler.Options{Replica: replica, Workers: cfg.Reconcile.Workers,
		LeaseTTL: cfg.Reconcile.LeaseTTL, ResyncInterval: cfg.Reconcile.ResyncInterval,
		BackoffInitial: cfg.Reconcile.Backoff.Initial, BackoffMax: cfg.Reconcile.Backoff.Max, Redact: rt.redact, Metrics: met,
		Reveal: rt.revealCall, Acquire: rt.acts.Acquire, Plans: rt.acts.Plans(), ActionType: rt.actionType,
		CheckReference: rt.checkReference, Policies: rt.policies, Windows: rt.windows, Author: db.Store.RevisionAuthor}, logger)
	maint := reconciler.NewMaintenance(db.Store, reconciler.MaintenanceOptions{Replica: replica, Version: rt.deps.Version, LeaseTTL: cfg.Reconcile.LeaseTTL,
		Listen: cfg.Server.Listen, Metrics: met, Live: rt.liveHeld,
		History: store.RetentionRule{MaxAge: cfg.Retention.History.MaxAge, MaxPerResource: cfg.Retention.History.MaxPerResource},
		Events:  store.RetentionRule{MaxAge: cfg.Retention.Events.MaxAge, MaxPerResource: cfg.Retention.Events.MaxPerResource},
		Sources: func() map[string]any {
			out := map[string]any{}
			for name, rs := range rt.sources() {
				if rtm, ok := rs.syncer.Runtime(); ok {
					out[name] = rtm
				}
			}
			return out
		}}, logger)
	// Liveness: this replica's session-level advisory lock, held from before it takes any lease
	// until after it gave them all back; peers whose session ends are released at once. While
	// the session is down (PostgreSQL restarted, the connection killed) the lease takers take
	// nothing (rt.liveHeld) and the reconciler claims nothing; once it is back they look at once.
	host, _ := os.Hostname()
	wakeAll := func() {
		rec.Wake()
		maint.Wake()
		for _, rs := range rt.sources() {
			rs.syncer.LeasesFreed()
		}
	}
	live := liveness.New(db.Store, liveness.Options{
		Replica: store.Replica{Name: replica, Hostname: host, PID: os.Getpid(), Version: rt.deps.Version, Listen: cfg.Server.Listen},
		OnLost:  rec.Suspend, OnRegained: func() { rec.Resume(); wakeAll() }, OnReleased: wakeAll, Metrics: met}, logger)
	if err := live.Start(ctx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	rt.live.Store(live)
	// Run until Stop reaches it, not until ctx ends: the session outlives the loops.
	liveRun := runService(live.Run)
	_ = liveRun.Start(context.WithoutCancel(ctx))
	rt.atStop("liveness", liveRun.Stop)
	rt.record(server.ReloadResult{At: time.Now(), OK: true}) // the config loaded at start

	srvOpts, err := withAuth(server.Options{Listen: cfg.Server.Listen, Replica: replica, Metrics: met, Webhooks: rt.hooks,
		ExternalURL: cfg.Server.ExternalURL, Reload: rt.request, LastReload: rt.lastReload, TraceURL: traceURL(cfg), Redact: rt.redact,
		ApprovalTTL: func() time.Duration { return rt.cfg.Load().ApprovalTTL }, Windows: rt.windows}, cfg, logger)
	if err != nil {
		return err
	}
	if cfg.Server.MCP {
		srvOpts.MCP = &mcp.Options{OperatorTools: cfg.Server.MCPOperatorTools, Version: rt.deps.Version}
	}
	srv := server.New(db.API, srvOpts, logger)
	if err := srv.Start(ctx); err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Server.Listen, err)
	}
	rt.atStop("server", srv.Stop)
	if rt.sender, err = newSender(db.Store, cfg, replica, rt.liveHeld, met, logger); err != nil {
		return err
	}
	if err := rt.sender.Start(ctx); err != nil {
		return err
	}
	rt.atStop("sender", func() { rt.sender.Stop() })

	// Stop ends ctx: loops stop claiming, in-flight calls are interrupted and their leases
	// released, then everything closes in reverse order.
	rt.srcs.Run()
	rt.atStop("syncers", rt.srcs.Wait)
	loops := []Service{
		runService(rt.loop),
		runService(func(ctx context.Context) { _ = rec.Run(ctx) }),
		runService(func(ctx context.Context) { _ = maint.Run(ctx) }),
		// One LISTEN connection per replica: due work wakes the claimer; a sync request (a
		// webhook received by any replica) wakes the source's syncer, which acts if it holds
		// the lease; committed changes wake the watch hub, which reads them once for all of
		// its watchers.
		runService(func(ctx context.Context) {
			listen(ctx, db.Store, rec, maint, srv, rt.syncer, requests, wakeAll, logger)
		}),
	}
	for _, s := range loops {
		_ = s.Start(ctx)
	}
	rt.atStop("loops", func() {
		var wg sync.WaitGroup
		for _, s := range loops {
			wg.Go(s.Stop)
		}
		wg.Wait()
	})
	if rt.test.started != nil {
		if err := rt.test.started(); err != nil {
			return err
		}
	}
	logger.Info("trueup started", "sources", len(rt.sources()), "actions", len(acts), "workers", cfg.Reconcile.Workers,
		"dashboard", cfg.Server.ExternalURL, "config_hash", rt.hash)
	return nil
}

// Stop ends the daemon's context (loops stop claiming, calls in flight are interrupted and
// their leases released), then stops everything Start started, last first. It returns once
// all of it has stopped.
func (rt *Daemon) Stop() {
	rt.life.Lock()
	defer rt.life.Unlock()
	rt.stop()
}

// stop undoes what Start did, once; rt.life is held.
func (rt *Daemon) stop() {
	rt.stopOnce.Do(func() {
		if rt.cancel != nil {
			rt.cancel()
		}
		if rt.log != nil && rt.srcs != nil && rt.srcs.running {
			rt.log.Info("shutting down")
		}
		for i := len(rt.stops) - 1; i >= 0; i-- {
			rt.stops[i].f()
			if rt.test.stopped != nil {
				rt.test.stopped(rt.stops[i].name)
			}
		}
	})
}

// Reload applies cfg (read and checked, the host's overrides applied) in place of the
// config running, or refuses it whole; reloads run one at a time.
func (rt *Daemon) Reload(cfg *config.Config) ReloadResult {
	return rt.ask(context.Background(), cfg)
}

// ReloadFile reads the config file again (Deps.Load) and applies it as Reload does.
func (rt *Daemon) ReloadFile() ReloadResult {
	return rt.ask(context.Background(), nil)
}
