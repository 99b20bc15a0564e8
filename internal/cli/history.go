package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/trueup-dev/trueup/internal/apiclient"
	"github.com/trueup-dev/trueup/internal/wire"
)

// History prints at most limit reconcile attempts of one resource, newest first.
func History(ctx context.Context, c *apiclient.Client, clock func() time.Time, namespace, kind, name string, limit int, output string, out, errOut io.Writer) error {
	raw, err := c.List(ctx, apiclient.ResourcePath(namespace, kind, name)+"/history", url.Values{"limit": {fmt.Sprint(limit)}})
	if err != nil {
		return err
	}
	now := clock()
	if output != OutTable {
		return printList(out, output, raw)
	}
	if len(raw) == 0 {
		_, err := fmt.Fprintf(errOut, "No reconcile attempts recorded for %s/%s in namespace %s yet.\n", kind, name, namespace)
		return err
	}
	items, err := apiclient.DecodeItems[wire.HistoryEntry](raw)
	if err != nil {
		return err
	}
	return historyTable(now, out, "", items)
}

// historyTable prints attempts with each line starting with indent (describe nests it).
func historyTable(now time.Time, w io.Writer, indent string, items []wire.HistoryEntry) error {
	t := newTable(w, indent+"GENERATION", "REVISION", "TRIGGER", "RESULT", "DURATION", "STARTED", "MESSAGE")
	for _, h := range items {
		t.row(indent+fmt.Sprint(h.Generation), ShortRev(h.Revision), triggerCell(h), h.Result, millis(h.DurationMs),
			ago(now, h.StartedAt), truncate(h.Message, wideMessageWidth))
	}
	return t.flush()
}

// triggerCell is an attempt's trigger for tables, with who asked for a manual one.
func triggerCell(h wire.HistoryEntry) string {
	if h.Actor == "" {
		return h.Trigger
	}
	return h.Trigger + " (" + h.Actor + ")"
}
