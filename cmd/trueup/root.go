package main

import (
	"runtime"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/termsafe"
)

// Set at build time with -ldflags "-X main.version=… -X main.commit=… -X main.date=…"
// (the Makefile's build and dist targets do); a plain `go build` leaves them empty but for
// version, and `trueup version` then falls back to the VCS stamp Go writes into the binary.
var (
	version = "dev"
	commit  = ""
	date    = ""
)

// clock is what the client commands measure ages against; tests fix it.
var clock = time.Now

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
	root.AddCommand(newServeCmd(), newValidateCmd(), newConfigCmd(), newMigrateCmd(), newVersionCmd(), newTokenCmd(),
		newGetCmd(api), newDescribeCmd(api), newHistoryCmd(api), newWhyCmd(api), newEventsCmd(api), newDiffCmd(api),
		newReconcileCmd(api), newSyncCmd(api), newSuspendCmd(api), newResumeCmd(api), newDeleteCmd(api), newGraphCmd(api), newPreviewCmd(api),
		newApprovalsCmd(api), newVoteCmd(api, true), newVoteCmd(api, false), newHealthcheckCmd(), newMCPCmd(api))
	root.AddCommand(newSourceCmd(api))
	addCompletionCmd(root)
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build date",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			c, d := buildStamp()
			cmd.Printf("trueup %s\ncommit: %s\nbuilt: %s\ngo: %s %s/%s\n",
				version, c, d, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		},
	}
}

// buildStamp returns the commit and build date from -ldflags, else from the VCS settings
// `go build` records (vcs.revision, vcs.time), else "unknown".
func buildStamp() (c, d string) {
	c, d = commit, date
	if info, ok := debug.ReadBuildInfo(); ok && (c == "" || d == "") {
		modified := false
		var rev, at string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if c == "" && rev != "" {
			c = rev
			if modified {
				c += "-dirty"
			}
		}
		if d == "" {
			d = at
		}
	}
	if c == "" {
		c = "unknown"
	}
	if d == "" {
		d = "unknown"
	}
	return c, d
}
