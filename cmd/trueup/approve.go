package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/cli"
)

// parseGatedRef reads NS/KIND/NAME, or KIND/NAME in namespace.
func parseGatedRef(ref, namespace string) (ns, kind, name string, err error) {
	parts := strings.Split(ref, "/")
	switch {
	case len(parts) == 3 && parts[0] != "" && parts[1] != "" && parts[2] != "":
		return parts[0], parts[1], parts[2], nil
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return namespace, parts[0], parts[1], nil
	}
	return "", "", "", fmt.Errorf("%q: want NAMESPACE/KIND/NAME (or KIND/NAME with -n), e.g. production/Database/orders", ref)
}

func newVoteCmd(api *apiOptions, approve bool) *cobra.Command {
	var namespace, reason string
	cmd := &cobra.Command{
		Use:   "approve NAMESPACE/KIND/NAME",
		Short: "Approve the change a resource waits for under a policy",
		Long: `Approves the change a policy holds back (trueup approvals lists them). The command reads
the waiting change first and sends its plan hash: when the plan changed meanwhile, the
approval is refused and nothing is recorded. It prints the plan it approved, what the
policies ask for and the votes given. The approval binds to the resource's generation and
the plan, and lapses after approvalTTL; once every waiting policy has the approvals it asks
for, trueup applies exactly that plan.

Who may approve is the policy's to say (approvals.from: an OpenID Connect group or a
token's name; with notAuthor, not the commit's author), not the role; the namespace must
be visible to the caller.`,
		Example: `  trueup approve production/Database/orders --reason "DBA reviewed the replacement"
  trueup approve Database/orders -n production`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, kind, name, err := parseGatedRef(args[0], namespace)
			if err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			return cli.Vote(cmd.Context(), c, ns, kind, name, approve, reason, cmd.OutOrStdout())
		},
	}
	if !approve {
		cmd.Use = "reject NAMESPACE/KIND/NAME"
		cmd.Short = "Reject the change a resource waits for under a policy"
		cmd.Long = `Rejects the change a policy holds back (trueup approvals lists them): the resource is
Stalled (condition Approved=False, reason Rejected) and its action is not called until its
spec or its plan changes. The command reads the waiting change first and sends its plan
hash: when the plan changed meanwhile, the rejection is refused and nothing is recorded.

Who may reject is who may approve: the policy's approvals.from (an OpenID Connect group or
a token's name; with notAuthor, not the commit's author); the namespace must be visible to
the caller.`
		cmd.Example = `  trueup reject production/Database/orders --reason "replaces the primary during business hours"`
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "the resource's namespace, when the reference is KIND/NAME")
	cmd.Flags().StringVar(&reason, "reason", "", "why; shown with the vote and in its event (at most 1024 bytes)")
	return cmd
}

func newApprovalsCmd(api *apiOptions) *cobra.Command {
	var namespace, output string
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List the changes that wait for approval",
		Long: `Lists the changes policies hold for approval, oldest first: RESOURCE STATE POLICY REQUIRES PLAN
VOTES AGE. STATE is pending (rejected and denied changes show in trueup get and describe, and in
the API with GET /api/v1/approvals?state=rejected or denied); REQUIRES says whose approvals
each waiting policy asks for; PLAN is the plan's hash and summary. trueup describe shows the
plan's text; trueup approve and trueup reject vote on it. Only the namespaces the caller
sees are listed.`,
		Example: `  trueup approvals
  trueup approvals -n production -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cli.CheckOutput(output, cli.OutTable, cli.OutJSON, cli.OutYAML); err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			return cli.Approvals(cmd.Context(), c, clock, namespace, output, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "only this namespace (default: every namespace you see)")
	cmd.Flags().StringVarP(&output, "output", "o", cli.OutTable, "output format: table, json or yaml")
	return cmd
}
