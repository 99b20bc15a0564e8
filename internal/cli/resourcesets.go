package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/trueup-dev/trueup/internal/apiclient"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/status"
)

// setSelector adds the ResourceSet's label to a label selector: `get resources --set NAME`
// lists the resources labelled trueup.dev/resource-set=NAME.
func setSelector(selector, set string) string {
	switch {
	case set == "":
		return selector
	case selector == "":
		return manifest.LabelResourceSet + "=" + set
	}
	return selector + "," + manifest.LabelResourceSet + "=" + set
}

// GetResourceSets prints the ResourceSets (of o.Namespace and o.Source, when set). READY
// counts the members in phase Ready out of the members the set generates.
func GetResourceSets(ctx context.Context, c *apiclient.Client, clock func() time.Time, o GetOptions, out, errOut io.Writer) error {
	items, err := c.ResourceSets(ctx, apiclient.ResourceSetFilter{Namespace: o.Namespace, Source: o.Source})
	if err != nil {
		return err
	}
	now := clock()
	if o.Output == OutJSON || o.Output == OutYAML {
		raw := make([]json.RawMessage, len(items))
		for i, rs := range items {
			if raw[i], err = json.Marshal(rs); err != nil {
				return err
			}
		}
		return printList(out, o.Output, raw)
	}
	if len(items) == 0 {
		return noneFound(errOut, "resource sets", o.Namespace)
	}
	t := newTable(out, "NAMESPACE", "NAME", "SOURCE", "INPUTS", "MEMBERS", "READY", "AGE")
	for _, rs := range items {
		t.row(rs.Namespace, rs.Name, rs.Source, fmt.Sprint(rs.Inputs), fmt.Sprint(rs.Members),
			fmt.Sprintf("%d/%d", rs.Phases[status.PhaseReady], rs.Members), age(now, rs.CreatedAt))
	}
	return t.flush()
}
