package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/trueup-dev/trueup/internal/mcp"
	"github.com/trueup-dev/trueup/internal/mcp/mcptest"
)

// headerTransport sends every request with the test identity header.
type headerTransport string

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(identityHeader, string(h))
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession connects an SDK client to url's /mcp as identity ("role:ns1,ns2").
func mcpSession(t *testing.T, url, identity string) *sdk.ClientSession {
	t.Helper()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(),
		&sdk.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: headerTransport(identity)}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect as %s: %v", identity, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestMCPEndpoint: /mcp answers with the API's authentication, scoping and refusals; its
// operator tools exist only when enabled; it is absent unless configured; a browser on
// another site cannot post to it.
func TestMCPEndpoint(t *testing.T) {
	t.Parallel()
	e := newAuthzEnv(t)
	serve := func(o *mcp.Options) string {
		hs := httptest.NewServer(New(e.st, Options{Replica: "test", Authenticate: testAuthenticate, MCP: o}, slog.New(slog.DiscardHandler)).Handler())
		t.Cleanup(hs.Close)
		return hs.URL
	}
	plain, ops, off := serve(&mcp.Options{}), serve(&mcp.Options{OperatorTools: true}), serve(nil)

	post := func(url string, header ...string) int {
		req, _ := http.NewRequest("POST", url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		name, url string
		header    []string
		want      int
	}{
		{"no credentials", plain, nil, http.StatusUnauthorized},
		{"not configured", off, []string{identityHeader, "admin:*"}, http.StatusNotFound},
		{"cross-site browser", plain, []string{identityHeader, "admin:*", "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"allowed", plain, []string{identityHeader, "admin:*"}, http.StatusOK},
	} {
		if got := post(c.url, c.header...); got != c.want {
			t.Errorf("%s: POST /mcp answered %d, want %d", c.name, got, c.want)
		}
	}

	viewer := mcpSession(t, plain, "viewer:staging")
	if n := mcptest.ToolNames(t, viewer); !slices.Contains(n, "list_resources") || slices.Contains(n, "reconcile_resource") {
		t.Errorf("tools without operator tools: %v", n)
	}
	// A viewer of staging sees staging's resources only; production's are not found.
	text, failed := mcptest.Call(t, viewer, "list_resources", map[string]any{})
	var list struct {
		Items []struct {
			Metadata struct{ Namespace, Name string }
		}
	}
	if err := json.Unmarshal([]byte(text), &list); failed || err != nil || len(list.Items) != 2 {
		t.Fatalf("list_resources as a staging viewer: %s (error %v)", text, failed)
	}
	for _, it := range list.Items {
		if it.Metadata.Namespace != "staging" {
			t.Errorf("a staging viewer sees %s/%s", it.Metadata.Namespace, it.Metadata.Name)
		}
	}
	if text, failed := mcptest.Call(t, viewer, "get_resource", map[string]any{"namespace": "production", "kind": "Queue", "name": "prd-a"}); !failed || !strings.Contains(text, "not found") {
		t.Errorf("get_resource out of scope: %s (error %v)", text, failed)
	}
	if text, failed := mcptest.Call(t, viewer, "get_resource", map[string]any{"namespace": "staging", "kind": "queue", "name": "stg-a"}); failed || !strings.Contains(text, `"name":"stg-a"`) {
		t.Errorf("get_resource in scope: %s (error %v)", text, failed)
	}

	// Operator tools: listed when enabled, refused to a viewer, done for an operator.
	stg := map[string]any{"namespace": "staging", "kind": "Queue", "name": "stg-a"}
	if text, failed := mcptest.Call(t, mcpSession(t, ops, "viewer:staging"), "reconcile_resource", stg); !failed || !strings.Contains(text, "operator") {
		t.Errorf("reconcile_resource as a viewer: %s (error %v)", text, failed)
	}
	if text, failed := mcptest.Call(t, mcpSession(t, ops, "operator:staging"), "reconcile_resource", stg); failed || !strings.Contains(text, `"action":"reconcile"`) {
		t.Errorf("reconcile_resource as an operator: %s (error %v)", text, failed)
	}
}
