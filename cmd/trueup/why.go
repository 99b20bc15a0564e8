package main

import (
	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/cli"
)

func newWhyCmd(api *apiOptions) *cobra.Command {
	var namespace, output string
	var limit int
	cmd := &cobra.Command{
		Use:   "why NAMESPACE/KIND/NAME",
		Short: "Say why a resource is in its state: what holds it back, then its timeline",
		Long: `Answers "why is this resource in this state?" in one place. First what holds it back now,
numbered, the reason expected to end last first (a change window and when it opens, a
dependency that is not Ready and the window holding it, an approval, a denial or rejection, a
backoff, a stall, a suspension, its source suspended or pinned). Then its timeline, oldest
first, one line per entry: the commits that changed it, its attempts, the operator commands,
the waits, drift and notifications. KIND is case-insensitive; KIND/NAME is in the namespace -n
gives ("default" unless said otherwise).`,
		Example: `  trueup why production/DatabaseCluster/orders-pg
  trueup why bucket/build-cache -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, kind, name, err := parseNamespacedRef(args[0], namespace)
			if err != nil {
				return err
			}
			c, err := api.listClient(output, limit)
			if err != nil {
				return err
			}
			return cli.Why(cmd.Context(), c, clock, ns, kind, name, limit, output, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", `the resource's namespace, for KIND/NAME ("default")`)
	cmd.Flags().StringVarP(&output, "output", "o", cli.OutTable, "output format: table, json or yaml")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many timeline entries, the newest (1 to 1000)")
	return cmd
}
