package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/internal/apiclient"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/wire"
)

// GetOptions are the flags of `trueup get`.
type GetOptions struct {
	Output    string
	Namespace string
	Selector  string
	Kind      string
	Source    string
	Phase     string
	Set       string // only the resources this ResourceSet generates
	ChunkSize int
}

// Widths at which table cells are cut, so one long message does not push every row apart.
const (
	messageWidth     = 60
	wideMessageWidth = 100
)

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

// GetResources prints the resources o selects. Ages, here and in the other listings, are
// measured against clock read once after the last API call.
func GetResources(ctx context.Context, c *apiclient.Client, clock func() time.Time, o GetOptions, out, errOut io.Writer) error {
	if o.ChunkSize < 1 || o.ChunkSize > 1000 {
		return fmt.Errorf("--chunk-size %d: want 1 to 1000", o.ChunkSize)
	}
	phase, err := normalizePhase(o.Phase)
	if err != nil {
		return err
	}
	q := url.Values{"namespace": {o.Namespace}, "kind": {o.Kind}, "source": {o.Source}, "phase": {phase}, "labelSelector": {setSelector(o.Selector, o.Set)}}
	raw, err := c.ListResources(ctx, q, o.ChunkSize)
	if err != nil {
		return err
	}
	now := clock()
	if o.Output == OutJSON || o.Output == OutYAML {
		return printList(out, o.Output, raw)
	}
	if len(raw) == 0 {
		return noneFound(errOut, "resources", o.Namespace)
	}
	items, err := apiclient.DecodeItems[wire.Resource](raw)
	if err != nil {
		return err
	}
	wide := o.Output == OutWide
	header := []string{"NAMESPACE", "NAME", "KIND", "PHASE", "READY", "AGE"}
	if wide {
		header = append(header, "GENERATION", "OBSERVED", "SOURCE", "SET", "REVISION", "MESSAGE")
	}
	t := newTable(out, header...)
	for _, r := range items {
		row := []string{r.Metadata.Namespace, r.Metadata.Name, r.Kind, phaseCell(r), readyCell(r.Status.Conditions), age(now, r.Metadata.CreationTimestamp)}
		if wide {
			row = append(row, fmt.Sprint(r.Metadata.Generation), fmt.Sprint(r.Status.ObservedGeneration), r.Source.Name,
				orNone(r.Source.ResourceSet), ShortRev(r.Source.Revision), truncate(resourceMessage(r), wideMessageWidth))
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

// GetTypes prints the resource types (of o.Source, when set).
func GetTypes(ctx context.Context, c *apiclient.Client, clock func() time.Time, o GetOptions, out, errOut io.Writer) error {
	raw, err := c.List(ctx, "/api/v1/resourcetypes", nil)
	if err != nil {
		return err
	}
	now := clock()
	items, err := apiclient.DecodeItems[wire.ResourceType](raw)
	if err != nil {
		return err
	}
	if o.Source != "" {
		var keepRaw []json.RawMessage
		var keep []wire.ResourceType
		for i, t := range items {
			if t.Source == o.Source {
				keepRaw, keep = append(keepRaw, raw[i]), append(keep, t)
			}
		}
		raw, items = keepRaw, keep
	}
	if o.Output == OutJSON || o.Output == OutYAML {
		return printList(out, o.Output, raw)
	}
	if len(items) == 0 {
		return noneFound(errOut, "resource types", "")
	}
	wide := o.Output == OutWide
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
			row = append(row, orNone(spec.ResyncInterval), ShortRev(typ.Revision), orNone(typ.Path), age(now, typ.CreatedAt))
		}
		t.row(row...)
	}
	return t.flush()
}

// GetSources prints the sources.
func GetSources(ctx context.Context, c *apiclient.Client, clock func() time.Time, o GetOptions, out, errOut io.Writer) error {
	raw, err := c.List(ctx, "/api/v1/sources", nil)
	if err != nil {
		return err
	}
	now := clock()
	if o.Output == OutJSON || o.Output == OutYAML {
		return printList(out, o.Output, raw)
	}
	if len(raw) == 0 {
		return noneFound(errOut, "sources", "")
	}
	items, err := apiclient.DecodeItems[wire.Source](raw)
	if err != nil {
		return err
	}
	wide := o.Output == OutWide
	header := []string{"NAME", "REVISION", "READY", "LAST-SYNC"}
	if wide {
		header = append(header, "URL", "BRANCH", "PATH", "ATTEMPTED", "ERRORS")
	}
	header = append(header, "MESSAGE")
	t := newTable(out, header...)
	for _, s := range items {
		row := []string{s.Name, sourceRevisionCell(s), readyCell(s.Conditions), agoPtr(now, s.LastSyncTime)}
		width := messageWidth
		if wide {
			width = wideMessageWidth
			row = append(row, s.URL, orNone(s.Branch), orNone(s.Path), ShortRev(s.LastAttemptedRevision), fmt.Sprint(len(s.Errors)))
		}
		t.row(append(row, truncate(sourceMessage(s), width))...)
	}
	return t.flush()
}

// phaseCell is a resource's phase for tables, marked when it is suspended. A suspended
// resource with work waiting is not reconciling: it reads "Suspended (generation 3 pending)".
func phaseCell(r wire.Resource) string {
	if !status.IsSuspended(r.Status.Conditions) {
		return r.Status.Phase
	}
	if w := status.SuspendedWork(r.Status.Phase, r.Metadata.Generation, r.Status.Conditions); w != "" {
		return "Suspended (" + w + ")"
	}
	return r.Status.Phase + " (SUSPENDED)"
}

// sourceRevisionCell is a source's applied revision for tables, marked when it is suspended
// or pinned (with the revision it holds back).
func sourceRevisionCell(s wire.Source) string {
	var marks []string
	if s.Suspended {
		marks = append(marks, "SUSPENDED")
	}
	if s.Pinned != nil {
		marks = append(marks, "PINNED")
	}
	if len(marks) == 0 {
		return ShortRev(s.Revision)
	}
	if s.PendingRevision != "" && s.PendingRevision != s.Revision {
		marks = append(marks, "pending "+ShortRev(s.PendingRevision))
	}
	return ShortRev(s.Revision) + " (" + strings.Join(marks, ", ") + ")"
}
