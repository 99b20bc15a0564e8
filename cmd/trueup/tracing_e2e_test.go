package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

// collectedSpan is a span as the collector received it.
type collectedSpan struct {
	Name, TraceID, SpanID, Parent string
	Attrs                         map[string]string
	Failed                        bool
	Resource                      map[string]string
}

// otlpCollector is an in-process OTLP/HTTP collector: it accepts POST /v1/traces with a
// protobuf ExportTraceServiceRequest, as an OpenTelemetry Collector does, and keeps the spans.
type otlpCollector struct {
	*httptest.Server
	mu      sync.Mutex
	spans   []collectedSpan
	headers []http.Header
}

func newOTLPCollector(t *testing.T) *otlpCollector {
	c := &otlpCollector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusNotFound)
			return
		}
		body, err := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.headers = append(c.headers, r.Header.Clone())
		for _, rs := range req.ResourceSpans {
			res := attrs(rs.GetResource().GetAttributes())
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					c.spans = append(c.spans, collectedSpan{Name: s.Name, TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId),
						Parent: hex.EncodeToString(s.ParentSpanId), Attrs: attrs(s.Attributes), Failed: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
						Resource: res})
				}
			}
		}
		c.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(c.Close)
	return c
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.Key] = fmt.Sprint(v.IntValue)
		case *commonpb.AnyValue_BoolValue:
			out[kv.Key] = fmt.Sprint(v.BoolValue)
		}
	}
	return out
}

// trace returns the spans of trace id, by name.
func (c *otlpCollector) trace(id string) map[string]collectedSpan {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]collectedSpan{}
	for _, s := range c.spans {
		if s.TraceID == id {
			out[s.Name] = s
		}
	}
	return out
}

// root returns the first root span named name.
func (c *otlpCollector) root(name string) (collectedSpan, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.spans {
		if s.Name == name && s.Parent == "" {
			return s, true
		}
	}
	return collectedSpan{}, false
}

// hasLine reports whether one line of out holds every part.
func hasLine(out string, parts ...string) bool {
	for line := range strings.SplitSeq(out, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

// TestTracesEndToEnd: `trueup serve` with tracing: exports to an in-process OTLP collector a
// trace per sync (sync <source> → fetch, parse, validate, apply) and per reconcile
// (reconcile <Kind>/<ns>/<name> → claim, action.reconcile, write); the reconcile's trace id
// is the one its history row holds, which the API returns and the dashboard links; the log
// line of the applied revision names the sync's trace and the exec action's "exec finished"
// line the reconcile's; the exporter's header reaches the
// collector and never the logs.
func TestTracesEndToEnd(t *testing.T) {
	t.Parallel()
	col := newOTLPCollector(t)
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	writeTestFile(t, filepath.Join(repo, "types.yaml"), manifesttest.TypeDoc("App", "apps.example.com", "{type: object}", "noop"))
	writeTestFile(t, filepath.Join(repo, "web.yaml"), "apiVersion: apps.example.com/v1\nkind: App\nmetadata: {name: web, namespace: staging}\nspec: {size: 1}\n")
	// An exec action: its "exec finished" line (debug) is a plugin's line about the call.
	script := filepath.Join(dir, "run.sh")
	writeTestFile(t, script, "#!/bin/sh\ncat >/dev/null\necho '{\"done\": true}'\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	const apiKey = "otlp-api-key-secret-7"
	logs, wait := serveProcess(t, fmt.Sprintf(`server: {listen: "%s"}
log: {level: debug}
sources:
  - name: local
    dir: {path: %s}
actions:
  - {name: noop, type: exec, config: {command: ["%s"]}}
tracing:
  endpoint: %s
  headers: {X-Api-Key: "${OTLP_KEY}"}
  traceURL: "https://jaeger.example.com/trace/{traceId}"
`, addr, repo, script, col.URL), "TRUEUP_DATABASE_URL="+pgtest.NewDatabase(t, store.MigrateURL), "OTLP_KEY="+apiKey,
		// The SDK's own variables work where it reads them: export every 100 ms, not 5 s.
		"OTEL_BSP_SCHEDULE_DELAY=100")
	stopped := false
	defer func() {
		if !stopped {
			_ = wait(true)
		}
	}()
	base := "http://" + addr

	// The history row of the reconcile holds its trace id; the API returns it.
	var traceID string
	deadline := time.Now().Add(60 * time.Second)
	for traceID == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no history row with a trace id within 60s\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
		resp, err := http.Get(base + "/api/v1/resources/staging/App/web/history")
		if err != nil {
			continue
		}
		var h struct {
			Items []struct {
				Result  string `json:"result"`
				TraceID string `json:"traceId"`
			} `json:"items"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		if len(h.Items) > 0 && h.Items[0].Result == "Succeeded" {
			if traceID = h.Items[0].TraceID; traceID == "" {
				t.Fatalf("history row without a trace id: %+v", h.Items[0])
			}
		}
	}
	if len(traceID) != 32 {
		t.Fatalf("trace id %q", traceID)
	}

	// The collector receives the reconcile's span tree under that id.
	want := []string{"reconcile App/staging/web", "claim", "action.reconcile", "write"}
	var spans map[string]collectedSpan
	for deadline := time.Now().Add(30 * time.Second); ; {
		spans = col.trace(traceID)
		if len(spans) >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	root, ok := spans[want[0]]
	if !ok || root.Parent != "" {
		t.Fatalf("trace %s: no root span %q: %+v", traceID, want[0], spans)
	}
	for _, name := range want[1:] {
		if s, ok := spans[name]; !ok || s.Parent != root.SpanID {
			t.Errorf("trace %s: span %q missing or not a child of the root: %+v", traceID, name, s)
		}
	}
	for k, v := range map[string]string{"trueup.kind": "App", "trueup.namespace": "staging", "trueup.name": "web", "trueup.source": "local",
		"trueup.generation": "1", "trueup.result": "Succeeded"} {
		if root.Attrs[k] != v {
			t.Errorf("root span attribute %s = %q, want %q", k, root.Attrs[k], v)
		}
	}
	if a := spans["action.reconcile"].Attrs; a["trueup.action.name"] != "noop" || a["trueup.action.type"] != "exec" || a["trueup.generation"] != "1" {
		t.Errorf("action span attributes %v", a)
	}
	if root.Resource["service.name"] != "trueup" || root.Resource["service.instance.id"] == "" || root.Resource["service.version"] == "" {
		t.Errorf("resource attributes %v", root.Resource)
	}

	// The sync has its own trace: sync local → fetch, parse, validate, apply.
	var sync collectedSpan
	for deadline := time.Now().Add(30 * time.Second); ; {
		var ok bool
		if sync, ok = col.root("sync local"); ok || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if sync.Name == "" {
		t.Fatalf("no sync span received")
	}
	syncSpans := col.trace(sync.TraceID)
	for _, name := range []string{"fetch", "parse", "validate", "apply"} {
		if s, ok := syncSpans[name]; !ok || s.Parent != sync.SpanID {
			t.Errorf("sync trace: span %q missing or not a child of the root: %+v", name, s)
		}
	}
	if sync.Attrs["trueup.source"] != "local" || sync.Attrs["trueup.resources"] != "1" || sync.Attrs["trueup.created"] != "1" || sync.Attrs["trueup.revision"] == "" {
		t.Errorf("sync span attributes %v", sync.Attrs)
	}

	// The dashboard links the trace id with traceURL.
	resp, err := http.Get(base + "/resources/staging/App/web")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if link := "https://jaeger.example.com/trace/" + traceID; !strings.Contains(string(page), link) {
		t.Errorf("the resource page does not link %s", link)
	}

	if err := wait(true); err != nil {
		t.Fatalf("serve: %v\n%s", err, logs.String())
	}
	stopped = true
	out := logs.String()
	if !strings.Contains(out, "applied revision") || !strings.Contains(out, "trace_id="+sync.TraceID) {
		t.Errorf("no log line names the sync's trace %s:\n%s", sync.TraceID, out)
	}
	// The plugin's line about the call names the trace its history row links, and its span.
	if !hasLine(out, "exec finished", "trace_id="+traceID, "span_id="+spans["action.reconcile"].SpanID) {
		t.Errorf("no \"exec finished\" line names the reconcile's trace %s and action span:\n%s", traceID, out)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.headers) == 0 || col.headers[0].Get("X-Api-Key") != apiKey {
		t.Errorf("the exporter's header did not reach the collector")
	}
	if strings.Contains(out, apiKey) {
		t.Errorf("the exporter's header reached the logs:\n%s", out)
	}
}
