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
	items, done, err := listItems[wire.HistoryEntry](ctx, c, apiclient.ResourcePath(namespace, kind, name)+"/history", limit, output, out)
	if done || err != nil {
		return err
	}
	if len(items) == 0 {
		_, err := fmt.Fprintf(errOut, "No reconcile attempts recorded for %s/%s in namespace %s yet.\n", kind, name, namespace)
		return err
	}
	return historyTable(clock(), out, "", items)
}

// listItems reads at most limit items of the list at path: printed as they came (done) when
// output is not a table, else decoded for the caller's table.
func listItems[T any](ctx context.Context, c *apiclient.Client, path string, limit int, output string, out io.Writer) (items []T, done bool, err error) {
	raw, err := c.List(ctx, path, url.Values{"limit": {fmt.Sprint(limit)}})
	if err != nil {
		return nil, false, err
	}
	if output != OutTable {
		return nil, true, printList(out, output, raw)
	}
	items, err = apiclient.DecodeItems[T](raw)
	return items, false, err
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
