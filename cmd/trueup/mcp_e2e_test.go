package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/internal/mcp/mcptest"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

// bearerTransport sends a bearer token with every request.
type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPEndToEnd: an MCP client (the SDK's) reaches a real `trueup serve` through `trueup mcp`
// over stdio, and at /mcp over streamable HTTP with a bearer token. Either way a token of
// namespace staging sees staging only; the operator tools are absent unless enabled, refused
// to a viewer and done for an operator.
func TestMCPEndToEnd(t *testing.T) {
	t.Parallel()
	reader, readerLine := createToken(t, "reader", "--role", "viewer")
	viewer, viewerLine := createToken(t, "staging-viewer", "--role", "viewer", "-n", "staging")
	operator, operatorLine := createToken(t, "staging-operator", "--role", "operator", "-n", "staging")
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "infra", "types.yaml"), manifesttest.TypeDoc("Queue", "mq.example.com", "{type: object}", "run"))
	writeTestFile(t, filepath.Join(dir, "infra", "queues.yaml"), "apiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: stg-a, namespace: staging}\nspec: {}\n"+
		"---\napiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: prd-a, namespace: production}\nspec: {}\n")
	addr := freeAddr(t)
	logs, wait := serveProcess(t, fmt.Sprintf("server: {listen: %q, mcp: true, mcpOperatorTools: true}\nauth:\n  tokens:\n    %s\n    %s\n    %s\n"+
		"sources:\n  - name: infra\n    dir: {path: %s}\nactions:\n  - name: run\n    type: noop\n",
		addr, readerLine, viewerLine, operatorLine, filepath.Join(dir, "infra")), "TRUEUP_DATABASE_URL="+pgtest.NewDatabase(t, store.MigrateURL))
	defer func() {
		if err := wait(true); err != nil {
			t.Errorf("serve: %v\n%s", err, logs.String())
		}
	}()
	base := "http://" + addr
	// Both resources synced: the reader sees them.
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var list struct{ Items []json.RawMessage }
		req, _ := http.NewRequest("GET", base+"/api/v1/resources", nil)
		req.Header.Set("Authorization", "Bearer "+reader)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&list)
			resp.Body.Close()
		}
		if len(list.Items) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the resources were not synced:\n%s", logs.String())
		}
	}

	client := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil)
	stdio := func(token string, operatorTools bool) *sdk.ClientSession {
		args := []string{"mcp", "--server", base}
		if operatorTools {
			args = append(args, "--operator-tools")
		}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "TRUEUP_TEST_RUN_MAIN=1", "TRUEUP_TOKEN="+token, "XDG_CONFIG_HOME="+t.TempDir())
		cmd.Stderr = os.Stderr
		cs, err := client.Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("trueup mcp: %v", err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	streamable := func(token string, _ bool) *sdk.ClientSession {
		cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: base + "/mcp",
			HTTPClient: &http.Client{Transport: bearerTransport(token)}, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatalf("/mcp: %v", err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	for _, tr := range []struct {
		name string
		open func(token string, operatorTools bool) *sdk.ClientSession
	}{{"stdio", stdio}, {"streamable HTTP", streamable}} {
		// The stdio server lists operator tools only with --operator-tools; /mcp has them
		// (server.mcpOperatorTools: true).
		cs := tr.open(viewer, false)
		tools := mcptest.ToolNames(t, cs)
		for _, want := range []string{"list_resources", "get_resource", "resource_history", "why_resource", "list_events", "get_graph", "source_revisions", "list_previews"} {
			if !slices.Contains(tools, want) {
				t.Errorf("%s: no tool %s in %v", tr.name, want, tools)
			}
		}
		if slices.Contains(tools, "reconcile_resource") != (tr.name != "stdio") {
			t.Errorf("%s: tools %v", tr.name, tools)
		}
		// A token of staging lists staging's resources only; production's is not found.
		text, failed := mcptest.Call(t, cs, "list_resources", map[string]any{})
		if failed || !strings.Contains(text, `"name":"stg-a"`) || strings.Contains(text, "prd-a") {
			t.Errorf("%s: list_resources as a staging viewer: %s", tr.name, text)
		}
		if text, failed := mcptest.Call(t, cs, "get_resource", map[string]any{"namespace": "production", "kind": "Queue", "name": "prd-a"}); !failed || !strings.Contains(text, "not found") {
			t.Errorf("%s: get_resource out of scope: %s", tr.name, text)
		}
		if text, failed := mcptest.Call(t, cs, "get_resource", map[string]any{"namespace": "staging", "kind": "Queue", "name": "stg-a"}); failed || !strings.Contains(text, `"namespace":"staging"`) {
			t.Errorf("%s: get_resource: %s", tr.name, text)
		}
		if text, failed := mcptest.Call(t, cs, "resource_history", map[string]any{"namespace": "staging", "kind": "Queue", "name": "stg-a"}); failed || !strings.HasPrefix(text, `{"items":[`) {
			t.Errorf("%s: resource_history: %s", tr.name, text)
		}
		if text, failed := mcptest.Call(t, cs, "get_resource", map[string]any{"namespace": "staging", "kind": "Queue"}); !failed || !strings.Contains(text, "name") {
			t.Errorf("%s: get_resource without a name: %s", tr.name, text)
		}
		stg := map[string]any{"namespace": "staging", "kind": "Queue", "name": "stg-a", "reason": "mcp test"}
		if text, failed := mcptest.Call(t, tr.open(viewer, true), "reconcile_resource", stg); !failed || !strings.Contains(text, "operator") {
			t.Errorf("%s: reconcile_resource as a viewer: %s", tr.name, text)
		}
		if text, failed := mcptest.Call(t, tr.open(operator, true), "reconcile_resource", stg); failed || !strings.Contains(text, `"actor":"token:staging-operator"`) {
			t.Errorf("%s: reconcile_resource as an operator: %s", tr.name, text)
		}
	}
}
