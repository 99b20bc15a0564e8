package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/config"
)

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Work with a controller config offline"}
	cmd.AddCommand(&cobra.Command{
		Use:   "check FILE",
		Short: "Check a controller config as serve would, without starting anything",
		Long: `Reads FILE as serve reads its --config: every field, default and cross-reference (actions,
sources, secrets, notification rules) is checked and each action instance is built as serve
builds it (nothing is called, no database is opened). Prints what the config declares, or
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
					scrubber(cfg, nil)(err.Error()), strings.Join(env.names(), ", "))
			default:
				closeActions(acts)
			}
			rules := 0
			if cfg.Notifications != nil {
				rules = len(cfg.Notifications.Rules)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "valid: %d source(s), %d action instance(s), %d notification rule(s)\n",
				len(cfg.Sources), len(cfg.Actions), rules)
			return nil
		},
	})
	return cmd
}
