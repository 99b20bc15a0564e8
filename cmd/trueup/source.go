package main

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/cli"
	"github.com/trueup-dev/trueup/internal/wire"
)

// newSourceCmd builds `trueup source`: commands on one source beyond sync and suspend.
func newSourceCmd(api *apiOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "source pin|unpin|history",
		Short: "Pin a source at a known-good revision, unpin it, or list the revisions it applied",
	}
	cmd.AddCommand(newSourcePinCmd(api), newSourceUnpinCmd(api), newSourceHistoryCmd(api))
	return cmd
}

func newSourcePinCmd(api *apiOptions) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "pin NAME REVISION --reason REASON",
		Short: "Apply a source's older revision and hold newer ones until unpinned",
		Long: `Pins a source at REVISION, during an incident, without a push: the source applies that
revision's desired state at once (validated and prune-guarded as a push is; a resource
deleted since comes back through its action) and keeps every newer commit as its
pendingRevision until it is unpinned. REVISION is a revision the source applied or a
prefix (at least 7 characters; for a digest, sha256: and at least 7 hex digits) of exactly
one of them (trueup source history NAME); a commit the source never applied is not one.
The reason is required: it is recorded in the source's Pinned event and shown on the
dashboard. Needs the operator role in every
namespace the source has resources in and in every namespace the revision had resources in.`,
		Example: `  trueup source history infra
  trueup source pin infra 3f2a9c1 --reason "incident 42: roll back the queue resize"`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if reason == "" {
				return errors.New("--reason is required: say why the source is pinned")
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			var pin wire.SourcePin
			if err := c.Post(cmd.Context(), "/api/v1/sources/"+url.PathEscape(args[0])+"/pin", nil,
				map[string]string{"revision": args[1], "reason": reason}, &pin); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "source %s pinned at %s by %s\n", args[0], cli.ShortRev(pin.Revision), pin.Actor)
			return err
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (required; shown in the Pinned event and on the dashboard)")
	return cmd
}

func newSourceUnpinCmd(api *apiOptions) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "unpin NAME [--reason REASON]",
		Short: "Unpin a source: it applies its newest revision at once",
		Long: `Unpins a source: its pendingRevision is cleared and the newest revision of its branch is
applied at once. Needs the operator role in every namespace the source has resources in.`,
		Example: `  trueup source unpin infra --reason "incident 42 resolved"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := api.client()
			if err != nil {
				return err
			}
			var ans wire.Command
			if err := c.Post(cmd.Context(), "/api/v1/sources/"+url.PathEscape(args[0])+"/unpin", nil, reasonBody(reason), &ans); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "source %s unpinned by %s\n", args[0], ans.Actor)
			return err
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (shown in the Unpinned event)")
	return cmd
}

func newSourceHistoryCmd(api *apiOptions) *cobra.Command {
	var output string
	var limit int
	cmd := &cobra.Command{
		Use:   "history NAME",
		Short: "List the revisions a source applied, the last applied first",
		Long: `Lists the revisions a source applied, the last applied first: REVISION AUTHOR APPLIED
CURRENT PINNED. A revision applied again (a pin, a revert) counts from then. These are the
revisions to pin the source at; the newest 100 of each source are kept whatever history's
retention.`,
		Example: `  trueup source history infra
  trueup source history infra --limit 10 -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := api.listClient(output, limit)
			if err != nil {
				return err
			}
			return cli.SourceHistory(cmd.Context(), c, clock, args[0], limit, output, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", cli.OutTable, "output format: table, json or yaml")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many revisions (1 to 1000)")
	return cmd
}
