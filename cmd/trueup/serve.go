package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/daemon"
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
			// SIGHUP reloads the config (it does not end the process), from here on: a
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
			load := func() (*config.Config, error) {
				cfg, err := loadConfig(configPath)
				if err != nil {
					return nil, err
				}
				return cfg, adjust(cfg)
			}
			return serve(cmd.Context(), cfg, configPath, load, hup, cmd)
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "trueup.yaml", "controller config file")
	cmd.Flags().StringVar(&listen, "listen", "", "override server.listen")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "override dataDir (git mirrors, the private PostgreSQL)")
	cmd.Flags().StringVar(&logLevel, "log-level", "", "override log.level (debug, info, warn, error)")
	return cmd
}

// serve runs a daemon of cfg until ctx ends (the first SIGINT or SIGTERM); each value of
// reloads (SIGHUP) reloads the config file, as POST /api/v1/admin/reload does.
func serve(ctx context.Context, cfg *config.Config, path string, load func() (*config.Config, error), reloads <-chan os.Signal, cmd *cobra.Command) error {
	d, err := daemon.New(cfg, daemon.Deps{Load: load, Path: path, Reloads: reloads, Stderr: cmd.ErrOrStderr(), Version: version})
	if err != nil {
		return err
	}
	if err := d.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	d.Stop()
	return nil
}
