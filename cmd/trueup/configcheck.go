package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/daemon"
	"github.com/trueup-dev/trueup/internal/plural"
)

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Work with a controller config offline"}
	cmd.AddCommand(&cobra.Command{
		Use:   "check FILE",
		Short: "Check a controller config as serve would, without starting anything",
		Long: `Reads FILE as serve reads its --config: every field, default and cross-reference (actions,
sources, secrets, reference grants, notification rules, policies and their CEL rules) is checked and each action instance and source is built
as serve builds it (nothing is called or fetched, no database is opened, nothing under
dataDir is created or removed, so it is safe to run beside a running serve). Prints what the config declares, or
every problem naming its field, and exits 1. ${VAR}s that are unset in this environment are
reported: the instances whose config needs them are then not built.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			env := lenientEnv{}
			cfg, err := config.Load(args[0], env.get)
			if err != nil {
				return err
			}
			acts, err := validateActions(cfg)
			switch {
			case err != nil && len(env) == 0:
				return err
			case err != nil:
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v\nwarning: with %s unset, the action instances could not be built\n",
					daemon.Scrubber(cfg, nil)(err.Error()), strings.Join(env.names(), ", "))
			default:
				daemon.CloseActions(acts)
			}
			switch err := checkSources(cfg); {
			case err != nil && len(env) == 0:
				return err
			case err != nil:
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v\nwarning: with %s unset, the sources could not be built\n",
					daemon.Scrubber(cfg, nil)(err.Error()), strings.Join(env.names(), ", "))
			}
			rules := 0
			if cfg.Notifications != nil {
				rules = len(cfg.Notifications.Rules)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "valid: %s, %s, %s\n", plural.Count(len(cfg.Sources), "source", "sources"),
				plural.Count(len(cfg.Actions), "action instance", "action instances"), plural.Count(rules, "notification rule", "notification rules"))
			return nil
		},
	})
	return cmd
}

// checkSources builds every source of cfg as serve does (nothing started, nothing fetched,
// nothing written: a Git source's folder is only touched by its first fetch) and closes it: what a source's constructor refuses (a URL's protocol, a GitHub App's key) is
// reported as a reload reports it.
func checkSources(cfg *config.Config) error {
	var errs []error
	for _, sc := range cfg.Sources {
		src, _, err := daemon.NewSource(cfg, sc, slog.New(slog.DiscardHandler))
		if err != nil {
			errs = append(errs, fmt.Errorf("source %s: %w", sc.Name, err))
			continue
		}
		_ = src.Close()
	}
	return cfg.ScrubError(errors.Join(errs...))
}
