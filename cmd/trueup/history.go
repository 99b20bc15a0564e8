package main

import (
	"fmt"
	"io"
	"net/url"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/apiclient"
	"github.com/trueup-dev/trueup/internal/wire"
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
			kind, name, err := parseObjectRef(args[0])
			if err != nil {
				return err
			}
			if err := checkOutput(output, outTable, outJSON, outYAML); err != nil {
				return err
			}
			if limit < 1 || limit > 1000 {
				return fmt.Errorf("--limit %d: want 1 to 1000", limit)
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			raw, err := c.List(cmd.Context(), apiclient.ResourcePath(namespace, kind, name)+"/history", url.Values{"limit": {fmt.Sprint(limit)}})
			if err != nil {
				return err
			}
			if output != outTable {
				return printList(cmd.OutOrStdout(), output, raw)
			}
			if len(raw) == 0 {
				_, err := fmt.Fprintf(cmd.ErrOrStderr(), "No reconcile attempts recorded for %s/%s in namespace %s yet.\n", kind, name, namespace)
				return err
			}
			items, err := apiclient.DecodeItems[wire.HistoryEntry](raw)
			if err != nil {
				return err
			}
			return historyTable(cmd.OutOrStdout(), "", items)
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "the resource's namespace")
	cmd.Flags().StringVarP(&output, "output", "o", outTable, "output format: table, json or yaml")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many attempts (1 to 1000)")
	return cmd
}

// historyTable prints attempts with each line starting with indent (describe nests it).
func historyTable(w io.Writer, indent string, items []wire.HistoryEntry) error {
	t := newTable(w, indent+"GENERATION", "REVISION", "TRIGGER", "RESULT", "DURATION", "STARTED", "MESSAGE")
	for _, h := range items {
		t.row(indent+fmt.Sprint(h.Generation), shortRev(h.Revision), triggerCell(h), h.Result, millis(h.DurationMs),
			ago(h.StartedAt), truncate(h.Message, wideMessageWidth))
	}
	return t.flush()
}
