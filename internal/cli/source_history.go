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

// SourceHistory prints at most limit revisions source applied, the last applied first.
func SourceHistory(ctx context.Context, c *apiclient.Client, clock func() time.Time, source string, limit int, output string, out, errOut io.Writer) error {
	items, done, err := listItems[wire.SourceRevision](ctx, c, "/api/v1/sources/"+url.PathEscape(source)+"/revisions", limit, output, out)
	if done || err != nil {
		return err
	}
	if len(items) == 0 {
		_, err := fmt.Fprintf(errOut, "Source %s has applied no revision yet.\n", source)
		return err
	}
	now := clock()
	t := newTable(out, "REVISION", "AUTHOR", "APPLIED", "CURRENT", "PINNED")
	for _, r := range items {
		author := r.AuthorName
		if r.AuthorEmail != "" {
			author += " <" + r.AuthorEmail + ">"
		}
		t.row(ShortRev(r.Revision), orNone(author), ago(now, r.AppliedAt), fmt.Sprint(r.Current), fmt.Sprint(r.Pinned))
	}
	return t.flush()
}
