package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/apiclient"
	"github.com/trueup-dev/trueup/internal/cli"
)

func newHistoryCmd(api *apiOptions) *cobra.Command {
	var namespace, output string
	var limit int
	cmd := &cobra.Command{
		Use:   "history KIND/NAME",
		Short: "List a resource's reconcile attempts, newest first",
		Long: `Lists every recorded reconcile attempt of one resource, newest first:
GENERATION REVISION TRIGGER RESULT DURATION STARTED MESSAGE. History outlives the resource,
so a deleted resource's attempts (its delete included) are still shown. KIND is
case-insensitive; the namespace is "default" unless -n says otherwise.`,
		Example: `  trueup history DatabaseCluster/orders-pg -n production
  trueup history bucket/build-cache -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, kind, name, err := api.forListing(args[0], output, limit)
			if err != nil {
				return err
			}
			return cli.History(cmd.Context(), c, clock, namespace, kind, name, limit, output, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "the resource's namespace")
	cmd.Flags().StringVarP(&output, "output", "o", cli.OutTable, "output format: table, json or yaml")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many attempts (1 to 1000)")
	return cmd
}

// listClient is the client of a command listing at most limit items as output says, once
// both are checked.
func (api *apiOptions) listClient(output string, limit int) (*apiclient.Client, error) {
	if err := cli.CheckOutput(output, cli.OutTable, cli.OutJSON, cli.OutYAML); err != nil {
		return nil, err
	}
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	return api.client()
}

// forListing checks the arguments of a command that lists a resource's records (KIND/NAME,
// -o, --limit) and returns the API client, the kind and the name.
func (api *apiOptions) forListing(ref, output string, limit int) (*apiclient.Client, string, string, error) {
	kind, name, err := parseObjectRef(ref)
	if err != nil {
		return nil, "", "", err
	}
	c, err := api.listClient(output, limit)
	return c, kind, name, err
}

// checkLimit refuses a --limit the API does not serve.
func checkLimit(limit int) error {
	if limit < 1 || limit > 1000 {
		return fmt.Errorf("--limit %d: want 1 to 1000", limit)
	}
	return nil
}
