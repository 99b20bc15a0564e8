package main

import (
	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "trueup",
		Short:         "GitOps reconciler for infrastructure that does not live on Kubernetes",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	api := &apiOptions{serverChanged: func() bool { return root.PersistentFlags().Changed("server") }}
	root.PersistentFlags().StringVar(&api.server, "server", serverDefault(),
		"URL of the trueup API that get, describe, history, events and diff read (env TRUEUP_SERVER, or server: in ~/.config/trueup/config.yaml)")
	root.PersistentFlags().StringVar(&api.token, "token", "",
		"bearer token for the API (env TRUEUP_TOKEN, or token: in ~/.config/trueup/config.yaml)")
	root.AddCommand(newServeCmd(), newValidateCmd(), newMigrateCmd(), newVersionCmd(), newTokenCmd(),
		newGetCmd(api), newDescribeCmd(api), newHistoryCmd(api), newEventsCmd(api), newDiffCmd(api))
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
