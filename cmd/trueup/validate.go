package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/crossref"
	"github.com/trueup-dev/trueup/internal/daemon"
	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/plural"
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
the action instances that controller config declares, and each type's with: as serve checks
it at ingest (the instance's allowedRefs and allowedVariables, the plugin's own rules), and
references across namespaces against its references.expose grants. The spec is a terraform
module's var file, so each variable without a default that the instance's env (TF_VAR_name),
the module's terraform.tfvars and *.auto.tfvars files and its override files leave unset must
be a field of every version's schema of its types: an error when the schema lacks it, a warning
when the schema neither requires it nor gives it a default. A module kept in a source's
repository is read from the checkout DIR is part of.

SOPS-encrypted files are decrypted with the age identities of SOPS_AGE_KEY and
SOPS_AGE_KEY_FILE, and with --config those of every source's decryption.age.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := manifest.Options{}
			scrub := func(s string) string { return s }
			var cfg *config.Config
			var built map[string]actions.Action // the action instances, when they could be built
			if configPath != "" {
				env := lenientEnv{}
				var err error
				cfg, err = config.Load(configPath, env.get)
				if err != nil {
					return err
				}
				opts.Limits = manifest.Limits(cfg.Limits)
				grants := cfg.References.Expose
				opts.CheckReference = func(from string, target graph.ID, outputs []string) error {
					return crossref.Check(grants, from, target, outputs)
				}
				scrub = daemon.Redactor(cfg, nil).Scrub
				acts, err := validateActions(cfg)
				switch {
				case err != nil && len(env) == 0:
					return err // serve would refuse this config as well
				case err != nil:
					// Likely a stand-in value for an unset variable (a URL): CI of a manifests
					// repository rarely has the controller's secrets. Say what is not checked.
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v\nwarning: with %s unset, the action instances could not be built: types' with: is not checked (set them to check it as serve does)\n",
						err, strings.Join(env.names(), ", "))
					acts = map[string]actions.Action{}
					for _, a := range cfg.Actions {
						acts[a.Name] = nil
					}
				default:
					defer daemon.CloseActions(acts)
					built = acts
					// Messages may quote the instance config (an allowlist), which may hold ${VAR}s.
					scrub = daemon.Redactor(cfg, acts).Scrub
				}
				check := daemon.CheckAction(acts)
				opts.CheckAction = func(name string, with json.RawMessage) error {
					a, ok := acts[name]
					switch {
					case !ok:
						return fmt.Errorf("action %q is not declared in %s", name, configPath)
					case a == nil:
						return nil // not built: the name is all that is checked
					}
					return check(name, with)
				}
			}
			keys, err := cliKeys(cfg)
			if err != nil && cfg != nil {
				// The sources' keys are the controller's (a variable unset in a manifests
				// repository's CI, a key file on the controller's host): check what can be.
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s; encrypted files are checked with SOPS_AGE_KEY / SOPS_AGE_KEY_FILE only\n", scrub(err.Error()))
				keys, err = cliKeys(nil)
			}
			if err != nil {
				return err
			}
			files, err := manifest.ReadDir(args[0], "")
			if err != nil {
				return err
			}
			set, err := sealed.Load(manifest.NewLoader(), sealed.NewOpener(keys), files, opts, nil)
			var verrs manifest.Errors
			if errors.As(err, &verrs) {
				for _, e := range verrs {
					fmt.Fprintln(cmd.ErrOrStderr(), scrub(e.Error()))
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", args[0], plural.Count(len(verrs), "error", "errors"))
				return exitCode(1)
			}
			if err != nil {
				return err
			}
			if built != nil {
				missing, warnings, err := checkRequiredFields(args[0], cfg, built, set)
				if err != nil {
					return errors.New(scrub(err.Error()))
				}
				for _, w := range warnings {
					fmt.Fprintln(cmd.ErrOrStderr(), "warning: "+scrub(w))
				}
				for _, m := range missing {
					fmt.Fprintln(cmd.ErrOrStderr(), scrub(m))
				}
				if len(missing) > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", args[0], plural.Count(len(missing), "error", "errors"))
					return exitCode(1)
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: valid: %s, %s\n", args[0],
				plural.Count(len(set.Types), "resource type", "resource types"), plural.Count(len(set.Resources), "resource", "resources"))
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
	reg, err := daemon.Registry()
	if err != nil {
		return nil, err
	}
	acts, err := daemon.NewActions(cfg, reg, slog.New(slog.DiscardHandler), nil, nil)
	if err != nil {
		return nil, cfg.ScrubError(err) // factories quote the config values they refuse
	}
	return acts, nil
}

// lenientEnv stands in for unset variables when a config is read only for its structure,
// and remembers their names.
type lenientEnv map[string]bool

func (e lenientEnv) get(k string) string {
	if v := getenv(k); v != "" || k == "TRUEUP_DATABASE_URL" {
		return v // an override, not a ${VAR}: unset means none
	}
	e[k] = true
	return "unset-" + k
}

func (e lenientEnv) names() []string {
	out := make([]string, 0, len(e))
	for k := range e {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
