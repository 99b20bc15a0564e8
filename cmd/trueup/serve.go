package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/commitstatus"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/liveness"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/metrics"
	"github.com/trueup-dev/trueup/internal/notifier"
	"github.com/trueup-dev/trueup/internal/reconciler"
	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/internal/secrets"
	"github.com/trueup-dev/trueup/internal/server"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/syncer"
	"github.com/trueup-dev/trueup/internal/tracing"
	"github.com/trueup-dev/trueup/internal/webhook"
	"github.com/trueup-dev/trueup/sources"
)

func newServeCmd() *cobra.Command {
	var configPath, listen, logLevel, dataDir string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the controller: sync sources, reconcile resources, serve the API and dashboard",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(configPath)
			if err != nil {
				return err
			}
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
			return serve(cmd.Context(), cfg, cmd)
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "trueup.yaml", "controller config file")
	cmd.Flags().StringVar(&listen, "listen", "", "override server.listen")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "override dataDir (git mirrors, the private PostgreSQL)")
	cmd.Flags().StringVar(&logLevel, "log-level", "", "override log.level (debug, info, warn, error)")
	return cmd
}

// serve runs the controller until ctx ends. Its log lines and the error it returns are
// scrubbed of the config's secrets: many of them quote config values (a plugin or a commit
// status reporter refusing its config, a source failing to fetch its URL).
func serve(ctx context.Context, cfg *config.Config, cmd *cobra.Command) (err error) {
	logOut := newScrubWriter(cmd.ErrOrStderr(), scrubber(cfg, nil))
	defer func() { err = actions.ScrubError(err, logOut.current()) }()
	logger := newLogger(cfg, logOut)
	replica := replicaName()
	logger = logger.With("replica", replica)
	setMemoryLimit(cfg, logger)
	stopTracing, err := tracing.Setup(ctx, cfg.Tracing, tracing.Service{Version: version, Instance: replica}, logger)
	if err != nil {
		return err
	}
	defer stopTracing() // last: flushes the spans of everything stopped before it

	reg, err := registry()
	if err != nil {
		return err
	}
	var dbURL lateURL
	var trees lateTrees
	acts, err := newActions(cfg, reg, logger, dbURL.get, trees.read)
	if err != nil {
		return err
	}
	defer closeActions(acts)
	scrub := scrubber(cfg, acts)
	logOut.set(scrub)
	keys, err := sourceKeys(cfg)
	if err != nil {
		return err
	}
	resolver, err := secrets.New(cfg.SecretStores, logger.With("component", "secrets"))
	if err != nil {
		return errors.New(scrub(err.Error()))
	}

	db, err := openDatabase(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer db.Close()
	dbURL.set(db.url)
	applied, err := db.store.Migrate(ctx)
	if err != nil {
		return err
	}
	if len(applied) > 0 {
		logger.Info("applied migrations", "migrations", applied)
	}

	met := metrics.New(metrics.Options{Logger: logger,
		Queue: func(ctx context.Context) (metrics.QueueStats, error) {
			due, inFlight, scheduled, oldest, err := db.store.QueueStats(ctx)
			return metrics.QueueStats{Due: due, InFlight: inFlight, Scheduled: scheduled, OldestDueSeconds: oldest.Seconds()}, err
		},
		RateLimits: func() map[string]int {
			out := map[string]int{}
			for name, a := range acts {
				if rl, ok := a.(interface{ RateLimitRemaining() int }); ok {
					out[name] = rl.RateLimitRemaining()
				}
			}
			return out
		}})

	// Build every source before starting anything, so a bad source fails the start.
	var syncers []*syncer.Syncer
	var srcs []sources.Source
	previews := previewRunners{}
	defer func() {
		for _, s := range srcs {
			_ = s.Close()
		}
	}()
	for _, sc := range cfg.Sources {
		src, reg, err := newSource(cfg, sc, logger)
		if err != nil {
			return fmt.Errorf("source %s: %w", sc.Name, err)
		}
		srcs = append(srcs, src)
		if st, ok := src.(interface{ Start(context.Context) error }); ok {
			if err := st.Start(ctx); err != nil {
				return fmt.Errorf("source %s: %w", sc.Name, err)
			}
		}
		if err := db.store.RegisterSource(ctx, reg); err != nil {
			return err
		}
		interval := time.Minute
		if sc.Git != nil {
			interval = sc.Git.Interval
		} else if sc.Dir != nil {
			interval = sc.Dir.Interval
		}
		var reporter syncer.Reporter
		if cs := sc.CommitStatus; cs != nil {
			rep, err := commitstatus.New(commitstatus.Config{Provider: cs.Provider, Token: cs.Token, BaseURL: cs.BaseURL, Insecure: cs.Insecure, Repo: cs.Repo,
				TargetURL: strings.TrimSuffix(cfg.Server.ExternalURL, "/") + "/sources/" + sc.Name}, sc.Name, db.store, logger)
			if err != nil {
				return fmt.Errorf("source %s: commitStatus: %w", sc.Name, err)
			}
			defer rep.Close()
			reporter = rep
		}
		syncers = append(syncers, syncer.New(db.store, syncer.Options{Name: sc.Name, Source: src, Interval: interval,
			Prune: sc.PruneEnabled(), MaxPruneFraction: sc.Prune.MaxFraction, Replica: replica, LeaseTTL: cfg.Reconcile.LeaseTTL,
			CheckAction: checkAction(acts), Limits: manifest.Limits(cfg.Limits), Scrub: scrub, Metrics: met, Reporter: reporter,
			Opener: sealed.NewOpener(keys[sc.Name])}, logger))
		if sc.PreviewEnabled() {
			if previews[sc.Name], err = newPreviewRunner(cfg, sc, src, db.store, acts, scrub, replica, logger); err != nil {
				return err
			}
			if err := previews[sc.Name].Start(ctx); err != nil {
				return err
			}
			defer previews[sc.Name].Stop()
		}
	}
	byName := map[string]*syncer.Syncer{}
	srcByName := map[string]sources.Source{}
	for i, sc := range cfg.Sources {
		byName[sc.Name] = syncers[i]
		srcByName[sc.Name] = srcs[i]
	}
	trees.set(srcByName)

	rec := reconciler.New(db.store, acts, reconciler.Options{Replica: replica, Workers: cfg.Reconcile.Workers,
		LeaseTTL: cfg.Reconcile.LeaseTTL, ResyncInterval: cfg.Reconcile.ResyncInterval,
		BackoffInitial: cfg.Reconcile.Backoff.Initial, BackoffMax: cfg.Reconcile.Backoff.Max, Scrub: scrub, Metrics: met,
		Reveal: revealer(db.store, keys, resolver), Hold: logOut.calls.hold, ActionTypes: actionTypes(cfg)}, logger)
	requests := syncRequests{store: db.store, syncers: byName, log: logger}
	hooks := webhookSources(cfg)
	var hookHandler http.Handler
	if len(hooks) > 0 {
		hookHandler = webhook.New(webhook.Options{Sources: hooks, Store: db.store, Logger: logger, Trigger: requests.webhook, Preview: previews.submit})
	}
	maint := reconciler.NewMaintenance(db.store, reconciler.MaintenanceOptions{Replica: replica, Version: version, LeaseTTL: cfg.Reconcile.LeaseTTL,
		Listen: cfg.Server.Listen, Metrics: met,
		History: store.RetentionRule{MaxAge: cfg.Retention.History.MaxAge, MaxPerResource: cfg.Retention.History.MaxPerResource},
		Events:  store.RetentionRule{MaxAge: cfg.Retention.Events.MaxAge, MaxPerResource: cfg.Retention.Events.MaxPerResource},
		Sources: func() map[string]any {
			out := map[string]any{}
			for name, s := range byName {
				if rt, ok := s.Runtime(); ok {
					out[name] = rt
				}
			}
			return out
		}}, logger)
	// Liveness: this replica's session-level advisory lock, held from before it takes any lease
	// until after it gave them all back; peers whose session ends are released at once.
	host, _ := os.Hostname()
	wakeAll := func() {
		rec.Wake()
		maint.Wake()
		for _, s := range syncers {
			s.LeasesFreed()
		}
	}
	live := liveness.New(db.store, liveness.Options{
		Replica: store.Replica{Name: replica, Hostname: host, PID: os.Getpid(), Version: version, Listen: cfg.Server.Listen},
		OnLost:  rec.Suspend, OnRegained: rec.Resume, OnReleased: wakeAll, Metrics: met}, logger)
	if err := live.Start(ctx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	liveCtx, stopLive := context.WithCancel(context.WithoutCancel(ctx))
	liveDone := make(chan struct{})
	go func() { defer close(liveDone); live.Run(liveCtx) }()
	defer func() { stopLive(); <-liveDone }()

	srvOpts, err := withAuth(server.Options{Listen: cfg.Server.Listen, Replica: replica, Metrics: met, Webhooks: hookHandler,
		ExternalURL: cfg.Server.ExternalURL, TraceURL: traceURL(cfg)}, cfg, logger)
	if err != nil {
		return err
	}
	srv := server.New(db.api, srvOpts, logger)
	if err := srv.Start(ctx); err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Server.Listen, err)
	}
	defer srv.Stop()
	// The notifier runs without a notifications block too: the outbox is written whatever
	// the config says, and with no rule its entries are finished unsent and trimmed.
	ncfg := config.Notifications{MaxAttempts: 1}
	if cfg.Notifications != nil {
		ncfg = *cfg.Notifications
	}
	sender, err := notifier.New(db.store, ncfg, notifier.Options{Replica: replica, LeaseTTL: cfg.Reconcile.LeaseTTL,
		ExternalURL: cfg.Server.ExternalURL, Metrics: met}, logger)
	if err != nil {
		return cfg.ScrubError(fmt.Errorf("notifications: %w", err))
	}
	if err := sender.Start(ctx); err != nil {
		return err
	}
	defer sender.Stop()

	// The first signal cancels ctx: loops stop claiming, in-flight calls are interrupted and
	// their leases released, then everything closes in reverse order.
	var wg sync.WaitGroup
	for _, s := range syncers {
		wg.Add(1)
		go func() { defer wg.Done(); _ = s.Run(ctx) }()
	}
	wg.Add(3)
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
				// A lease was given up (shutdown) or taken from a dead replica: take it now.
				switch name, ok := strings.CutPrefix(payload, "source:"); {
				case ok && byName[name] != nil:
					byName[name].LeasesFreed()
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
	logger.Info("trueup started", "sources", len(syncers), "actions", len(acts), "workers", cfg.Reconcile.Workers,
		"dashboard", cfg.Server.ExternalURL)
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
	syncers map[string]*syncer.Syncer
	log     *slog.Logger
}

// webhook is the webhook handler's Trigger.
func (r syncRequests) webhook(source, commit string) {
	if s := r.syncers[source]; s != nil && s.TriggerIfHolder(commit) {
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
	if s := r.syncers[name]; s != nil {
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
