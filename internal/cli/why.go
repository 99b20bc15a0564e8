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
	"github.com/trueup-dev/trueup/internal/wire"
)

// Why prints what holds a resource back ("Blocked by:", numbered, the reason expected to end
// last first) and its timeline, one line per entry, oldest first; or the API's answer as
// JSON or YAML.
func Why(ctx context.Context, c *apiclient.Client, clock func() time.Time, namespace, kind, name string, limit int, output string, out io.Writer) error {
	var raw json.RawMessage
	if err := c.Get(ctx, apiclient.ResourcePath(namespace, kind, name)+"/timeline", url.Values{"limit": {fmt.Sprint(limit)}}, &raw); err != nil {
		return err
	}
	if output != OutTable {
		return printDoc(out, output, raw)
	}
	var tl wire.Timeline
	if err := json.Unmarshal(raw, &tl); err != nil {
		return err
	}
	now := clock()
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s in namespace %s: %s\n", tl.Resource.Kind, tl.Resource.Name, tl.Resource.Namespace, orNone(tl.Phase))
	if len(tl.Blocking) == 0 {
		b.WriteString("Blocked by: nothing\n")
	} else {
		b.WriteString("Blocked by:\n")
	}
	for i, bl := range tl.Blocking {
		fmt.Fprintf(&b, "  %d. %s: %s", i+1, bl.Reason, OneLine(bl.Message))
		if bl.Until != nil {
			fmt.Fprintf(&b, " (expected to end %s, in %s)", bl.Until.Format(time.RFC3339), humanDuration(bl.Until.Sub(now)))
		}
		b.WriteString("\n")
	}
	b.WriteString("Timeline:\n")
	if len(tl.Entries) == 0 {
		b.WriteString("  nothing recorded\n")
	}
	for _, e := range tl.Entries {
		line := e.Time.Format(time.RFC3339) + "  " + e.Kind + "  " + e.Reason
		if e.Result != "" {
			line += " " + e.Result
		}
		if e.Actor != "" {
			line += " by " + e.Actor
		}
		if e.Revision != "" {
			line += " at " + ShortRev(e.Revision)
		}
		if e.Message != "" {
			line += ": " + truncate(OneLine(e.Message), wideMessageWidth)
		}
		b.WriteString("  " + line + "\n")
	}
	_, err := io.WriteString(out, b.String())
	return err
}
