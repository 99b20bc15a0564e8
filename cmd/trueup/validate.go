package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/sealed"
)

func newValidateCmd() *cobra.Command {
	var configPath string
	cmd := &cobra.Command{
		Use:   "validate DIR",
		Short: "Check a manifests folder offline (for the manifests repository's own CI)",
		Long: `Parses and validates every *.yaml, *.yml and *.json file under DIR as trueup would on sync.
Exit status 0 with a one-line summary when everything is valid; 1 with every error as
file:line: field: message otherwise. With --config, action references are checked against
the action instances that controller config declares.

SOPS-encrypted files are decrypted with the age identities of SOPS_AGE_KEY and
SOPS_AGE_KEY_FILE, and with --config those of every source's decryption.age.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := manifest.Options{}
			var cfg *config.Config
			if configPath != "" {
				var err error
				cfg, err = config.Load(configPath, lenientEnv)
				if err != nil {
					return err
				}
				opts.Limits = manifest.Limits(cfg.Limits)
				names := map[string]bool{}
				for _, a := range cfg.Actions {
					names[a.Name] = true
				}
				opts.CheckAction = func(name string, _ json.RawMessage) error {
					if !names[name] {
						return fmt.Errorf("action %q is not declared in %s", name, configPath)
					}
					return nil
				}
			}
			keys, err := cliKeys(cfg)
			if err != nil {
				return err
			}
			files, err := manifest.ReadDir(args[0], "")
			if err != nil {
				return err
			}
			set, err := sealed.Load(manifest.NewLoader(), sealed.NewOpener(keys), files, opts)
			var verrs manifest.Errors
			if errors.As(err, &verrs) {
				for _, e := range verrs {
					fmt.Fprintln(cmd.ErrOrStderr(), e.Error())
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

// lenientEnv stands in for unset variables when a config is read only for its structure.
func lenientEnv(k string) string {
	if v := getenv(k); v != "" {
		return v
	}
	return "unset-" + k
}
