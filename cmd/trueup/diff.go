package main

import (
	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/cli"
	"github.com/trueup-dev/trueup/internal/config"
)

func newDiffCmd(api *apiOptions) *cobra.Command {
	var source, configPath string
	var kustomize []string
	cmd := &cobra.Command{
		Use:   "diff DIR --source NAME",
		Short: "Show what applying a manifests folder to a source would change",
		Long: `Loads DIR with the same parsing and validation as a sync and compares it with what the
server holds for the source --source, through the API (--server).

DIR is the folder the source reads: for a Git source with a path (path: manifests), the
checkout's manifests folder, not the repository root; the server names files from the
repository root, so DIR's files are compared as <path>/<file> (trueup diff ./manifests
--source infra); given a folder above it, such as the repository root, diff names the
folder to pass (as a note when the source has applied nothing yet). For a
source without a path, DIR is the repository root or the folder of a dir source. It prints

  + KIND/NAMESPACE/NAME  file:line      a resource (or ResourceType/NAME) that would be created
  ~ KIND/NAMESPACE/NAME  file:line      one that would change, with a unified diff of its spec
                                        (canonical JSON: keys sorted, schema defaults applied)
                                        or of its apiVersion, labels, annotations and
                                        dependsOn
  - KIND/NAMESPACE/NAME  file:line      one whose manifest is gone: deleted when the source
                                        prunes, kept with trueup.dev/prune: disabled
  ! invalid file:line: message          a problem that would reject the whole revision

and a summary line counting resources and, when DIR declares types, types apart. Exit status: 0 when applying DIR would change nothing, 1 when it would
change something or DIR is invalid (as diff(1) does), 1 with "trueup: <message>" when the
API cannot be read.

ResourceTypes known to the server are available to DIR's resources, so DIR may hold only
resources; the source's types are then not compared. When DIR declares types, it is taken
as the whole source, as a sync sees it: the source's types missing from DIR are reported as
removed, and DIR's resources may use only DIR's types and other sources' types.

SOPS-encrypted files are decrypted with the age identities of SOPS_AGE_KEY and
SOPS_AGE_KEY_FILE; an encrypted field is compared by its marker ("*** sops:<fingerprint>"),
which changes when its value does, and its plaintext is never printed.

A source with render: kustomize is diffed on its rendered output: give the kustomization
folders with --kustomize (relative to DIR, * matches one folder name, repeatable), or the
controller config with --config to use the source's render block.`,
		Example: `  # source infra has path: manifests
  trueup diff ./manifests --source infra
  # source platform reads the whole repository
  trueup diff . --source platform --server http://trueup.internal:8080`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := api.client()
			if err != nil {
				return err
			}
			var cfg *config.Config
			if configPath != "" && len(kustomize) == 0 {
				// Read for the source's render block only: an unset variable stands in as unset-NAME.
				if cfg, err = config.LoadEnv(configPath, config.LenientEnv(nil)); err != nil {
					return err
				}
			}
			plan, err := cli.Diff(cmd.Context(), c, args[0], source, kustomize, cfg)
			if err != nil {
				return err
			}
			if err := plan.Print(cmd.OutOrStdout()); err != nil {
				return err
			}
			if plan.Changed() {
				return exitCode(1)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&source, "source", "", "the source DIR would be applied to (required)")
	_ = cmd.MarkFlagRequired("source")
	cmd.Flags().StringArrayVar(&kustomize, "kustomize", nil, "render this kustomization folder of DIR first (repeatable; * globs)")
	cmd.Flags().StringVar(&configPath, "config", "", "controller config whose render block of the source applies")
	return cmd
}
