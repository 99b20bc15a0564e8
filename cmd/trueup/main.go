// Command trueup is the GitOps reconciler for infrastructure that does not live on
// Kubernetes: `trueup serve` runs the controller, the other subcommands inspect and validate.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	// The time zones of change windows (timeZone) resolve on a machine without a zoneinfo
	// database.
	_ "time/tzdata"

	"github.com/trueup-dev/trueup/internal/cli"
	"github.com/trueup-dev/trueup/internal/termsafe"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal asks for a clean stop; once it came, a second one ends the process at
	// once (the default action of SIGINT and SIGTERM).
	go func() {
		<-ctx.Done()
		stop()
	}()
	if err := run(ctx, os.Args[1:]); err != nil {
		if code, ok := err.(exitCode); ok {
			os.Exit(int(code))
		}
		fmt.Fprintln(os.Stderr, "trueup:", termsafe.Strip(err.Error()))
		os.Exit(1)
	}
}

// exitCode ends the process with a code after the command printed its own report.
type exitCode = cli.ExitCode

func run(ctx context.Context, args []string) error {
	root := newRootCmd()
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}
