package reconciler

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/redact"
	"github.com/trueup-dev/trueup/internal/store"
)

// BenchmarkTraceOff is what an attempt's tracing costs without a tracing: block (the global
// no-op provider): its reconcile, claim, action and write spans.
func BenchmarkTraceOff(b *testing.B) {
	r := &Reconciler{}
	c := store.Claimed{ID: 1, Kind: "App", Namespace: "default", Name: "web", Generation: 1}
	now := time.Now()
	claim := claimWindow{start: now, end: now, size: 64}
	b.ReportAllocs()
	for b.Loop() {
		ctx, span := startTrace(context.Background(), c, claim, now, "created")
		_, as := r.actionSpan(ctx, "reconcile", "noop", actions.Request{})
		endAction(as, nil, nil, actions.Result{Done: true})
		traceWrite(pending{c: c, span: span}, now, now, 64, written)
		span.End()
	}
}

// fakeAction answers with its function fields.
type fakeAction struct {
	reconcile func(context.Context) (actions.Result, error)
	observe   func(context.Context) (actions.Observation, error)
}

func (f fakeAction) Reconcile(ctx context.Context, _ actions.Request) (actions.Result, error) {
	return f.reconcile(ctx)
}
func (f fakeAction) Delete(ctx context.Context, _ actions.Request) (actions.Result, error) {
	return f.reconcile(ctx)
}
func (f fakeAction) Observe(ctx context.Context, _ actions.Request) (actions.Observation, error) {
	return f.observe(ctx)
}

// TestActionSpans: each plugin call of an attempt under a recorded reconcile span is a child
// span action.<operation> naming the instance, its type and the generation; the plugin gets
// its context; a failure or a panic ends it with status Error and a scrubbed message.
func TestActionSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	// The package's tracer delegates to the first provider installed in the process.
	otel.SetTracerProvider(tp)
	r := New(nil, nil, Options{Redact: redact.New("s3cr3t"),
		ActionType: func(name string) string { return map[string]string{"act": "exec"}[name] }}, slog.New(slog.DiscardHandler))
	ok := func(context.Context) (actions.Result, error) { return actions.Result{Done: true}, nil }
	drift := func(context.Context) (actions.Observation, error) { return actions.Observation{Message: "moved"}, nil }
	cases := []struct {
		name     string
		trigger  string
		deleting bool
		act      fakeAction
		secrets  []string // the call's own (req.Secrets), unknown to the config's scrubber
		foreign  []string // values the call took from other namespaces
		want     []string // span names, in the order they end
		failed   string   // status description of the last one, "" for Ok
	}{
		{"reconcile", "created", false, fakeAction{reconcile: ok}, nil, nil, []string{"action.reconcile"}, ""},
		{"delete", "deleted", true, fakeAction{reconcile: ok}, nil, nil, []string{"action.delete"}, ""},
		{"resync with drift", "resync", false, fakeAction{reconcile: ok, observe: drift}, nil, nil, []string{"action.observe", "action.reconcile"}, ""},
		{"failure", "created", false, fakeAction{reconcile: func(context.Context) (actions.Result, error) {
			return actions.Result{}, errors.New("token s3cr3t refused")
		}}, nil, nil, []string{"action.reconcile"}, "token *** refused"},
		{"failure quoting a call secret", "created", false, fakeAction{reconcile: func(context.Context) (actions.Result, error) {
			return actions.Result{}, errors.New("db login failed: password=hunter2-revealed, token s3cr3t")
		}}, []string{"hunter2-revealed"}, nil, []string{"action.reconcile"}, "db login failed: password=***, token ***"},
		{"observe failure quoting a call secret", "resync", false, fakeAction{reconcile: ok, observe: func(context.Context) (actions.Observation, error) {
			return actions.Observation{}, errors.New("GET /state?pw=hunter2%2Frevealed: 401")
		}}, []string{"hunter2/revealed"}, nil, []string{"action.observe"}, "GET /state?pw=***: 401"},
		{"delete failure quoting a value from another namespace", "deleted", true, fakeAction{reconcile: func(context.Context) (actions.Result, error) {
			return actions.Result{}, errors.New("drop refused: password pw-Zx81sQ-prod")
		}}, nil, []string{"pw-Zx81sQ-prod"}, []string{"action.delete"}, "drop refused: password ***"},
		{"panic", "created", false, fakeAction{reconcile: func(context.Context) (actions.Result, error) { panic("s3cr3t") }},
			nil, nil, []string{"action.reconcile"}, "the action panicked during reconcile (a bug in the plugin; see the controller's log)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, root := tp.Tracer("test").Start(context.Background(), "reconcile")
			var seen trace.SpanContext
			act := tc.act
			inner := act.reconcile
			act.reconcile = func(ctx context.Context) (actions.Result, error) {
				seen = trace.SpanContextFromContext(ctx)
				return inner(ctx)
			}
			if obs := act.observe; obs != nil {
				act.observe = func(ctx context.Context) (actions.Observation, error) {
					seen = trace.SpanContextFromContext(ctx)
					return obs(ctx)
				}
			}
			before := len(rec.Ended())
			a := attempt{op: "reconcile", trigger: tc.trigger}
			r.call(ctx, act, "act", actions.Request{Resource: actions.Resource{Generation: 4}, Secrets: tc.secrets}, tc.deleting, tc.foreign, &a)
			root.End()
			var got []sdktrace.ReadOnlySpan
			for _, s := range rec.Ended()[before:] {
				if s.SpanContext().TraceID() == root.SpanContext().TraceID() && s.Name() != "reconcile" {
					got = append(got, s)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d action spans, want %v", len(got), tc.want)
			}
			for i, s := range got {
				attrs := map[string]string{}
				for _, kv := range s.Attributes() {
					attrs[string(kv.Key)] = kv.Value.String()
				}
				if s.Name() != tc.want[i] || s.Parent().SpanID() != root.SpanContext().SpanID() ||
					attrs["trueup.action.name"] != "act" || attrs["trueup.action.type"] != "exec" || attrs["trueup.generation"] != "4" {
					t.Errorf("span %d: %s parent %s attributes %v", i, s.Name(), s.Parent().SpanID(), attrs)
				}
			}
			last := got[len(got)-1]
			if last.Status().Description != tc.failed || (tc.failed != "") != (last.Status().Code == codes.Error) {
				t.Errorf("status %+v, want %q", last.Status(), tc.failed)
			}
			for _, s := range got {
				for _, ev := range s.Events() {
					for _, kv := range ev.Attributes {
						if v := kv.Value.String(); strings.Contains(v, "s3cr3t") || strings.Contains(v, "hunter2") || strings.Contains(v, "pw-Zx81sQ") {
							t.Errorf("span %s event %s: %s=%q holds a secret", s.Name(), ev.Name, kv.Key, v)
						}
					}
				}
			}
			if seen.SpanID() != last.SpanContext().SpanID() {
				t.Errorf("the plugin's context holds span %s, not its action span", seen.SpanID())
			}
		})
	}
}

// TestTraceOutcome: an attempt's trace says what its history row says, given what the writer
// did with the result.
func TestTraceOutcome(t *testing.T) {
	t.Parallel()
	ok := attempt{res: actions.Result{Done: true}}
	failed := attempt{err: errors.New("boom")}
	cases := []struct {
		name              string
		a                 attempt
		w                 writeOutcome
		result, root, wrt string
	}{
		{"succeeded, written", ok, written, "Succeeded", "", ""},
		{"in progress, written", attempt{}, written, "InProgress", "", ""},
		{"failed, written", failed, written, "Failed", "attempt Failed", ""},
		{"stalled, written", attempt{err: actions.Terminal(errors.New("bad spec"))}, written, "Stalled", "attempt Stalled", ""},
		{"succeeded, refused by the database", ok, writeRefused, "Failed",
			"attempt Failed: the action's result could not be stored", "the action's result could not be stored"},
		{"succeeded, not written", ok, writeFailed, "Error",
			"the result was not written; the work is repeated", "the result was not written; the work is repeated"},
		{"failed, not written", failed, writeFailed, "Error",
			"the result was not written; the work is repeated", "the result was not written; the work is repeated"},
		{"succeeded, lease lost", ok, writeLost, "Interrupted", "lease lost; result discarded", "lease lost; result discarded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			result, root, wrt := traceOutcome(tc.a, tc.w)
			if result != tc.result || root != tc.root || wrt != tc.wrt {
				t.Errorf("got (%q, %q, %q), want (%q, %q, %q)", result, root, wrt, tc.result, tc.root, tc.wrt)
			}
		})
	}
}

// TestTraceWrite: the root span carries the stored result and fails as traceOutcome says.
func TestTraceWrite(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	now := time.Now()
	for _, w := range []writeOutcome{written, writeRefused, writeFailed, writeLost} {
		_, root := tp.Tracer("test").Start(context.Background(), "reconcile")
		p := pending{a: attempt{res: actions.Result{Done: true}}, span: root}
		// The write span itself comes from the package tracer, bound to whichever provider
		// the process installed first: traceOutcome's table covers its failure text.
		traceWrite(p, now, now, 3, w)
		result, rootFailure, _ := traceOutcome(p.a, w)
		var got sdktrace.ReadOnlySpan
		for _, s := range rec.Ended() {
			if s.SpanContext().SpanID() == root.SpanContext().SpanID() {
				got = s
			}
		}
		if got == nil {
			t.Fatalf("%v: root span not ended", w)
		}
		attrs := map[string]string{}
		for _, kv := range got.Attributes() {
			attrs[string(kv.Key)] = kv.Value.String()
		}
		if attrs["trueup.result"] != result || got.Status().Description != rootFailure || (rootFailure != "") != (got.Status().Code == codes.Error) {
			t.Errorf("%v: result %q status %+v, want %q %q", w, attrs["trueup.result"], got.Status(), result, rootFailure)
		}
	}
}
