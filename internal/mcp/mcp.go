// Package mcp serves trueup to Model Context Protocol clients (assistants and agents) with the
// official Go SDK (DESIGN §9, "MCP"): tools that read resources, their history, events, "why"
// and graph, sources, their revisions and previews, and, when enabled, operator tools. Every
// tool is one or two calls of trueup's HTTP API through a Backend (internal/apiclient), so a
// caller sees and may do exactly what its credentials allow there, and results are the API's
// JSON, scrubbed by it. `trueup mcp` serves it over stdio; `trueup serve` at /mcp (Handler).
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Backend is trueup's HTTP API as the tools call it; *apiclient.Client is one.
type Backend interface {
	// Get decodes the JSON answer of GET path?query into v.
	Get(ctx context.Context, path string, query url.Values, v any) error
	// Post sends body as JSON to path?query and decodes the answer into v.
	Post(ctx context.Context, path string, query url.Values, body, v any) error
}

// Options shape the server.
type Options struct {
	// OperatorTools adds the tools that change things (reconcile, suspend, resume, sync,
	// approve); the API still refuses them to a caller who is not an operator there.
	OperatorTools bool
	// Version is trueup's version, told to clients.
	Version string
}

// instructions tell a client's model what the server is for.
const instructions = `trueup reconciles resources declared in Git (manifests of kinds its ResourceTypes define) ` +
	`into real infrastructure through actions. A resource is named by namespace, kind and name. Use list_resources ` +
	`to find resources, get_resource for one, why_resource for what holds it back and its timeline, ` +
	`resource_history and list_events for what happened. Results are the JSON of trueup's HTTP API; ` +
	`what is outside the caller's namespaces is answered as not found.`

// NewServer returns an MCP server whose tools call b.
func NewServer(b Backend, o Options) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "trueup", Title: "trueup", Version: o.Version},
		&sdk.ServerOptions{Instructions: instructions})
	for _, t := range readTools {
		t.add(s, b)
	}
	if o.OperatorTools {
		for _, t := range operatorTools {
			t.add(s, b)
		}
	}
	return s
}

// tool is one tool: its description and what it does with a Backend.
type tool interface {
	add(s *sdk.Server, b Backend)
	toolName() string
}

// call is a tool whose input is In: run validates it and calls the API.
type call[In any] struct {
	name, title, desc string
	write             bool
	run               func(ctx context.Context, b Backend, in In) (json.RawMessage, error)
}

func (c call[In]) add(s *sdk.Server, b Backend) {
	// A write leaves destructiveHint unset (true): a reconcile may run a resource's deletion.
	a := &sdk.ToolAnnotations{Title: c.title, ReadOnlyHint: !c.write, IdempotentHint: !c.write}
	t := &sdk.Tool{Name: c.name, Title: c.title, Description: c.desc, Annotations: a}
	sdk.AddTool(s, t, func(ctx context.Context, _ *sdk.CallToolRequest, in In) (*sdk.CallToolResult, any, error) {
		raw, err := c.run(ctx, b, in)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", c.name, err)
		}
		var out bytes.Buffer
		if err := json.Compact(&out, raw); err != nil {
			return nil, nil, fmt.Errorf("%s: the API answered with invalid JSON: %w", c.name, err)
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: out.String()}}}, nil, nil
	})
}

// get is GET path?query's answer as it came.
func get(ctx context.Context, b Backend, path string, q url.Values) (json.RawMessage, error) {
	var raw json.RawMessage
	err := b.Get(ctx, path, q, &raw)
	return raw, err
}

// post is POST path's answer to body as it came.
func post(ctx context.Context, b Backend, path string, body any) (json.RawMessage, error) {
	var raw json.RawMessage
	err := b.Post(ctx, path, nil, body, &raw)
	return raw, err
}

func (c call[In]) toolName() string { return c.name }
