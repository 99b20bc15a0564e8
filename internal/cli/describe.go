package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/trueup-dev/trueup/internal/apiclient"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/wire"
)

// describeLimit is how many history entries and events describe shows.
const describeLimit = 10

// Describe shows one resource for a human: metadata, spec, status, conditions, outputs, its
// last reconcile attempts and events.
func Describe(ctx context.Context, c *apiclient.Client, clock func() time.Time, namespace, kind, name string, out io.Writer) error {
	r, err := c.GetResource(ctx, namespace, kind, name)
	if err != nil {
		return err
	}
	limit := url.Values{"limit": {fmt.Sprint(describeLimit)}}
	base := apiclient.ResourcePath(r.Metadata.Namespace, r.Kind, r.Metadata.Name)
	var hist, evs struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := c.Get(ctx, base+"/history", limit, &hist); err != nil {
		return err
	}
	if err := c.Get(ctx, base+"/events", limit, &evs); err != nil {
		return err
	}
	now := clock()
	history, err := apiclient.DecodeItems[wire.HistoryEntry](hist.Items)
	if err != nil {
		return err
	}
	events, err := apiclient.DecodeItems[wire.Event](evs.Items)
	if err != nil {
		return err
	}

	var b bytes.Buffer
	fields := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	field := func(label string, values ...string) {
		if len(values) == 0 {
			values = []string{"<none>"}
		}
		fmt.Fprintf(fields, "%s:\t%s\n", label, values[0])
		for _, v := range values[1:] {
			fmt.Fprintf(fields, "\t%s\n", v)
		}
	}
	m := r.Metadata
	field("Name", m.Name)
	field("Namespace", m.Namespace)
	field("Kind", r.Kind)
	field("API Version", r.APIVersion)
	field("UID", m.UID)
	field("Labels", pairs(m.Labels)...)
	field("Annotations", pairs(m.Annotations)...)
	field("Generation", fmt.Sprint(m.Generation))
	field("Created", timestamp(now, m.CreationTimestamp))
	if m.DeletionTimestamp != nil {
		field("Deletion Requested", timestamp(now, *m.DeletionTimestamp))
	}
	field("Source", sourceRef(r.Source))
	if r.Source.ResourceSet != "" {
		field("ResourceSet", r.Source.ResourceSet)
	}
	if err := fields.Flush(); err != nil {
		return err
	}

	b.WriteString("Spec:\n")
	if err := writeYAML(&b, r.Spec, "  "); err != nil {
		return fmt.Errorf("spec: %w", err)
	}

	b.WriteString("Status:\n")
	st := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	fmt.Fprintf(st, "  Phase:\t%s\n", orNone(r.Status.Phase))
	fmt.Fprintf(st, "  Observed Generation:\t%d\n", r.Status.ObservedGeneration)
	if r.Status.LastReconcileTime != nil {
		fmt.Fprintf(st, "  Last Reconcile:\t%s\n", timestamp(now, *r.Status.LastReconcileTime))
	} else {
		fmt.Fprintf(st, "  Last Reconcile:\t<none>\n")
	}
	if c, ok := status.Get(r.Status.Conditions, status.Reconciling); ok && c.Reason == status.ReasonRetrying {
		fmt.Fprintf(st, "  Next Retry:\t%s\n", nextRetry(now, r))
	}
	msg := strings.Split(strings.TrimRight(r.Status.Message, "\n"), "\n")
	fmt.Fprintf(st, "  Message:\t%s\n", orNone(msg[0]))
	if err := st.Flush(); err != nil {
		return err
	}
	for _, l := range msg[1:] {
		fmt.Fprintf(&b, "    %s\n", l)
	}

	b.WriteString("Conditions:\n")
	if len(r.Status.Conditions) == 0 {
		b.WriteString("  <none>\n")
	} else {
		t := newTable(&b, "  TYPE", "STATUS", "REASON", "AGE", "MESSAGE")
		for _, c := range r.Status.Conditions {
			t.row("  "+c.Type, c.Status, orNone(c.Reason), age(now, c.LastTransitionTime), c.Message)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}

	b.WriteString("Outputs:\n")
	if err := writeYAML(&b, r.Status.Outputs, "  "); err != nil {
		return fmt.Errorf("outputs: %w", err)
	}

	if r.Approval != nil {
		describeApproval(&b, now, r.Approval)
	}

	fmt.Fprintf(&b, "History (newest first, last %d):\n", describeLimit)
	if len(history) == 0 {
		b.WriteString("  <none>\n")
	} else if err := historyTable(now, &b, "  ", history); err != nil {
		return err
	}

	fmt.Fprintf(&b, "Events (newest first, last %d):\n", describeLimit)
	if len(events) == 0 {
		b.WriteString("  <none>\n")
	} else {
		t := newTable(&b, "  LAST SEEN", "TYPE", "REASON", "MESSAGE")
		for _, e := range events {
			t.row("  "+ago(now, e.CreatedAt), e.Type, e.Reason, e.Message)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	_, err = b.WriteTo(out)
	return err
}

// nextRetry says when a resource retrying after a failure is taken up again: the time and
// how long until then, or why it is not. The API leaves the time out while a replica works on
// the resource (and while it is suspended or blocked: status.NextReconcile decides).
func nextRetry(now time.Time, r wire.Resource) string {
	switch t := r.Status.NextReconcileTime; {
	case status.IsSuspended(r.Status.Conditions):
		return "<none> (suspended: trueup resume runs it)"
	case t == nil && dependentsPending(r.Status.Conditions):
		return "<none> (waiting for its dependents to be deleted)"
	case t == nil:
		return "running now"
	case !t.After(now):
		return t.UTC().Format(time.RFC3339) + " (due)"
	default:
		return t.UTC().Format(time.RFC3339) + " (in " + humanDuration(t.Sub(now)) + ")"
	}
}

// pairs lists a map as k=v lines in key order.
func pairs(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k + "=" + m[k]
	}
	return out
}

// sourceRef says where a manifest came from: "infra dbs/orders.yaml:3@3f2a9c1d7e4b".
func sourceRef(s wire.ResourceSource) string {
	where := s.Path
	if s.Line > 0 {
		where += fmt.Sprintf(":%d", s.Line)
	}
	if s.Revision != "" {
		where += "@" + ShortRev(s.Revision)
	}
	return strings.TrimSpace(s.Name + " " + where)
}

// writeYAML writes a JSON value as indented YAML; an empty object or null shows as <none>.
func writeYAML(w io.Writer, doc json.RawMessage, indent string) error {
	trimmed := bytes.TrimSpace(doc)
	if len(trimmed) == 0 || string(trimmed) == "null" || string(trimmed) == "{}" {
		_, err := fmt.Fprintf(w, "%s<none>\n", indent)
		return err
	}
	y, err := jsonToYAML(trimmed)
	if err != nil {
		return err
	}
	for _, l := range strings.Split(strings.TrimRight(string(y), "\n"), "\n") {
		if _, err := fmt.Fprintf(w, "%s%s\n", indent, l); err != nil {
			return err
		}
	}
	return nil
}

// dependentsPending says a delete waits for the resources that depend on this one.
func dependentsPending(conds []status.Condition) bool {
	c, ok := status.Get(conds, status.DependentsDeleted)
	return ok && c.Status == status.False
}
