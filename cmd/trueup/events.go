package main

import (
	"fmt"
	"net/url"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/apiclient"
	"github.com/trueup-dev/trueup/internal/wire"
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
			if err := checkOutput(output, outTable, outJSON, outYAML); err != nil {
				return err
			}
			if limit < 1 || limit > 1000 {
				return fmt.Errorf("--limit %d: want 1 to 1000", limit)
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
			raw, err := c.List(cmd.Context(), "/api/v1/events", q)
			if err != nil {
				return err
			}
			if output != outTable {
				return printList(cmd.OutOrStdout(), output, raw)
			}
			if len(raw) == 0 {
				return noneFound(cmd.ErrOrStderr(), "events", namespace)
			}
			items, err := apiclient.DecodeItems[wire.Event](raw)
			if err != nil {
				return err
			}
			all := namespace == ""
			header := []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"}
			if all {
				header = append([]string{"NAMESPACE"}, header...)
			}
			t := newTable(cmd.OutOrStdout(), header...)
			for _, e := range items {
				row := []string{ago(e.CreatedAt), e.Type, e.Reason, eventObject(e), truncate(e.Message, wideMessageWidth)}
				if all {
					row = append([]string{e.Namespace}, row...)
				}
				t.row(row...)
			}
			return t.flush()
		},
	}
	f := cmd.Flags()
	f.StringVarP(&namespace, "namespace", "n", "", "only this namespace (default: all namespaces; \"default\" with --for)")
	f.BoolVarP(&allNamespaces, "all-namespaces", "A", false, "every namespace (the default; for kubectl habits)")
	f.StringVar(&forObj, "for", "", "only events of the resource KIND/NAME")
	f.StringVar(&source, "source", "", "only events of this source's syncs and resources")
	f.StringVarP(&output, "output", "o", outTable, "output format: table, json or yaml")
	f.IntVar(&limit, "limit", 100, "at most this many events (1 to 1000)")
	cmd.MarkFlagsMutuallyExclusive("namespace", "all-namespaces")
	cmd.MarkFlagsMutuallyExclusive("for", "all-namespaces")
	return cmd
}

// eventObject names what an event is about: KIND/NAME, or source/NAME for a sync event.
func eventObject(e wire.Event) string {
	switch {
	case e.Kind != "":
		return e.Kind + "/" + e.Name
	case e.Source != "":
		return "source/" + e.Source
	}
	return "<none>"
}
