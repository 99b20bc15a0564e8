package main

import (
	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/cli/validate"
)

func newValidateCmd() *cobra.Command {
	var configPath string
	var rd validate.Render
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
SOPS_AGE_KEY_FILE, and with --config those of every source's decryption.age.

With --kustomize, DIR is rendered with kustomize first, as a source with render: kustomize
renders it: each --kustomize is a kustomization folder relative to DIR (* matches one folder
name), and the output is what is checked. With --config and no --kustomize, the render block
of the source --source (or of the config's only source) applies.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return validate.Folder(args[0], configPath, rd, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "controller config whose action instances the types must name")
	cmd.Flags().StringArrayVar(&rd.Kustomize, "kustomize", nil, "render this kustomization folder of DIR first (repeatable; * globs)")
	cmd.Flags().StringVar(&rd.Source, "source", "", "with --config: the source DIR belongs to, whose render block applies")
	return cmd
}
