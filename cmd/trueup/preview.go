package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/cli"
)

func newPreviewCmd(api *apiOptions) *cobra.Command {
	var o cli.PreviewOptions
	cmd := &cobra.Command{
		Use:   "preview SOURCE [--pr N]",
		Short: "Show what a pull request would change: counts, spec diffs, plans, warnings and errors",
		Long: `Shows the pull-request previews of a source (one per pull or merge request, the latest
push of each), as the controller computed them when the forge's webhook arrived.

Without --pr, lists the source's previews, most recently updated first:

  PR STATE HEAD ADD CHANGE DELETE INVALID UPDATED TITLE

With --pr N, shows that pull request's preview: its state, the head commit and the applied
revision it was compared with, the counts, every change with its spec diff and its action's
plan, the warnings (prune guards that would skip deletions, plans that timed out) and every
validation error as file:line. -o json and -o yaml print the API's answer.`,
		Example: `  trueup preview infra
  trueup preview infra --pr 42
  trueup preview infra --pr 42 -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cli.CheckOutput(o.Output, cli.OutTable, cli.OutJSON, cli.OutYAML); err != nil {
				return err
			}
			if cmd.Flags().Changed("pr") && o.PR < 1 {
				return fmt.Errorf("--pr %d: want a pull request number (1 or more)", o.PR)
			}
			if err := checkLimit(o.Limit); err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			if o.PR == 0 {
				return cli.ListPreviews(cmd.Context(), c, clock, args[0], o, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			return cli.ShowPreview(cmd.Context(), c, clock, args[0], o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.PR, "pr", 0, "the pull (merge) request number; without it, list the source's previews")
	f.StringVarP(&o.Output, "output", "o", cli.OutTable, "output format: table (text with --pr), json or yaml")
	f.IntVar(&o.Limit, "limit", 100, "previews listed at most (1 to 1000)")
	return cmd
}
