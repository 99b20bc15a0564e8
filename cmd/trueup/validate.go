package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/manifest"
)

func newValidateCmd() *cobra.Command {
	var configPath string
	cmd := &cobra.Command{
		Use:   "validate DIR",
		Short: "Check a manifests folder offline (for the manifests repository's own CI)",
		Long: `Parses and validates every *.yaml, *.yml and *.json file under DIR as trueup would on sync.
Exit status 0 with a one-line summary when everything is valid; 1 with every error as
file:line: field: message otherwise. With --config, action references are checked against
the action instances that controller config declares, and each type's with: as serve checks
it at ingest (the instance's allowedRefs and allowedVariables, the plugin's own rules).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := manifest.Options{}
			scrub := func(s string) string { return s }
			if configPath != "" {
				cfg, err := config.Load(configPath, lenientEnv)
				if err != nil {
					return err
				}
				opts.Limits = manifest.Limits(cfg.Limits)
				acts, err := validateActions(cfg)
				if err != nil {
					return err
				}
				defer closeActions(acts)
				// Messages may quote the instance config (an allowlist), which may hold ${VAR}s.
				scrub = scrubber(cfg, acts)
				check := checkAction(acts)
				opts.CheckAction = func(name string, with json.RawMessage) error {
					if _, ok := acts[name]; !ok {
						return fmt.Errorf("action %q is not declared in %s", name, configPath)
					}
					return check(name, with)
				}
			}
			set, err := manifest.NewLoader().LoadDir(args[0], opts)
			var verrs manifest.Errors
			if errors.As(err, &verrs) {
				for _, e := range verrs {
					fmt.Fprintln(cmd.ErrOrStderr(), scrub(e.Error()))
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d error(s)\n", args[0], len(verrs))
				return exitCode(1)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: valid: %d resource type(s), %d resource(s)\n", args[0], len(set.Types), len(set.Resources))
			return nil
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "controller config whose action instances the types must name")
	return cmd
}

// validateActions builds the config's action instances as serve does, so that a type's with:
// is checked by the very function serve's ingest uses (checkAction). Factories validate
// without side effects; nothing is started.
func validateActions(cfg *config.Config) (map[string]actions.Action, error) {
	reg, err := registry()
	if err != nil {
		return nil, err
	}
	acts, err := newActions(cfg, reg, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, cfg.ScrubError(err) // factories quote the config values they refuse
	}
	return acts, nil
}

// lenientEnv stands in for unset variables when a config is read only for its structure.
func lenientEnv(k string) string {
	if v := getenv(k); v != "" {
		return v
	}
	return "unset-" + k
}
