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
	"github.com/trueup-dev/trueup/internal/wire"
)

// pollEvery is how often --wait reads the API.
const pollEvery = 300 * time.Millisecond

func newReconcileCmd(api *apiOptions) *cobra.Command {
	var namespace string
	var wait, override bool
	var reason string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "reconcile KIND/NAME",
		Short: "Reconcile a resource now, skipping any backoff",
		Long: `Asks trueup to reconcile one resource now: it runs at once, skipping the backoff of a
failing resource, and a Stalled resource runs too. The attempt is recorded in history with
trigger "manual" and your identity. A suspended resource is refused (resume it first).
Needs the operator role in the resource's namespace.

With --override-window, the attempt proceeds although a change window holds the resource,
when that window allows operators (refused otherwise); --reason is required, and the actor
and reason are kept in the resource's events and history.

With --wait, waits for the attempt to finish and prints its result; the exit status is 1
when it failed.`,
		Example: `  trueup reconcile DatabaseCluster/orders-pg -n production
  trueup reconcile bucket/build-cache --wait
  trueup reconcile DatabaseCluster/orders-pg -n production --override-window --reason "hotfix INC-42"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if override && reason == "" {
				return errors.New("--reason is required with --override-window: it is recorded in the resource's events and history")
			}
			if reason != "" && !override {
				return errors.New("--reason goes with --override-window")
			}
			c, kind, name, err := api.forResource(args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var last int64
			if wait {
				if last, err = newestAttempt(ctx, c, namespace, kind, name); err != nil {
					return err
				}
			}
			var body any
			if override {
				body = map[string]any{"overrideWindow": true, "reason": reason}
			}
			var ans wire.Command
			if err := c.Post(ctx, apiclient.ResourcePath(namespace, kind, name)+"/reconcile", nil, body, &ans); err != nil {
				return err
			}
			if len(ans.Resources) == 1 {
				kind = ans.Resources[0].Kind
			}
			note := ""
			if ans.OverrideWindow {
				note = ", overriding the change windows"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "reconcile of %s/%s in namespace %s requested by %s%s\n", kind, name, namespace, ans.Actor, note)
			if !wait {
				return nil
			}
			return waitAttempt(ctx, c, cmd.OutOrStdout(), namespace, kind, name, last, timeout)
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "the resource's namespace")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the attempt to finish and print its result (exit 1 when it failed)")
	cmd.Flags().BoolVar(&override, "override-window", false, "apply although a change window holds the resource (needs --reason)")
	cmd.Flags().StringVar(&reason, "reason", "", "with --override-window: why (kept in the resource's events and history)")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "with --wait: give up after this long")
	return cmd
}

// newestAttempt is the id of the resource's newest history row (0 when none).
func newestAttempt(ctx context.Context, c *apiclient.Client, namespace, kind, name string) (int64, error) {
	raw, err := c.List(ctx, apiclient.ResourcePath(namespace, kind, name)+"/history", url.Values{"limit": {"1"}})
	if err != nil && !apiclient.IsNotFound(err) {
		return 0, err
	}
	items, err := apiclient.DecodeItems[wire.HistoryEntry](raw)
	if err != nil || len(items) == 0 {
		return 0, err
	}
	return items[0].ID, nil
}

// waitAttempt polls the resource's history for the manual attempt recorded after row after,
// and, when that attempt left the action in progress, for the first later attempt that
// finished; it prints the result and fails on Failed or Stalled.
func waitAttempt(ctx context.Context, c *apiclient.Client, out io.Writer, namespace, kind, name string, after int64, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var manual int64 // the manual attempt's id, once seen
	for {
		raw, err := c.List(ctx, apiclient.ResourcePath(namespace, kind, name)+"/history", url.Values{"limit": {"50"}})
		if err != nil && ctx.Err() == nil {
			return err
		}
		items, _ := apiclient.DecodeItems[wire.HistoryEntry](raw)
		// Oldest first: the manual attempt, then whatever followed it.
		for i := len(items) - 1; i >= 0; i-- {
			h := items[i]
			if h.ID <= after || (manual == 0 && h.Trigger != "manual") || (manual != 0 && h.ID <= manual) {
				continue
			}
			if manual == 0 {
				manual = h.ID
			}
			if h.Result == "InProgress" {
				fmt.Fprintf(out, "%s: in progress: %s\n", h.Trigger, cli.OneLine(h.Message))
				after = h.ID
				continue
			}
			fmt.Fprintf(out, "%s after %s (generation %d, trigger %s%s)%s\n", h.Result, time.Duration(h.DurationMs)*time.Millisecond,
				h.Generation, h.Trigger, actorNote(h.Actor), messageNote(h.Message))
			if h.Result == "Failed" || h.Result == "Stalled" {
				return exitCode(1)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			if context.Cause(ctx) == context.DeadlineExceeded {
				return fmt.Errorf("no finished attempt of %s/%s within %s", kind, name, timeout)
			}
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

func actorNote(actor string) string {
	if actor == "" {
		return ""
	}
	return " by " + actor
}

func messageNote(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + cli.OneLine(msg)
}
