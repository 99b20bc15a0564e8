package main

import (
	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/termsafe"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "trueup",
		Short:         "GitOps reconciler for infrastructure that does not live on Kubernetes",
		SilenceUsage:  true,
		SilenceErrors: true,
		// What the CLI prints comes partly from elsewhere (plugin messages, file names, a
		// server's errors): escape sequences in it must not drive the terminal.
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			root := cmd.Root()
			root.SetOut(termsafe.Writer(root.OutOrStdout()))
			root.SetErr(termsafe.Writer(root.ErrOrStderr()))
		},
	}
	api := &apiOptions{serverChanged: func() bool { return root.PersistentFlags().Changed("server") }}
	root.PersistentFlags().StringVar(&api.server, "server", serverDefault(),
		"URL of the trueup API the client commands talk to (env TRUEUP_SERVER, or server: in ~/.config/trueup/config.yaml)")
	root.PersistentFlags().StringVar(&api.token, "token", "",
		"bearer token for the API (env TRUEUP_TOKEN, or token: in ~/.config/trueup/config.yaml)")
	root.AddCommand(newServeCmd(), newValidateCmd(), newMigrateCmd(), newVersionCmd(), newTokenCmd(),
		newGetCmd(api), newDescribeCmd(api), newHistoryCmd(api), newEventsCmd(api), newDiffCmd(api),
		newReconcileCmd(api), newSyncCmd(api), newSuspendCmd(api), newResumeCmd(api), newGraphCmd(api), newPreviewCmd(api))
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			cmd.Println("trueup", version)
		},
	}
}
