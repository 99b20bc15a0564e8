package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/auth"
	"github.com/trueup-dev/trueup/internal/config"
)

func newTokenCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage bearer tokens for the API (auth.tokens in the controller config)",
	}
	cmd.AddCommand(newTokenCreateCmd())
	return cmd
}

// tokenAfterword is what token create says after the config snippet: auth: is read at start
// only (a reload refuses a changed auth: block), and an auth: block turns anonymous access off.
const tokenAfterword = `Then restart trueup: auth: is read only at start, and a reload (SIGHUP or
POST /api/v1/admin/reload) refuses a changed auth: block. Once auth: exists, callers without a
token get 401 unless auth.anonymous gives them a role (e.g. anonymous: viewer).
`

func newTokenCreateCmd() *cobra.Command {
	var role string
	var namespaces []string
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Print a new random token once, and the auth.tokens line that accepts it",
		Long: "Print a new random bearer token and the line to add under auth.tokens in the controller config.\n" +
			"trueup keeps only the token's SHA-256, so the token is shown this once: store it now (TRUEUP_TOKEN,\n" +
			"--token, or token: in ~/.config/trueup/config.yaml). Nothing is sent to a server; the controller\n" +
			"accepts the token after a restart (auth: is not reloaded).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(namespaces) == 0 {
				namespaces = []string{auth.AllNamespaces}
			}
			tok, sum := auth.NewToken()
			line := auth.TokenLine(args[0], sum, auth.Role(role), namespaces)
			// The line must work when pasted: check it as the controller will.
			if _, err := config.Parse([]byte("auth:\n  tokens:\n    "+line+"\n"), ".", func(string) string { return "" }); err != nil {
				return fmt.Errorf("token %s: %s", args[0], strings.ReplaceAll(err.Error(), "auth.tokens[0].", "--"))
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Token %s (shown once, store it now):\n\n    %s\n\n", args[0], tok)
			fmt.Fprintf(out, "Add it under auth.tokens in the controller config (create the auth: block if there is none):\n\n"+
				"    auth:\n      tokens:\n        %s\n\n", line)
			fmt.Fprint(out, tokenAfterword)
			return nil
		},
	}
	cmd.Flags().StringVar(&role, "role", string(auth.Viewer), "role of the token: viewer, operator or admin")
	cmd.Flags().StringSliceVarP(&namespaces, "namespace", "n", nil, `namespaces the token may see and act in (repeat or comma-separate; default "*", every namespace)`)
	return cmd
}
