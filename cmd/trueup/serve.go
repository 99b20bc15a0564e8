package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/liveness"
	"github.com/trueup-dev/trueup/internal/metrics"
	"github.com/trueup-dev/trueup/internal/reconciler"
	"github.com/trueup-dev/trueup/internal/secrets"
	"github.com/trueup-dev/trueup/internal/server"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/syncer"
	"github.com/trueup-dev/trueup/internal/tracing"
	"github.com/trueup-dev/trueup/internal/webhook"
)

func newServeCmd() *cobra.Command {
	var configPath, listen, logLevel, dataDir string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the controller: sync sources, reconcile resources, serve the API and dashboard",
		Long: `Runs the controller until SIGINT or SIGTERM (the first drains, the second exits).

SIGHUP (or POST /api/v1/admin/reload) reads --config again: sources and action instances
added, changed or removed take effect without a restart (calls in flight finish first; a
removed source's resources stay). An invalid config is refused, its errors logged and shown
on the dashboard, and the running one kept. Changes to database, dataDir, server, reconcile,
retention, log, limits, secrets and tracing take effect at the next restart; a changed auth
block refuses the reload (restart to apply it).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Applied to the config read at start and to every config reloaded.
			adjust := func(cfg *config.Config) error {
				if listen != "" {
					for _, scheme := range []string{"http://", "https://"} {
						if cfg.Server.ExternalURL == scheme+cfg.Server.Listen+"/" {
							cfg.Server.ExternalURL = scheme + listen + "/" // the default follows the flag
						}
					}
					cfg.Server.Listen = listen
				}
				// Secure by default: no auth: section means anonymous admin, so loopback only.
				if err := config.CheckExposure(cfg.Server.Listen, cfg.Auth); err != nil {
					return err
				}
				if dataDir != "" {
					cfg.DataDir = dataDir
				}
				if logLevel != "" {
					cfg.Log.Level = logLevel
					if err := cfg.Validate(); err != nil {
						return cfg.ScrubError(err) // values quoted may have come from ${VAR}
					}
				}
				return nil
			}
			// SIGHUP reloads the config (it no longer ends the process), from now on: a
			// signal sent while serve starts is handled once it runs.
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			cfg, err := loadConfig(configPath)
			if err != nil {
				return err
			}
			if err := adjust(cfg); err != nil {
				return err
			}
			return serve(cmd.Context(), cfg, &reloader{path: configPath, adjust: adjust, requests: make(chan chan server.ReloadResult)}, hup, cmd)
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "trueup.yaml", "controller config file")
	cmd.Flags().StringVar(&listen, "listen", "", "override server.listen")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "override dataDir (git mirrors, the private PostgreSQL)")
	cmd.Flags().StringVar(&logLevel, "log-level", "", "override log.level (debug, info, warn, error)")
	return cmd
}

// serve runs the controller until ctx ends; rt holds what a config reload (a signal on hup,
// or POST /api/v1/admin/reload) changes. Its log lines and the error it
// returns are scrubbed of the config's secrets: many of them quote config values (a plugin or
// a commit status reporter refusing its config, a source failing to fetch its URL).
func serve(ctx context.Context, cfg *config.Config, rt *reloader, hup <-chan os.Signal, cmd *cobra.Command) (err error) {
	logOut := newScrubWriter(cmd.ErrOrStderr(), scrubber(cfg, nil))
	defer func() { err = actions.ScrubError(err, logOut.current()) }()
	logger := newLogger(cfg, logOut)
	replica := replicaName()
	logger = logger.With("replica", replica)
	setMemoryLimit(cfg, logger)
	traces, err := tracing.Setup(ctx, cfg.Tracing, tracing.Service{Version: version, Instance: replica}, logger)
	if err != nil {
		return err
	}
	defer traces.Shutdown() // last: flushes the spans of everything stopped before it

	reg, err := registry()
	if err != nil {
		return err
	}
	rt.ctx, rt.replica, rt.log, rt.logOut, rt.reg, rt.dbURL, rt.trees = ctx, replica, logger, logOut, reg, &lateURL{}, &lateTrees{}
	rt.cfg.Store(cfg)
	rt.hash = configHash(rt.path)
	acts, err := newActions(cfg, reg, logger, rt.dbURL.get, rt.trees.read)
	if err != nil {
		return err
	}
	rt.acts = actions.NewSet(acts)
	defer rt.acts.Close()
	rt.scrubWith(cfg, acts)
	scrub := rt.scrub
	keys, err := sourceKeys(cfg)
	if err != nil {
		return err
	}
	if rt.resolver, err = secrets.New(cfg.SecretStores, logger.With("component", "secrets")); err != nil {
		return errors.New(scrub(err.Error()))
	}

	db, err := openDatabase(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer db.Close()
	rt.store = db.store
	rt.dbURL.set(db.url)
	applied, err := db.store.Migrate(ctx)
	if err != nil {
		return err
	}
	if len(applied) > 0 {
		logger.Info("applied migrations", "migrations", applied)
	}

	met := metrics.New(metrics.Options{Logger: logger, SpansDropped: traces.SpansDropped,
		Queue: func(ctx context.Context) (metrics.QueueStats, error) {
			due, inFlight, scheduled, oldest, err := db.store.QueueStats(ctx)
			return metrics.QueueStats{Due: due, InFlight: inFlight, Scheduled: scheduled, OldestDueSeconds: oldest.Seconds()}, err
		},
		RateLimits: func() map[string]int {
			out := map[string]int{}
			for name, a := range rt.acts.Current() {
				if rl, ok := a.(interface{ RateLimitRemaining() int }); ok {
					out[name] = rl.RateLimitRemaining()
				}
			}
			return out
		}})
	rt.met = met
	met.ConfigLoaded(false, true, time.Now())
	rt.setReveal(keys)

	// Build every source before starting anything, so a bad source fails the start; the
	// sources are stopped at the end, after the syncers returned.
	running := map[string]*runningSource{}
	defer func() {
		for _, rs := range rt.sources() {
			rs.stop()
		}
	}()
	for _, sc := range cfg.Sources {
		rs, err := rt.buildSource(cfg, sc, keys, acts)
		if err == nil {
			err = rt.attachPreview(cfg, rs)
		}
		if err == nil {
			err = rt.start(rs)
		}
		if err != nil {
			if rs != nil {
				rs.stop()
			}
			rt.publish(running, nil)
			return err
		}
		running[sc.Name] = rs
	}
	requests := syncRequests{store: db.store, syncers: rt.syncer, log: logger}
	// Always there, so that a reload may add a source with a webhook.
	rt.hooks = webhook.New(webhook.Options{Sources: webhookSources(cfg), Store: db.store, Logger: logger, Trigger: requests.webhook, Preview: rt.previewSubmit})
	rt.publish(running, nil)

	rec := reconciler.New(db.store, nil, reconciler.Options{Replica: replica, Workers: cfg.Reconcile.Workers,
		LeaseTTL: cfg.Reconcile.LeaseTTL, ResyncInterval: cfg.Reconcile.ResyncInterval,
		BackoffInitial: cfg.Reconcile.Backoff.Initial, BackoffMax: cfg.Reconcile.Backoff.Max, Scrub: scrub, Secrets: rt.configSecrets, Metrics: met,
		Reveal: rt.revealCall, Hold: logOut.calls.hold, Acquire: rt.acts.Acquire, ActionType: rt.actionType,
		CheckReference: rt.checkReference}, logger)
	maint := reconciler.NewMaintenance(db.store, reconciler.MaintenanceOptions{Replica: replica, Version: version, LeaseTTL: cfg.Reconcile.LeaseTTL,
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
	live := liveness.New(db.store, liveness.Options{
		Replica: store.Replica{Name: replica, Hostname: host, PID: os.Getpid(), Version: version, Listen: cfg.Server.Listen},
		OnLost:  rec.Suspend, OnRegained: func() { rec.Resume(); wakeAll() }, OnReleased: wakeAll, Metrics: met}, logger)
	if err := live.Start(ctx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	rt.live.Store(live)
	liveCtx, stopLive := context.WithCancel(context.WithoutCancel(ctx))
	liveDone := make(chan struct{})
	go func() { defer close(liveDone); live.Run(liveCtx) }()
	defer func() { stopLive(); <-liveDone }()
	rt.record(server.ReloadResult{At: time.Now(), OK: true}) // the config loaded at start

	srvOpts, err := withAuth(server.Options{Listen: cfg.Server.Listen, Replica: replica, Metrics: met, Webhooks: rt.hooks,
		ExternalURL: cfg.Server.ExternalURL, Reload: rt.request, LastReload: rt.lastReload, TraceURL: traceURL(cfg), Scrub: rt.scrub}, cfg, logger)
	if err != nil {
		return err
	}
	srv := server.New(db.api, srvOpts, logger)
	if err := srv.Start(ctx); err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Server.Listen, err)
	}
	defer srv.Stop()
	if rt.sender, err = newSender(db.store, cfg, replica, rt.liveHeld, met, logger); err != nil {
		return err
	}
	if err := rt.sender.Start(ctx); err != nil {
		return err
	}
	defer func() { rt.sender.Stop() }()

	// The first signal cancels ctx: loops stop claiming, in-flight calls are interrupted and
	// their leases released, then everything closes in reverse order.
	var wg sync.WaitGroup
	rt.runAll()
	defer rt.wg.Wait()
	wg.Add(4)
	go func() { defer wg.Done(); rt.loop(ctx, hup) }()
	go func() { defer wg.Done(); _ = rec.Run(ctx) }()
	go func() { defer wg.Done(); _ = maint.Run(ctx) }()
	// One LISTEN connection per replica: due work wakes the claimer; a sync request (a webhook
	// received by any replica) wakes the source's syncer, which acts if it holds the lease;
	// committed changes wake the watch hub, which reads them once for all of its watchers.
	go func() {
		defer wg.Done()
		db.store.Listen(ctx, []string{store.WorkChannel, store.SyncChannel, store.ChangesChannel, store.LeasesChannel}, func(channel, payload string) {
			switch channel {
			case store.WorkChannel:
				rec.Wake()
			case store.LeasesChannel:
				// A lease was given up (shutdown, a source removed by a reload) or taken from a
				// dead replica: take it now.
				name, ok := strings.CutPrefix(payload, "source:")
				switch s := rt.syncer(name); {
				case ok && s != nil:
					s.LeasesFreed()
				case payload == "maintenance":
					maint.Wake()
				default:
					wakeAll()
				}
			case store.SyncChannel:
				requests.notified(payload)
			case store.ChangesChannel:
				srv.NotifyChanges()
			default: // (re)connected: look for anything missed
				rec.Wake()
				srv.NotifyChanges()
			}
		}, logger)
	}()
	logger.Info("trueup started", "sources", len(running), "actions", len(acts), "workers", cfg.Reconcile.Workers,
		"dashboard", cfg.Server.ExternalURL, "config_hash", rt.hash)
	<-ctx.Done()
	logger.Info("shutting down")
	wg.Wait()
	return nil
}

// syncRequests routes requests for a sync between replicas: any replica may receive a
// source's push webhook, the holder of the source's lease acts on it, once. The receiver
// triggers its own syncer when it holds the lease and otherwise asks the holder through
// NOTIFY; it never does both, since its own NOTIFY would come back through its LISTEN and
// sync a second time.
type syncRequests struct {
	store   *store.Store
	syncers func(name string) *syncer.Syncer // nil: the source is not configured here
	log     *slog.Logger
}

// webhook is the webhook handler's Trigger.
func (r syncRequests) webhook(source, commit string) {
	if s := r.syncers(source); s != nil && s.TriggerIfHolder(commit) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := r.store.NotifySync(ctx, source, commit); err != nil {
		r.log.Warn("notify other replicas of a webhook", "source", source, "err", err)
	}
}

// notified handles a notification on store.SyncChannel ("source" or "source commit").
func (r syncRequests) notified(payload string) {
	name, commit, _ := strings.Cut(payload, " ")
	if s := r.syncers(name); s != nil {
		s.TriggerCommit(commit)
	}
}

// webhookSources lists the sources that accept push webhooks, with the branch they track
// ("" for tag, commit and folder sources: any push triggers a check).
func webhookSources(cfg *config.Config) map[string]webhook.Source {
	out := map[string]webhook.Source{}
	for _, sc := range cfg.Sources {
		if sc.Webhook == nil {
			continue
		}
		ws := webhook.Source{Name: sc.Name, Secret: sc.Webhook.Secret, Preview: sc.PreviewEnabled()}
		if sc.Git != nil && sc.Git.Tag == "" && sc.Git.Commit == "" {
			ws.Branch = sc.Git.Branch
		}
		out[sc.Name] = ws
	}
	return out
}
