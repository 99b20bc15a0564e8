package main

import (
	"fmt"
	"net/url"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/apiclient"
	"github.com/trueup-dev/trueup/internal/wire"
)

func newSuspendCmd(api *apiOptions) *cobra.Command { return suspendCmd(api, true) }
func newResumeCmd(api *apiOptions) *cobra.Command  { return suspendCmd(api, false) }

// suspendCmd builds `trueup suspend` and `trueup resume`: one resource, a whole source, or
// the resources matching a label selector.
func suspendCmd(api *apiOptions, suspend bool) *cobra.Command {
	var namespace, source, selector, reason string
	verb, done := "resume", "resumed"
	if suspend {
		verb, done = "suspend", "suspended"
	}
	cmd := &cobra.Command{
		Use: verb + " [KIND/NAME | --source SOURCE | -l SELECTOR]",
		Short: map[bool]string{true: "Stop reconciling a resource, a source or a selection until resumed",
			false: "Reconcile suspended resources or a suspended source again"}[suspend],
		Long: `A suspended resource keeps its desired state up to date (new commits still change its
spec and generation) but is neither reconciled, resynced nor deleted until it is resumed;
its status has the condition Suspended=True saying who suspended it and why. A suspended
source keeps polling and shows the revision it would apply (pendingRevision), but applies
nothing. Resume runs whatever became due meanwhile at once.

With -l, the selector applies in the namespace -n names, or else in every namespace you may
operate in. Needs the operator role in the namespaces concerned (for a source: in every
namespace it has resources in).`,
		Example: map[bool]string{true: `  trueup suspend DatabaseCluster/orders-pg -n production --reason "resizing by hand"
  trueup suspend --source infra --reason "release freeze"
  trueup suspend -l team=checkout -n production`, false: `  trueup resume DatabaseCluster/orders-pg -n production
  trueup resume --source infra
  trueup resume -l team=checkout`}[suspend],
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n := len(args)
			if source != "" {
				n++
			}
			if selector != "" {
				n++
			}
			if n != 1 {
				return fmt.Errorf("%s takes exactly one of KIND/NAME, --source or -l", verb)
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			body := reasonBody(reason)
			var ans wire.Command
			out := cmd.OutOrStdout()
			switch {
			case source != "":
				if err := c.Post(cmd.Context(), "/api/v1/sources/"+url.PathEscape(source)+"/"+verb, nil, body, &ans); err != nil {
					return err
				}
				_, err = fmt.Fprintf(out, "source %s %s by %s\n", source, done, ans.Actor)
				return err
			case selector != "":
				q := url.Values{"selector": {selector}}
				if namespace != "" {
					q.Set("namespace", namespace)
				}
				if err := c.Post(cmd.Context(), "/api/v1/resources/"+verb, q, body, &ans); err != nil {
					return err
				}
				if len(ans.Resources) == 0 {
					_, err = fmt.Fprintf(cmd.ErrOrStderr(), "No resources to %s match %q.\n", verb, selector)
					return err
				}
			default:
				kind, name, err := parseObjectRef(args[0])
				if err != nil {
					return err
				}
				if namespace == "" {
					namespace = "default"
				}
				if err := c.Post(cmd.Context(), apiclient.ResourcePath(namespace, kind, name)+"/"+verb, nil, body, &ans); err != nil {
					return err
				}
			}
			for _, r := range ans.Resources {
				if _, err := fmt.Fprintf(out, "%s/%s in namespace %s %s by %s\n", r.Kind, r.Name, r.Namespace, done, ans.Actor); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", `the resource's namespace ("default"); with -l, only this namespace`)
	cmd.Flags().StringVar(&source, "source", "", verb+" a whole source")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", verb+" the resources matching this label selector, e.g. team=checkout")
	if suspend {
		cmd.Flags().StringVar(&reason, "reason", "", "why (shown in the Suspended condition and the event)")
	}
	return cmd
}

// reasonBody is the body of a command with an optional reason: none without one.
func reasonBody(reason string) any {
	if reason == "" {
		return nil
	}
	return map[string]string{"reason": reason}
}
