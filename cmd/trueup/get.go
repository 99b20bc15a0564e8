package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/cli"
)

func newGetCmd(api *apiOptions) *cobra.Command {
	var o cli.GetOptions
	var allNamespaces bool
	cmd := &cobra.Command{
		Use:   "get resources|types|sources|resourcesets",
		Short: "List resources, resource types, sources or ResourceSets from the API",
		Long: `Lists what the controller holds, through its read-only HTTP API (--server).

  resources (res)                 NAMESPACE NAME KIND PHASE READY AGE
                                  -o wide adds GENERATION OBSERVED SOURCE SET REVISION MESSAGE
  types (resourcetypes, type)     NAME GROUP VERSIONS ACTION SOURCE
                                  -o wide adds RESYNC REVISION FILE AGE
  sources (src)                   NAME REVISION READY LAST-SYNC MESSAGE
                                  -o wide adds URL BRANCH PATH ATTEMPTED ERRORS
  resourcesets (rs)               NAMESPACE NAME SOURCE INPUTS MEMBERS READY AGE

READY is the Ready condition's status and reason; for a ResourceSet, its members in phase
Ready out of its members. --set NAME lists the resources the ResourceSet NAME generates (the
label selector trueup.dev/resource-set=NAME). Resources are listed in every namespace
unless -n names one (-A says so explicitly); every page of the API is read. -o json and
-o yaml print {"items": [...]} with the API's objects and RFC 3339 times.`,
		Example: `  trueup get resources
  trueup get res -n production -l team=checkout,tier!=dev -o wide
  trueup get resources --kind DatabaseCluster --phase Failed
  trueup get resources -n production --set tenant-dbs
  trueup get resourcesets
  trueup get types
  trueup get sources -o yaml`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"resources", "types", "sources", "resourcesets"},
		RunE: func(cmd *cobra.Command, args []string) error {
			what, ok := getKinds[strings.ToLower(args[0])]
			if !ok {
				return fmt.Errorf("cannot get %q: want resources, types, sources or resourcesets", args[0])
			}
			if err := cli.CheckOutput(o.Output, cli.OutTable, cli.OutWide, cli.OutJSON, cli.OutYAML); err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			switch what {
			case "types":
				if err := onlyFlags(cmd, what, "source"); err != nil {
					return err
				}
				return cli.GetTypes(cmd.Context(), c, clock, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
			case "sources":
				if err := onlyFlags(cmd, what); err != nil {
					return err
				}
				return cli.GetSources(cmd.Context(), c, clock, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
			case "resourcesets":
				if err := onlyFlags(cmd, what, "namespace", "source"); err != nil {
					return err
				}
				return cli.GetResourceSets(cmd.Context(), c, clock, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			return cli.GetResources(cmd.Context(), c, clock, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Output, "output", "o", cli.OutTable, "output format: table, wide, json or yaml")
	f.StringVarP(&o.Namespace, "namespace", "n", "", "only this namespace (default: all namespaces)")
	f.BoolVarP(&allNamespaces, "all-namespaces", "A", false, "every namespace (the default; for kubectl habits)")
	f.StringVarP(&o.Selector, "selector", "l", "", "label selector: k=v, k!=v, k in (a,b), k notin (a,b), k, !k; comma-separated")
	f.StringVar(&o.Kind, "kind", "", "only resources of this kind (case-insensitive)")
	f.StringVar(&o.Source, "source", "", "only what this source declares")
	f.StringVar(&o.Phase, "phase", "", "only resources in this phase: Pending, Reconciling, Ready, Failed or Deleting (case-insensitive)")
	f.StringVar(&o.Set, "set", "", "only the resources this ResourceSet generates (in -n's namespace, or any)")
	f.IntVar(&o.ChunkSize, "chunk-size", 500, "resources fetched per API page (1 to 1000)")
	cmd.MarkFlagsMutuallyExclusive("namespace", "all-namespaces")
	return cmd
}

// getKinds maps every accepted spelling of get's argument to what it lists.
var getKinds = map[string]string{
	"resources": "resources", "resource": "resources", "res": "resources",
	"types": "types", "type": "types", "resourcetypes": "types", "resourcetype": "types",
	"sources": "sources", "source": "sources", "src": "sources",
	"resourcesets": "resourcesets", "resourceset": "resourcesets", "rs": "resourcesets",
}

// onlyFlags refuses resource filters on lists they do not apply to.
func onlyFlags(cmd *cobra.Command, what string, allowed ...string) error {
	for _, name := range []string{"namespace", "selector", "kind", "source", "phase", "set", "chunk-size"} {
		if cmd.Flags().Changed(name) && !slices.Contains(allowed, name) {
			return fmt.Errorf("--%s does not apply to %s", name, what)
		}
	}
	return nil
}
