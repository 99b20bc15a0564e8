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
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/wire"
)

// describeSourceErrors is how many validation errors describe source lists.
const describeSourceErrors = 20

// DescribeSource shows one source for a human: where it reads from, the applied and the last
// attempted revision, its prune settings, its resources counted by phase, its conditions,
// the errors of a rejected revision with file:line, and its last events.
func DescribeSource(ctx context.Context, c *apiclient.Client, clock func() time.Time, name string, out io.Writer) error {
	var src wire.SourceDetail
	if err := c.Get(ctx, "/api/v1/sources/"+url.PathEscape(name), url.Values{"counts": {"true"}}, &src); err != nil {
		return err
	}
	var evs struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := c.Get(ctx, "/api/v1/events", url.Values{"source": {src.Name}, "limit": {fmt.Sprint(describeLimit)}}, &evs); err != nil {
		return err
	}
	now := clock()
	events, err := apiclient.DecodeItems[wire.Event](evs.Items)
	if err != nil {
		return err
	}

	var b bytes.Buffer
	fields := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	field := func(label, value string) { fmt.Fprintf(fields, "%s:\t%s\n", label, value) }
	field("Name", src.Name)
	field("URL", orNone(src.URL))
	field("Branch", orNone(src.Branch))
	field("Path", orNone(src.Path))
	field("Revision", orNone(ShortRev(src.Revision)))
	attempted := "<none>"
	switch {
	case src.LastAttemptedRevision == "":
	case src.LastAttemptedRevision == src.Revision:
		attempted = ShortRev(src.LastAttemptedRevision) + " (applied)"
	default:
		attempted = ShortRev(src.LastAttemptedRevision) + " (rejected)"
	}
	field("Last Attempted", attempted)
	if src.LastSyncTime != nil {
		field("Last Sync", timestamp(now, *src.LastSyncTime))
	} else {
		field("Last Sync", "<none>")
	}
	if src.HeadRevision != "" {
		field("Head", ShortRev(src.HeadRevision))
	}
	field("Holder", orNone(src.Holder))
	if src.Suspended {
		field("Suspended", "true, pending "+orNone(ShortRev(src.PendingRevision)))
	}
	if p := src.Pinned; p != nil {
		pin := ShortRev(p.Revision) + " by " + p.Actor + " " + timestamp(now, p.At) + ": " + OneLine(p.Reason)
		if src.PendingRevision != "" && !src.Suspended {
			pin += "; pending " + ShortRev(src.PendingRevision)
		}
		field("Pinned", pin)
	}
	field("Prune", pruneSettings(src.Prune))
	if r := src.Resources; r != nil {
		field("Resources", resourceCounts(*r))
	}
	if err := fields.Flush(); err != nil {
		return err
	}

	b.WriteString("Conditions:\n")
	if len(src.Conditions) == 0 {
		b.WriteString("  <none>\n")
	} else {
		t := newTable(&b, "  TYPE", "STATUS", "REASON", "AGE", "MESSAGE")
		for _, c := range src.Conditions {
			t.row("  "+c.Type, c.Status, orNone(c.Reason), age(now, c.LastTransitionTime), OneLine(c.Message))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}

	fmt.Fprintf(&b, "Errors (%d):\n", len(src.Errors))
	if len(src.Errors) == 0 {
		b.WriteString("  <none>\n")
	}
	for i, e := range src.Errors {
		if i == describeSourceErrors {
			fmt.Fprintf(&b, "  … %d more (trueup get source %s -o yaml lists them all)\n", len(src.Errors)-i, src.Name)
			break
		}
		fmt.Fprintf(&b, "  %s\n", sourceErrorText(e))
	}

	fmt.Fprintf(&b, "Events (newest first, last %d):\n", describeLimit)
	if len(events) == 0 {
		b.WriteString("  <none>\n")
	} else {
		t := newTable(&b, "  LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE")
		for _, e := range events {
			t.row("  "+ago(now, e.CreatedAt), e.Type, e.Reason, eventObject(e), OneLine(e.Message))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	_, err = b.WriteTo(out)
	return err
}

// pruneSettings spells a source's prune: block.
func pruneSettings(p wire.SourcePrune) string {
	if !p.Enabled {
		return "disabled (removed manifests are kept)"
	}
	return fmt.Sprintf("enabled, maxFraction %.2f, allowEmpty %t", p.MaxFraction, p.AllowEmpty)
}

// resourceCounts spells a source's counts: "5 (Failed 1, Ready 4), deleting 0, orphaned 0".
func resourceCounts(r wire.SourceCounts) string {
	phases := make([]string, 0, len(r.Phases))
	for p := range r.Phases {
		phases = append(phases, p)
	}
	slices.Sort(phases)
	parts := make([]string, len(phases))
	for i, p := range phases {
		parts[i] = fmt.Sprintf("%s %d", p, r.Phases[p])
	}
	s := fmt.Sprint(r.Total)
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return fmt.Sprintf("%s, deleting %d, orphaned %d", s, r.Deleting, r.Orphaned)
}

// sourceErrorText is one error of a rejected revision as the manifest loader spells it:
// "file:line: path: message".
func sourceErrorText(e wire.SourceError) string {
	return OneLine(manifest.ValidationError{File: e.File, Line: e.Line, Path: e.Path, Msg: e.Message, Origin: e.Origin}.Error())
}

// sourceMessage is what the sources table says of a source: the first error of a rejected
// revision (file:line first, so that it survives truncation), a refused prune, or the
// Ready condition's message.
func sourceMessage(s wire.Source) string {
	if len(s.Errors) > 0 {
		msg := sourceErrorText(s.Errors[0])
		if n := len(s.Errors) - 1; n > 0 {
			msg += fmt.Sprintf(" (+%d more)", n)
		}
		return msg
	}
	if c, ok := status.Get(s.Conditions, status.PruneSkipped); ok && c.Status == status.True {
		return "PruneSkipped (" + c.Reason + "): " + OneLine(c.Message)
	}
	ready, _ := status.Get(s.Conditions, status.Ready)
	return OneLine(ready.Message)
}
