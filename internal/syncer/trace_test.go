package syncer

import (
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestSyncTraceRejected: a rejected revision's trace is sync <source> → fetch, parse,
// validate, with validate and the root failed; their status and events count the errors and
// never quote the spec value that was refused; no apply span.
// Not parallel: it installs the process's tracer provider (the package tracer binds to the
// first one installed); other tests' spans are told apart by this test's revision.
func TestSyncTraceRejected(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	b := setup(t)
	var r repo
	head := strings.Repeat("ab", 20)
	r.set(head, dbFiles(98765)) // size above the schema's maximum
	s := b.syncer(r.source(), "r1", 15*time.Second)
	if _, err := s.SyncOnce(b.ctx); err == nil || !strings.Contains(err.Error(), "98765") {
		t.Fatalf("SyncOnce error = %v, want the rejection quoting the value", err)
	}
	var root sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		for _, kv := range sp.Attributes() {
			if sp.Name() == "sync infra" && kv.Key == "trueup.revision" && kv.Value.AsString() == head {
				root = sp
			}
		}
	}
	if root == nil {
		t.Fatal("no sync span for the rejected revision")
	}
	steps := map[string]sdktrace.ReadOnlySpan{}
	for _, sp := range rec.Ended() {
		if sp.SpanContext().TraceID() == root.SpanContext().TraceID() && sp.Parent().SpanID() == root.SpanContext().SpanID() {
			steps[sp.Name()] = sp
		}
	}
	for name, failed := range map[string]bool{"fetch": false, "parse": false, "validate": true} {
		sp, ok := steps[name]
		if !ok {
			t.Errorf("no %s span", name)
			continue
		}
		if (sp.Status().Code == codes.Error) != failed {
			t.Errorf("%s span status %+v, failed want %v", name, sp.Status(), failed)
		}
	}
	if _, ok := steps["apply"]; ok {
		t.Error("a rejected revision has an apply span")
	}
	if d := steps["validate"].Status().Description; d != "1 error in the revision" {
		t.Errorf("validate span status %q", d)
	}
	if root.Status().Code != codes.Error || !strings.Contains(root.Status().Description, "rejected") {
		t.Errorf("root span status %+v", root.Status())
	}
	for _, sp := range append([]sdktrace.ReadOnlySpan{root}, steps["fetch"], steps["parse"], steps["validate"]) {
		if sp == nil {
			continue
		}
		texts := []string{sp.Status().Description}
		for _, ev := range sp.Events() {
			for _, kv := range ev.Attributes {
				texts = append(texts, kv.Value.String())
			}
		}
		for _, kv := range sp.Attributes() {
			texts = append(texts, kv.Value.String())
		}
		for _, text := range texts {
			if strings.Contains(text, "98765") {
				t.Errorf("span %s quotes the refused spec value: %q", sp.Name(), text)
			}
		}
	}
}
