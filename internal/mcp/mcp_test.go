package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/trueup-dev/trueup/internal/mcp/mcptest"
)

// fakeAPI records the calls the tools make and answers them with answer.
type fakeAPI struct {
	calls  []string
	answer func(method, path string, q url.Values, body any) (string, error)
}

func (f *fakeAPI) do(method, path string, q url.Values, body, v any) error {
	call := method + " " + path
	if len(q) > 0 {
		call += "?" + q.Encode()
	}
	if body != nil {
		b, _ := json.Marshal(body)
		call += " " + string(b)
	}
	f.calls = append(f.calls, call)
	out := `{"items":[]}`
	if f.answer != nil {
		var err error
		if out, err = f.answer(method, path, q, body); err != nil {
			return err
		}
	}
	return json.Unmarshal([]byte(out), v)
}

func (f *fakeAPI) Get(_ context.Context, path string, q url.Values, v any) error {
	return f.do("GET", path, q, nil, v)
}

func (f *fakeAPI) Post(_ context.Context, path string, q url.Values, body, v any) error {
	return f.do("POST", path, q, body, v)
}

// connect serves NewServer(b, o) to an SDK client in memory.
func connect(t *testing.T, b Backend, o Options) *sdk.ClientSession {
	t.Helper()
	ct, st := sdk.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := NewServer(b, o).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestTools: each tool's input becomes the API call it stands for, or a clear error before any
// call.
func TestTools(t *testing.T) {
	t.Parallel()
	f := &fakeAPI{answer: func(method, path string, _ url.Values, _ any) (string, error) {
		if method == "GET" && path == "/api/v1/resources/production/Database/orders" {
			return `{"kind": "Database", "approval": {"state": "pending", "planHash": "h1", "generation": 3}}`, nil
		}
		return "{\n  \"items\": []\n}", nil
	}}
	cs := connect(t, f, Options{OperatorTools: true})
	res := `"namespace": "production", "kind": "Database", "name": "orders"`
	for _, c := range []struct {
		tool, args string
		want       string // the calls made, one a line; or the error's text
		fails      bool
	}{
		{"list_resources", `{}`, "GET /api/v1/resources?limit=100", false},
		{"list_resources", `{"namespace": "production", "kind": "Database", "phase": "failed", "labelSelector": "team=a", "set": "dbs", "limit": 5, "continue": "c1"}`,
			"GET /api/v1/resources?continue=c1&kind=Database&labelSelector=team%3Da%2Ctrueup.dev%2Fresource-set%3Ddbs&limit=5&namespace=production&phase=Failed", false},
		{"list_resources", `{"set": "dbs"}`, "GET /api/v1/resources?labelSelector=trueup.dev%2Fresource-set%3Ddbs&limit=100", false},
		{"list_resources", `{"phase": "Broken"}`, `phase "Broken": want Pending, Reconciling, Ready, Failed or Deleting`, true},
		{"list_resources", `{"limit": 5000}`, "limit 5000: want 1 to 1000", true},
		{"list_resources", `{"limit": "ten"}`, "limit", true},
		{"list_resources", `{"namespaces": "production"}`, "namespaces", true},
		{"get_resource", `{` + res + `}`, "GET /api/v1/resources/production/Database/orders", false},
		{"get_resource", `{"namespace": "production", "kind": "Database", "name": "a/b"}`, "GET /api/v1/resources/production/Database/a%2Fb", false},
		{"get_resource", `{"namespace": "production", "kind": "Database"}`, "name", true},
		{"get_resource", `{"namespace": " ", "kind": "", "name": "orders"}`, "namespace, kind must not be empty", true},
		{"resource_history", `{` + res + `}`, "GET /api/v1/resources/production/Database/orders/history?limit=50", false},
		{"resource_history", `{` + res + `, "limit": -1}`, "limit -1: want 1 to 1000", true},
		{"why_resource", `{` + res + `, "limit": 10}`, "GET /api/v1/resources/production/Database/orders/timeline?limit=10", false},
		{"list_events", `{"source": "infra"}`, "GET /api/v1/events?source=infra", false},
		{"get_graph", `{"resource": "Database/production/orders", "depth": 2}`, "GET /api/v1/graph?depth=2&resource=Database%2Fproduction%2Forders", false},
		{"list_sources", `{}`, "GET /api/v1/sources", false},
		{"get_source", `{"name": "infra", "counts": true}`, "GET /api/v1/sources/infra?counts=true", false},
		{"get_source", `{"name": ""}`, "name must not be empty", true},
		{"source_revisions", `{"name": "infra", "limit": 3}`, "GET /api/v1/sources/infra/revisions?limit=3", false},
		{"list_previews", `{"name": "infra"}`, "GET /api/v1/sources/infra/previews", false},
		{"get_preview", `{"source": "infra", "number": 12}`, "GET /api/v1/sources/infra/previews/12", false},
		{"get_preview", `{"source": "infra", "number": 0}`, "number 0: want a pull request's number", true},
		{"list_resource_types", `{}`, "GET /api/v1/resourcetypes", false},
		{"list_resource_sets", `{"namespace": "production"}`, "GET /api/v1/resourcesets?namespace=production", false},
		{"list_approvals", `{"state": "denied"}`, "GET /api/v1/approvals?state=denied", false},
		{"list_approvals", `{"state": "approved"}`, `state "approved": want pending, rejected or denied`, true},
		{"reconcile_resource", `{` + res + `}`, "POST /api/v1/resources/production/Database/orders/reconcile", false},
		{"suspend_resource", `{` + res + `, "reason": "maintenance"}`, `POST /api/v1/resources/production/Database/orders/suspend {"reason":"maintenance"}`, false},
		{"resume_resource", `{` + res + `}`, "POST /api/v1/resources/production/Database/orders/resume", false},
		{"sync_source", `{"name": "infra"}`, "POST /api/v1/sources/infra/sync", false},
		{"approve_resource", `{` + res + `, "reason": "ok"}`, "GET /api/v1/resources/production/Database/orders\n" +
			`POST /api/v1/resources/production/Database/orders/approve {"reason":"ok","planHash":"h1","generation":3}`, false},
	} {
		f.calls = nil
		text, failed := mcptest.Call(t, cs, c.tool, json.RawMessage(c.args))
		got := strings.Join(f.calls, "\n")
		switch {
		case failed != c.fails:
			t.Errorf("%s %s: failed %v (%s), want %v", c.tool, c.args, failed, text, c.fails)
		case c.fails && !strings.Contains(text, c.want):
			t.Errorf("%s %s: error %q, want %q", c.tool, c.args, text, c.want)
		case c.fails && got != "":
			t.Errorf("%s %s: refused but called %s", c.tool, c.args, got)
		case !c.fails && got != c.want:
			t.Errorf("%s %s: called\n%s\nwant\n%s", c.tool, c.args, got, c.want)
		case !c.fails && strings.ContainsAny(text, "\n "):
			t.Errorf("%s %s: answer %q is not compact JSON", c.tool, c.args, text)
		}
	}
}

// TestOperatorToolsOnlyWhenEnabled: without OperatorTools no tool changes anything.
func TestOperatorToolsOnlyWhenEnabled(t *testing.T) {
	t.Parallel()
	var ops []string
	for _, tl := range operatorTools {
		ops = append(ops, tl.toolName())
	}
	for _, enabled := range []bool{false, true} {
		names := mcptest.ToolNames(t, connect(t, &fakeAPI{}, Options{OperatorTools: enabled}))
		for _, op := range ops {
			if slices.Contains(names, op) != enabled {
				t.Errorf("operator tools %v: %s listed %v", enabled, op, !enabled)
			}
		}
		if !slices.Contains(names, "list_resources") || len(names) != len(readTools)+map[bool]int{true: len(ops)}[enabled] {
			t.Errorf("operator tools %v: tools %v", enabled, names)
		}
	}
}

// TestAPIErrorIsToolError: the API's refusal is the tool's error, with the API's words.
func TestAPIErrorIsToolError(t *testing.T) {
	t.Parallel()
	f := &fakeAPI{answer: func(string, string, url.Values, any) (string, error) {
		return "", errors.New("this needs the operator role in namespace production")
	}}
	text, failed := mcptest.Call(t, connect(t, f, Options{OperatorTools: true}), "reconcile_resource", json.RawMessage(`{"namespace": "production", "kind": "Database", "name": "orders"}`))
	if !failed || !strings.Contains(text, "reconcile_resource: this needs the operator role in namespace production") {
		t.Errorf("answer %q (error %v)", text, failed)
	}
}

// TestApproveNeedsPendingApproval: approve votes on nothing when nothing waits.
func TestApproveNeedsPendingApproval(t *testing.T) {
	t.Parallel()
	f := &fakeAPI{answer: func(string, string, url.Values, any) (string, error) { return `{"kind": "Database"}`, nil }}
	text, failed := mcptest.Call(t, connect(t, f, Options{OperatorTools: true}), "approve_resource", json.RawMessage(`{"namespace": "p", "kind": "Database", "name": "o"}`))
	if !failed || !strings.Contains(text, "waits for no approval") || len(f.calls) != 1 {
		t.Errorf("answer %q (error %v), calls %v", text, failed, f.calls)
	}
}

// TestOperatorToolsDisabled: with operator tools off, calling one by name fails and calls
// nothing.
func TestOperatorToolsDisabled(t *testing.T) {
	t.Parallel()
	f := &fakeAPI{}
	cs := connect(t, f, Options{})
	for _, tl := range operatorTools {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tl.toolName(),
			Arguments: json.RawMessage(`{"namespace":"a","kind":"b","name":"c","source":"s"}`)})
		if err == nil && (res == nil || !res.IsError) {
			t.Errorf("%s ran with operator tools off: %+v", tl.toolName(), res)
		}
	}
	if len(f.calls) != 0 {
		t.Errorf("API calls with operator tools off: %v", f.calls)
	}
}
