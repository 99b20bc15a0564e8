package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/cli/validate"
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
sources, secrets, reference grants, notification rules, policies and their CEL rules) is checked and each action instance, source, commit
status reporter, preview publisher and notification sender is built as serve builds it (nothing is called or fetched, no database is opened, nothing under
dataDir is created or removed, so it is safe to run beside a running serve). Prints what the config declares, or
every problem naming its field, and exits 1. ${VAR}s that are unset in this environment are
reported: the instances whose config needs them are then not built.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			env := validate.LenientEnv{}
			cfg, err := config.LoadEnv(args[0], env.Env())
			if err != nil {
				return err
			}
			acts, err := validate.Actions(cfg)
			switch {
			case err != nil && len(env) == 0:
				return err
			case err != nil:
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v\nwarning: with %s unset, the action instances could not be built\n",
					daemon.Redactor(cfg, nil).Scrub(err.Error()), strings.Join(env.Names(), ", "))
			default:
				daemon.CloseActions(acts)
			}
			reg, err := daemon.SourceRegistry()
			if err != nil {
				return err
			}
			switch err := daemon.CheckSources(cfg, reg); {
			case err != nil && len(env) == 0:
				return err
			case err != nil:
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v\nwarning: with %s unset, the sources, commit status reporters, preview publishers and notification sender could not be built\n",
					daemon.Redactor(cfg, nil).Scrub(err.Error()), strings.Join(env.Names(), ", "))
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
