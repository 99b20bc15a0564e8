package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/apiclient"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/wire"
)

// getOptions are the flags of `trueup get`.
type getOptions struct {
	output        string
	namespace     string
	allNamespaces bool
	selector      string
	kind          string
	source        string
	phase         string
	chunkSize     int
}

// Widths at which table cells are cut, so one long message does not push every row apart.
const (
	messageWidth     = 60
	wideMessageWidth = 100
)

// getKinds maps every accepted spelling of get's argument to what it lists.
var getKinds = map[string]string{
	"resources": "resources", "resource": "resources", "res": "resources",
	"types": "types", "type": "types", "resourcetypes": "types", "resourcetype": "types",
	"sources": "sources", "source": "sources", "src": "sources",
}

func newGetCmd(api *apiOptions) *cobra.Command {
	var o getOptions
	cmd := &cobra.Command{
		Use:   "get resources|types|sources",
		Short: "List resources, resource types or sources from the API",
		Long: `Lists what the controller holds, through its read-only HTTP API (--server).

  resources (res)                 NAMESPACE NAME KIND PHASE READY AGE
                                  -o wide adds GENERATION OBSERVED SOURCE REVISION MESSAGE
  types (resourcetypes, type)     NAME GROUP VERSIONS ACTION SOURCE
                                  -o wide adds RESYNC REVISION FILE AGE
  sources (src)                   NAME REVISION READY LAST-SYNC MESSAGE
                                  -o wide adds URL BRANCH PATH ATTEMPTED ERRORS

READY is the Ready condition's status and reason. Resources are listed in every namespace
unless -n names one (-A says so explicitly); every page of the API is read. -o json and
-o yaml print {"items": [...]} with the API's objects and RFC 3339 times.`,
		Example: `  trueup get resources
  trueup get res -n production -l team=checkout,tier!=dev -o wide
  trueup get resources --kind DatabaseCluster --phase Failed
  trueup get types
  trueup get sources -o yaml`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"resources", "types", "sources"},
		RunE: func(cmd *cobra.Command, args []string) error {
			what, ok := getKinds[strings.ToLower(args[0])]
			if !ok {
				return fmt.Errorf("cannot get %q: want resources, types or sources", args[0])
			}
			if err := checkOutput(o.output, outTable, outWide, outJSON, outYAML); err != nil {
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
				return getTypes(cmd.Context(), c, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
			case "sources":
				if err := onlyFlags(cmd, what); err != nil {
					return err
				}
				return getSources(cmd.Context(), c, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			return getResources(cmd.Context(), c, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", outTable, "output format: table, wide, json or yaml")
	f.StringVarP(&o.namespace, "namespace", "n", "", "only this namespace (default: all namespaces)")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "every namespace (the default; for kubectl habits)")
	f.StringVarP(&o.selector, "selector", "l", "", "label selector: k=v, k!=v, k in (a,b), k notin (a,b), k, !k; comma-separated")
	f.StringVar(&o.kind, "kind", "", "only resources of this kind (case-insensitive)")
	f.StringVar(&o.source, "source", "", "only what this source declares")
	f.StringVar(&o.phase, "phase", "", "only resources in this phase: Pending, Reconciling, Ready, Failed or Deleting (case-insensitive)")
	f.IntVar(&o.chunkSize, "chunk-size", 500, "resources fetched per API page (1 to 1000)")
	cmd.MarkFlagsMutuallyExclusive("namespace", "all-namespaces")
	return cmd
}

// phases are the phases a resource can be in, as the API spells them.
var phases = []string{status.PhasePending, status.PhaseReconciling, status.PhaseReady, status.PhaseFailed, status.PhaseDeleting}

// normalizePhase spells a --phase value as the API does (--phase ready is Ready); the API
// would answer an unknown phase with an empty list, so it is refused here.
func normalizePhase(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	for _, ph := range phases {
		if strings.EqualFold(p, ph) {
			return ph, nil
		}
	}
	return "", fmt.Errorf("--phase %q: want one of %s", p, strings.Join(phases, ", "))
}

// onlyFlags refuses resource filters on lists they do not apply to.
func onlyFlags(cmd *cobra.Command, what string, allowed ...string) error {
	for _, name := range []string{"namespace", "selector", "kind", "source", "phase", "chunk-size"} {
		if cmd.Flags().Changed(name) && !slices.Contains(allowed, name) {
			return fmt.Errorf("--%s does not apply to %s", name, what)
		}
	}
	return nil
}

func getResources(ctx context.Context, c *apiclient.Client, o getOptions, out, errOut io.Writer) error {
	if o.chunkSize < 1 || o.chunkSize > 1000 {
		return fmt.Errorf("--chunk-size %d: want 1 to 1000", o.chunkSize)
	}
	phase, err := normalizePhase(o.phase)
	if err != nil {
		return err
	}
	q := url.Values{"namespace": {o.namespace}, "kind": {o.kind}, "source": {o.source}, "phase": {phase}, "labelSelector": {o.selector}}
	raw, err := c.ListResources(ctx, q, o.chunkSize)
	if err != nil {
		return err
	}
	if o.output == outJSON || o.output == outYAML {
		return printList(out, o.output, raw)
	}
	if len(raw) == 0 {
		return noneFound(errOut, "resources", o.namespace)
	}
	items, err := apiclient.DecodeItems[wire.Resource](raw)
	if err != nil {
		return err
	}
	wide := o.output == outWide
	header := []string{"NAMESPACE", "NAME", "KIND", "PHASE", "READY", "AGE"}
	if wide {
		header = append(header, "GENERATION", "OBSERVED", "SOURCE", "REVISION", "MESSAGE")
	}
	t := newTable(out, header...)
	for _, r := range items {
		row := []string{r.Metadata.Namespace, r.Metadata.Name, r.Kind, phaseCell(r), readyCell(r.Status.Conditions), age(r.Metadata.CreationTimestamp)}
		if wide {
			row = append(row, fmt.Sprint(r.Metadata.Generation), fmt.Sprint(r.Status.ObservedGeneration), r.Source.Name,
				shortRev(r.Source.Revision), truncate(resourceMessage(r), wideMessageWidth))
		}
		t.row(row...)
	}
	return t.flush()
}

// readyCell shows the Ready condition as "True (Reconciled)".
func readyCell(conds []status.Condition) string {
	c, ok := status.Get(conds, status.Ready)
	switch {
	case !ok:
		return "<none>"
	case c.Reason == "":
		return c.Status
	}
	return c.Status + " (" + c.Reason + ")"
}

// resourceMessage is the status message, or the Ready condition's when the status has none.
func resourceMessage(r wire.Resource) string {
	if r.Status.Message != "" {
		return r.Status.Message
	}
	c, _ := status.Get(r.Status.Conditions, status.Ready)
	return c.Message
}

func noneFound(w io.Writer, what, namespace string) error {
	if namespace != "" {
		_, err := fmt.Fprintf(w, "No %s found in namespace %s.\n", what, namespace)
		return err
	}
	_, err := fmt.Fprintf(w, "No %s found.\n", what)
	return err
}

// typeSpec is the part of a ResourceType's spec that tables show.
type typeSpec struct {
	Description string `json:"description"`
	Versions    []struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
	} `json:"versions"`
	Action struct {
		Name string          `json:"name"`
		With json.RawMessage `json:"with"`
	} `json:"action"`
	ResyncInterval string `json:"resyncInterval"`
}

func getTypes(ctx context.Context, c *apiclient.Client, o getOptions, out, errOut io.Writer) error {
	raw, err := c.List(ctx, "/api/v1/resourcetypes", nil)
	if err != nil {
		return err
	}
	items, err := apiclient.DecodeItems[wire.ResourceType](raw)
	if err != nil {
		return err
	}
	if o.source != "" {
		var keepRaw []json.RawMessage
		var keep []wire.ResourceType
		for i, t := range items {
			if t.Source == o.source {
				keepRaw, keep = append(keepRaw, raw[i]), append(keep, t)
			}
		}
		raw, items = keepRaw, keep
	}
	if o.output == outJSON || o.output == outYAML {
		return printList(out, o.output, raw)
	}
	if len(items) == 0 {
		return noneFound(errOut, "resource types", "")
	}
	wide := o.output == outWide
	header := []string{"NAME", "GROUP", "VERSIONS", "ACTION", "SOURCE"}
	if wide {
		header = append(header, "RESYNC", "REVISION", "FILE", "AGE")
	}
	t := newTable(out, header...)
	for _, typ := range items {
		var spec typeSpec
		if err := json.Unmarshal(typ.Spec, &spec); err != nil {
			return fmt.Errorf("type %s: %w", typ.Name, err)
		}
		versions := make([]string, len(spec.Versions))
		for i, v := range spec.Versions {
			versions[i] = v.Name
		}
		row := []string{typ.Name, typ.Group, strings.Join(versions, ","), spec.Action.Name, typ.Source}
		if wide {
			row = append(row, orNone(spec.ResyncInterval), shortRev(typ.Revision), orNone(typ.Path), age(typ.CreatedAt))
		}
		t.row(row...)
	}
	return t.flush()
}

func getSources(ctx context.Context, c *apiclient.Client, o getOptions, out, errOut io.Writer) error {
	raw, err := c.List(ctx, "/api/v1/sources", nil)
	if err != nil {
		return err
	}
	if o.output == outJSON || o.output == outYAML {
		return printList(out, o.output, raw)
	}
	if len(raw) == 0 {
		return noneFound(errOut, "sources", "")
	}
	items, err := apiclient.DecodeItems[wire.Source](raw)
	if err != nil {
		return err
	}
	wide := o.output == outWide
	header := []string{"NAME", "REVISION", "READY", "LAST-SYNC"}
	if wide {
		header = append(header, "URL", "BRANCH", "PATH", "ATTEMPTED", "ERRORS")
	}
	header = append(header, "MESSAGE")
	t := newTable(out, header...)
	for _, s := range items {
		row := []string{s.Name, sourceRevisionCell(s), readyCell(s.Conditions), agoPtr(s.LastSyncTime)}
		width := messageWidth
		if wide {
			width = wideMessageWidth
			row = append(row, s.URL, orNone(s.Branch), orNone(s.Path), shortRev(s.LastAttemptedRevision), fmt.Sprint(len(s.Errors)))
		}
		t.row(append(row, truncate(sourceMessage(s), width))...)
	}
	return t.flush()
}
