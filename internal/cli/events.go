package cli

import (
	"context"
	"io"
	"net/url"
	"time"

	"github.com/trueup-dev/trueup/internal/apiclient"
	"github.com/trueup-dev/trueup/internal/wire"
)

// Events prints the events q selects, newest first; without a namespace in q, a NAMESPACE
// column comes first.
func Events(ctx context.Context, c *apiclient.Client, clock func() time.Time, q url.Values, output string, out, errOut io.Writer) error {
	raw, err := c.List(ctx, "/api/v1/events", q)
	if err != nil {
		return err
	}
	now := clock()
	if output != OutTable {
		return printList(out, output, raw)
	}
	namespace := q.Get("namespace")
	if len(raw) == 0 {
		return noneFound(errOut, "events", namespace)
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
	t := newTable(out, header...)
	for _, e := range items {
		row := []string{ago(now, e.CreatedAt), e.Type, e.Reason, eventObject(e), truncate(e.Message, wideMessageWidth)}
		if all {
			row = append([]string{e.Namespace}, row...)
		}
		t.row(row...)
	}
	return t.flush()
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
