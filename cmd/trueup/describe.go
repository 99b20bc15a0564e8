package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/cli"
)

func newDescribeCmd(api *apiOptions) *cobra.Command {
	var namespace string
	cmd := &cobra.Command{
		Use:   "describe KIND/NAME | describe source NAME",
		Short: "Show one resource or source in detail: spec, status, conditions, outputs, history and events",
		Long: `Shows one resource for a human: metadata, the spec as stored (schema defaults applied) in
YAML, phase and message, the conditions, the outputs, where the manifest came from
(source file:line@revision), the change a policy holds back with its plan's text and votes,
and the last 10 reconcile attempts and events, newest first.
KIND is case-insensitive; the namespace is "default" unless -n says otherwise.

describe source NAME shows one source: where it reads from, the applied and the last
attempted revision, its prune settings, its resources counted by phase, its conditions
(Ready, Pruned, PruneSkipped), the file:line errors of a rejected revision and its last 10
events.`,
		Example: `  trueup describe DatabaseCluster/orders-pg -n production
  trueup describe bucket/build-cache
  trueup describe source infra`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 2 {
				switch strings.ToLower(args[0]) {
				case "source", "sources", "src":
				default:
					return fmt.Errorf("describe takes KIND/NAME, or source NAME; got %q %q", args[0], args[1])
				}
				c, err := api.client()
				if err != nil {
					return err
				}
				return cli.DescribeSource(cmd.Context(), c, clock, args[1], cmd.OutOrStdout())
			}
			c, kind, name, err := api.forResource(args[0])
			if err != nil {
				return err
			}
			return cli.Describe(cmd.Context(), c, clock, namespace, kind, name, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "the resource's namespace")
	return cmd
}
