package main

import (
	"fmt"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/cli"
)

func newGraphCmd(api *apiOptions) *cobra.Command {
	var o graphOptions
	cmd := &cobra.Command{
		Use:   "graph [KIND/NAME]",
		Short: "Show the dependency graph: as a tree, as Graphviz DOT, or as the API's JSON",
		Long: `Shows which resources depend on which (dependsOn, and output references ${{ Kind/name.outputs.x }}).

Without an argument it shows every resource you may see, or those of one source (--source) or
namespace (-n), with the edges that leave or enter the set. With KIND/NAME it shows what that
resource depends on and what depends on it, transitively (--depth limits how far); its
namespace is "default" unless -n says otherwise.

The text form prints one tree per resource that nothing depends on: each resource with its
phase, what it depends on indented below it, and how (dependsOn, or the outputs it
references). A dependency that does not exist is marked (missing); one shown already is not
expanded again. -o dot prints Graphviz DOT (render it with: dot -Tsvg): edges point from a
dependent to its dependency, dashed when only implied by an output reference; missing
resources are dashed and grey.`,
		Example: `  trueup graph
  trueup graph --source infra -o dot | dot -Tsvg > infra.svg
  trueup graph Database/orders -n prod
  trueup graph App/web -n prod --depth 1 -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cli.CheckOutput(o.output, cli.OutText, cli.OutDot, cli.OutJSON, cli.OutYAML); err != nil {
				return err
			}
			q := url.Values{}
			if len(args) == 1 {
				kind, name, err := parseObjectRef(args[0])
				if err != nil {
					return err
				}
				if o.source != "" {
					return fmt.Errorf("--source selects a graph of its own: leave it out with %s", args[0])
				}
				ns := o.namespace
				if ns == "" {
					ns = "default"
				}
				q.Set("resource", kind+"/"+ns+"/"+name)
				if o.depth > 0 {
					q.Set("depth", strconv.Itoa(o.depth))
				}
			} else {
				if cmd.Flags().Changed("depth") {
					return fmt.Errorf("--depth needs a KIND/NAME to start from")
				}
				if o.source != "" {
					q.Set("source", o.source)
				}
				if o.namespace != "" {
					q.Set("namespace", o.namespace)
				}
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			return cli.Graph(cmd.Context(), c, q, o.output, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", cli.OutText, "output format: text, dot, json or yaml")
	f.StringVarP(&o.namespace, "namespace", "n", "", `only this namespace; with KIND/NAME, the resource's namespace (default "default")`)
	f.StringVar(&o.source, "source", "", "only what this source declares (and the ends of its edges)")
	f.IntVar(&o.depth, "depth", 0, "with KIND/NAME: how many edges away to go (0: no limit)")
	return cmd
}

type graphOptions struct {
	output    string
	namespace string
	source    string
	depth     int
}
