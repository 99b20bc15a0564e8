package main

import (
	"context"
	"errors"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/mcp"
)

func newMCPCmd(api *apiOptions) *cobra.Command {
	var operatorTools bool
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve trueup's tools to an MCP client (an assistant) over stdio",
		Long: `Speaks the Model Context Protocol on standard input and output, for an assistant or
agent that starts it (Claude Desktop, an IDE, any MCP client). Its tools read resources (list,
get, history, why), events, the dependency graph, sources, their revisions and pull-request
previews, ResourceSets, resource types and approval requests through the API (--server) with
the token of the other client commands (--token, TRUEUP_TOKEN or the context file): the
assistant sees exactly what the token sees. --operator-tools adds reconcile_resource,
suspend_resource, resume_resource, sync_source and approve_resource, which the API refuses
unless the token is an operator in the namespace. Results are the API's JSON.`,
		Example: `  trueup mcp
  trueup mcp --server https://trueup.example.com --operator-tools`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := api.client()
			if err != nil {
				return err
			}
			err = mcp.NewServer(c, mcp.Options{OperatorTools: operatorTools, Version: version}).Run(cmd.Context(), &sdk.StdioTransport{})
			if errors.Is(err, context.Canceled) {
				return nil // a signal: the client went away
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&operatorTools, "operator-tools", false, "add the tools that reconcile, suspend, resume, sync and approve")
	return cmd
}
