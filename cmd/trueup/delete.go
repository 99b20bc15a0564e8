package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/apiclient"
	"github.com/trueup-dev/trueup/internal/wire"
)

func newDeleteCmd(api *apiOptions) *cobra.Command {
	var namespace, reason string
	var abandon bool
	cmd := &cobra.Command{
		Use:   "delete NAMESPACE/KIND/NAME --abandon --reason REASON",
		Short: "Forget a removed resource whose delete can never succeed, without calling its action",
		Long: `Resources are deleted by removing their manifest from Git: trueup then calls the action's
delete, at the revision the resource was last applied at, and retries it with backoff until it
succeeds. When it never can (the external system is gone, the action was removed, the module
cannot be read at any revision), --abandon forgets the resource without calling its action:
the resource goes at once, and what the action created, and the action's own state (a
Terraform workspace), are left as they are, to be cleaned up by hand. A call in flight is
stopped and its result discarded. Resources that depend on it see it missing.

Only a resource whose manifest was removed (being deleted, or orphaned by a source that does
not prune) can be abandoned: one still in Git is refused, since the next sync would bring it
back. The reason is required; the resource's history and events record the abandon with your
identity and the reason, and an Abandoned notification is sent. Needs the operator role in the
resource's namespace (or admin).`,
		Example: `  trueup delete production/DatabaseCluster/orders-pg --abandon --reason "cluster deleted by hand"
  trueup delete Bucket/build-cache -n ci --abandon --reason "account closed"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !abandon {
				return errors.New("trueup deletes a resource when its manifest is removed from Git; " +
					"delete --abandon forgets a removed resource whose delete can never succeed")
			}
			if strings.TrimSpace(reason) == "" {
				return errors.New("--reason is required: it is recorded in the resource's history and events")
			}
			ns, kind, name, err := parseNamespacedRef(args[0], namespace)
			if err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			var ans wire.Command
			if err := c.Post(cmd.Context(), apiclient.ResourcePath(ns, kind, name)+"/abandon", nil,
				map[string]string{"reason": reason}, &ans); err != nil {
				return err
			}
			if len(ans.Resources) == 1 {
				kind = ans.Resources[0].Kind
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s/%s in namespace %s abandoned by %s (its action was not called)\n", kind, name, ns, ans.Actor)
			return err
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", `the resource's namespace, for KIND/NAME ("default")`)
	cmd.Flags().BoolVar(&abandon, "abandon", false, "forget the resource without calling its action (required)")
	cmd.Flags().StringVar(&reason, "reason", "", "why (required; recorded in history and events)")
	return cmd
}

// parseNamespacedRef reads NAMESPACE/KIND/NAME, or KIND/NAME in namespace (default "default").
func parseNamespacedRef(s, namespace string) (ns, kind, name string, err error) {
	if parts := strings.Split(s, "/"); len(parts) == 3 {
		if parts[0] == "" || parts[1] == "" || parts[2] == "" {
			return "", "", "", fmt.Errorf("%q: want NAMESPACE/KIND/NAME or KIND/NAME", s)
		}
		if namespace != "" && namespace != parts[0] {
			return "", "", "", fmt.Errorf("%q names namespace %s, -n says %s", s, parts[0], namespace)
		}
		return parts[0], parts[1], parts[2], nil
	}
	kind, name, err = parseObjectRef(s)
	if err != nil {
		return "", "", "", fmt.Errorf("%q: want NAMESPACE/KIND/NAME or KIND/NAME", s)
	}
	if namespace == "" {
		namespace = "default"
	}
	return namespace, kind, name, nil
}
