package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/apiclient"
	"github.com/trueup-dev/trueup/internal/cli"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/wire"
)

func newSyncCmd(api *apiOptions) *cobra.Command {
	var wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "sync SOURCE",
		Short: "Fetch a source and apply its head now",
		Long: `Asks the replica holding the source's lease to read the source's head now and apply it
unless it is the revision applied already, as a push webhook does. A suspended source validates the head and reports it
as pending, but applies nothing. Needs the operator role in every namespace the source has
resources in.

With --wait, waits until a sync begun after the request has finished (the head read, then
applied, held back, rejected or found unchanged) and prints the revision and Ready condition, and the PruneSkipped condition when a guard refused the revision's
deletions (prune.allowEmpty, prune.maxFraction); the exit status is 1 when the source is not
Ready or shows PruneSkipped.`,
		Example: `  trueup sync infra
  trueup sync infra --wait`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			c, err := api.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var ans wire.Command
			if err := c.Post(ctx, "/api/v1/sources/"+url.PathEscape(name)+"/sync", nil, nil, &ans); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "sync of source %s requested by %s\n", name, ans.Actor)
			if !wait {
				return nil
			}
			if ans.RequestedAt.IsZero() {
				return errors.New("the API's answer has no requestedAt")
			}
			return waitSync(ctx, c, cmd.OutOrStdout(), name, ans.RequestedAt, timeout)
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the source was synced and print its revision (exit 1 when not Ready, or when a prune was refused)")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "with --wait: give up after this long")
	return cmd
}

// synced reports whether src shows a sync that began after at and is done: a revision
// applied, a state written (a failure, a held revision), or a completed sync published by the
// holder (one that found nothing new included). A poll alone is not enough: the holder
// publishes it when it reads the head, before the revision is fetched and applied.
func synced(src wire.Source, at time.Time) bool {
	after := func(t *time.Time) bool { return t != nil && !t.Before(at) }
	ready, _ := status.Get(src.Conditions, status.Ready)
	return after(src.LastSyncTime) || after(src.LastCompletedSyncTime) || (!ready.LastTransitionTime.IsZero() && !ready.LastTransitionTime.Before(at))
}

func waitSync(ctx context.Context, c *apiclient.Client, out io.Writer, name string, at time.Time, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		var src wire.Source
		err := c.Get(ctx, "/api/v1/sources/"+url.PathEscape(name), nil, &src)
		if err != nil && ctx.Err() == nil {
			return err
		}
		if err == nil && synced(src, at) {
			ready, _ := status.Get(src.Conditions, status.Ready)
			fmt.Fprintf(out, "source %s at revision %s: Ready=%s%s\n", name, cli.ShortRev(src.Revision), ready.Status, messageNote(ready.Message))
			if src.PendingRevision != "" {
				fmt.Fprintf(out, "%s: revision %s is pending\n", holder(src), cli.ShortRev(src.PendingRevision))
			}
			pruneSkipped, skipped := status.Get(src.Conditions, status.PruneSkipped)
			skipped = skipped && pruneSkipped.Status == status.True
			if skipped {
				fmt.Fprintf(out, "PruneSkipped=True (%s)%s\n", pruneSkipped.Reason, messageNote(pruneSkipped.Message))
			}
			if ready.Status == status.False || skipped {
				return exitCode(1)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("source %s was not synced within %s (is a replica holding its lease?)", name, timeout)
		case <-time.After(pollEvery):
		}
	}
}

// holder says what holds src's pendingRevision back: its pin, its suspension or both.
func holder(src wire.Source) string {
	switch {
	case src.Pinned != nil && src.Suspended:
		return "suspended, and pinned at " + cli.ShortRev(src.Pinned.Revision)
	case src.Pinned != nil:
		return "pinned at " + cli.ShortRev(src.Pinned.Revision)
	}
	return "suspended"
}
