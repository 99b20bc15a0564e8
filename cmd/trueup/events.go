package main

import (
	"fmt"
	"net/url"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/cli"
)

func newEventsCmd(api *apiOptions) *cobra.Command {
	var namespace, forObj, source, output string
	var allNamespaces bool
	var limit int
	cmd := &cobra.Command{
		Use:   "events",
		Short: "List Normal and Warning events, newest first",
		Long: `Lists events about resources and sources, newest first: LAST SEEN TYPE REASON OBJECT
MESSAGE, with a NAMESPACE column first when events of every namespace are shown (the default
unless -n or --for is given). OBJECT is KIND/NAME for a resource and source/NAME for a sync
event. --for KIND/NAME narrows to one resource, in namespace "default" unless -n says
otherwise.`,
		Example: `  trueup events
  trueup events -n production
  trueup events --for DatabaseCluster/orders-pg -n production
  trueup events --source infra -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cli.CheckOutput(output, cli.OutTable, cli.OutJSON, cli.OutYAML); err != nil {
				return err
			}
			if err := checkLimit(limit); err != nil {
				return err
			}
			q := url.Values{"limit": {fmt.Sprint(limit)}}
			if forObj != "" {
				kind, name, err := parseObjectRef(forObj)
				if err != nil {
					return fmt.Errorf("--for %w", err)
				}
				if namespace == "" {
					namespace = "default"
				}
				q.Set("kind", kind)
				q.Set("name", name)
			}
			if namespace != "" {
				q.Set("namespace", namespace)
			}
			if source != "" {
				q.Set("source", source)
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			return cli.Events(cmd.Context(), c, clock, q, output, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&namespace, "namespace", "n", "", "only this namespace (default: all namespaces; \"default\" with --for)")
	f.BoolVarP(&allNamespaces, "all-namespaces", "A", false, "every namespace (the default; for kubectl habits)")
	f.StringVar(&forObj, "for", "", "only events of the resource KIND/NAME")
	f.StringVar(&source, "source", "", "only events of this source's syncs and resources")
	f.StringVarP(&output, "output", "o", cli.OutTable, "output format: table, json or yaml")
	f.IntVar(&limit, "limit", 100, "at most this many events (1 to 1000)")
	cmd.MarkFlagsMutuallyExclusive("namespace", "all-namespaces")
	cmd.MarkFlagsMutuallyExclusive("for", "all-namespaces")
	return cmd
}
