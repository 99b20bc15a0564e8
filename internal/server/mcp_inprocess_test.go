package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/trueup-dev/trueup/internal/logbuf"
	"github.com/trueup-dev/trueup/internal/mcp"
	"github.com/trueup-dev/trueup/internal/mcp/mcptest"
)

// mcpStub serves /mcp (with o) in front of api instead of the API's routes, with an idle
// engine (no pacing) and no database; it returns the server's URL.
func mcpStub(t *testing.T, opts Options, api http.HandlerFunc, logger *slog.Logger) (*Server, string) {
	t.Helper()
	opts.Replica, opts.Authenticate = "test", testAuthenticate
	if opts.MCP == nil {
		opts.MCP = &mcp.Options{}
	}
	s := New(nil, opts, logger)
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("/", api)
	s.pace = newPacer(func(context.Context) (bool, error) { return false, nil }, 1, 1, queueWait)
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return s, hs.URL
}

// postMCP posts one JSON-RPC message to url's /mcp as an admin and returns the answer's
// status and headers (the error if ctx ends first).
func postMCP(ctx context.Context, url, msg string) (int, http.Header, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/mcp", strings.NewReader(msg))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(identityHeader, "admin:*")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header, nil
}

// TestMCPHandlerPanic: a panic in an API handler that a tool calls is answered as the API
// answers it directly, 500, and logged with its stack; the server goes on serving.
func TestMCPHandlerPanic(t *testing.T) {
	t.Parallel()
	logs := &logbuf.Buffer{}
	_, url := mcpStub(t, Options{}, func(http.ResponseWriter, *http.Request) { panic("handler bug") }, slog.New(slog.NewTextHandler(logs, nil)))
	req, _ := http.NewRequest("GET", url+"/api/v1/resources", nil)
	req.Header.Set(identityHeader, "admin:*")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("direct API call: %d, want 500", resp.StatusCode)
	}
	cs := mcpSession(t, url, "admin:*")
	for range 2 {
		if text, failed := mcptest.Call(t, cs, "list_resources", map[string]any{}); !failed || !strings.Contains(text, "internal error") {
			t.Errorf("list_resources over a panicking handler: %s (error %v)", text, failed)
		}
	}
	if l := logs.String(); !strings.Contains(l, "handler bug") || !strings.Contains(l, "stack=") || !strings.Contains(l, "mcp.go") {
		t.Errorf("the panic is not logged with its stack:\n%s", l)
	}
}

// TestMCPClientLeaves: when the client of /mcp goes away, the API call its tool made ends too
// (its context is canceled, not left to run to the request timeout). The call is a command:
// a read may share its answer with others, and runs to its end for them (shared).
func TestMCPClientLeaves(t *testing.T) {
	t.Parallel()
	started, ended := make(chan struct{}), make(chan error, 1)
	_, url := mcpStub(t, Options{MCP: &mcp.Options{OperatorTools: true}}, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
		ended <- r.Context().Err()
	}, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	called := make(chan error, 1)
	go func() {
		_, _, err := postMCP(ctx, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"reconcile_resource","arguments":{"namespace":"a","kind":"Queue","name":"q"}}}`)
		called <- err
	}()
	<-started
	cancel()
	if err := <-called; err == nil {
		t.Error("the canceled request answered")
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("the API call ended with %v, want it canceled when the client left", err)
	}
}

// TestMCPLimit: /mcp requests run at most MaxInFlight at once; one more waits its turn, then
// is answered 503 with Retry-After. The tool call holding /mcp's only slot still gets the
// API's (no deadlock).
func TestMCPLimit(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}), make(chan struct{})
	_, url := mcpStub(t, Options{MaxInFlight: 1}, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		_, _ = w.Write([]byte(`{"items":[]}`))
	}, slog.New(slog.DiscardHandler))
	called := make(chan string, 1)
	go func() {
		text, _ := mcptest.Call(t, mcpSession(t, url, "admin:*"), "list_resources", map[string]any{})
		called <- text
	}()
	<-started
	code, header, err := postMCP(context.Background(), url, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusServiceUnavailable || header.Get("Retry-After") == "" {
		t.Errorf("/mcp beyond its limit: %d, Retry-After %q; want 503 with Retry-After", code, header.Get("Retry-After"))
	}
	close(release)
	if text := <-called; text != `{"items":[]}` {
		t.Errorf("the call holding the slot answered %s", text)
	}
}

// TestMCPOperatorToolsOff: without operator tools, /mcp refuses a call of one by name and
// the API is not called.
func TestMCPOperatorToolsOff(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	_, url := mcpStub(t, Options{}, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		_, _ = w.Write([]byte(`{"action":"reconcile"}`))
	}, slog.New(slog.DiscardHandler))
	res, err := mcpSession(t, url, "admin:*").CallTool(context.Background(), &sdk.CallToolParams{Name: "reconcile_resource",
		Arguments: map[string]any{"namespace": "staging", "kind": "Queue", "name": "stg-a"}})
	if err == nil && (res == nil || !res.IsError) {
		t.Errorf("reconcile_resource ran without operator tools: %+v", res)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("%d API calls for a tool that is off", n)
	}
}

// TestMCPBodyLimit: /mcp reads at most the API's limit for a command's body (64 KiB).
func TestMCPBodyLimit(t *testing.T) {
	t.Parallel()
	_, url := mcpStub(t, Options{}, func(http.ResponseWriter, *http.Request) {}, slog.New(slog.DiscardHandler))
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"` + strings.Repeat("x", mcp.MaxRequestBody) + `"}}`
	code, _, err := postMCP(context.Background(), url, body)
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over 64 KiB: %d, want 413", code)
	}
}

// TestMCPCallersApart: /mcp requests of different callers at once each call the API as
// their own identity.
func TestMCPCallersApart(t *testing.T) {
	t.Parallel()
	_, url := mcpStub(t, Options{MaxInFlight: 2}, func(w http.ResponseWriter, r *http.Request) {
		id := identity(r)
		_ = json.NewEncoder(w).Encode(map[string]any{"items": []any{}, "who": string(id.Role) + ":" + strings.Join(id.Namespaces, ",")})
	}, slog.New(slog.DiscardHandler))
	var wg sync.WaitGroup
	for i := range 20 {
		who := []string{"viewer:staging", "admin:*"}[i%2]
		cs := mcpSession(t, url, who)
		wg.Go(func() {
			for range 5 {
				if text, failed := mcptest.Call(t, cs, "list_resources", map[string]any{}); failed || !strings.Contains(text, fmt.Sprintf(`"who":%q`, who)) {
					t.Errorf("%s got %s", who, text)
				}
			}
		})
	}
	wg.Wait()
}
