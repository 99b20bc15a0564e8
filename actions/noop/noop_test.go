package noop_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/actiontest"
	"github.com/trueup-dev/trueup/actions/noop"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	actiontest.Run(t, actiontest.Suite{
		Factory:    noop.New,
		Config:     json.RawMessage(`{"delay": "0s", "failFirst": 0}`),
		SlowConfig: json.RawMessage(`{"delay": "1h"}`),
		With:       json.RawMessage(`{"anything": true}`),
	})
}

func newAction(t *testing.T, cfg string) actions.Action {
	t.Helper()
	a, err := noop.New(json.RawMessage(cfg), actions.Env{Name: "noop"})
	if err != nil {
		t.Fatalf("New(%s): %v", cfg, err)
	}
	t.Cleanup(func() { _ = actions.Close(a) })
	return a
}

func request(ns, name string, gen int64) actions.Request {
	return actions.Request{Resource: actions.Resource{Kind: "Database", Namespace: ns, Name: name, Generation: gen}}
}

func TestReconcileOutputs(t *testing.T) {
	t.Parallel()
	a := newAction(t, ``)
	res, err := a.Reconcile(t.Context(), request("default", "db", 7))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Done || res.Message != "noop" || res.Outputs["generation"] != int64(7) {
		t.Fatalf("Reconcile = %+v; want Done, message noop, outputs generation 7", res)
	}
}

// noop plans a reconcile and a delete as no changes, counted, so that policies can gate it.
func TestPlan(t *testing.T) {
	t.Parallel()
	a := newAction(t, `{"failFirst": 1}`)
	req := request("default", "db", 3)
	req.KeepPlan = true
	want := actions.Plan{Summary: "no changes", Counted: true}
	for name, plan := range map[string]func(context.Context, actions.Request) (actions.Plan, error){
		"plan":       a.(actions.Planner).Plan,
		"planDelete": a.(actions.DeletePlanner).PlanDelete,
	} {
		p, err := plan(t.Context(), req)
		if err != nil || p != want {
			t.Fatalf("%s = %+v, %v; want %+v", name, p, err, want)
		}
	}
	// A plan is not a reconcile: the induced failure is still to come.
	if _, err := a.Reconcile(t.Context(), request("default", "db", 3)); err == nil {
		t.Fatal("first reconcile after plans: err = nil; want the induced failure")
	}
}

func TestFailFirst(t *testing.T) {
	t.Parallel()
	a := newAction(t, `{"failFirst": 2}`)
	ctx := t.Context()
	for i := range 2 {
		if _, err := a.Reconcile(ctx, request("default", "db", 1)); err == nil {
			t.Fatalf("call %d: err = nil; want an induced failure", i+1)
		}
	}
	// Another resource has its own count.
	if _, err := a.Reconcile(ctx, request("other", "db", 1)); err == nil {
		t.Fatal("other resource, first call: err = nil; want an induced failure")
	}
	if res, err := a.Reconcile(ctx, request("default", "db", 1)); err != nil || !res.Done {
		t.Fatalf("third call = %+v, %v; want Done", res, err)
	}
	// Delete forgets the resource: created again, it fails again.
	if _, err := a.Delete(ctx, request("default", "db", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Reconcile(ctx, request("default", "db", 1)); err == nil {
		t.Fatal("after Delete: err = nil; want an induced failure")
	}
}

func TestDelayHonoursContext(t *testing.T) {
	t.Parallel()
	a := newAction(t, `{"delay": "50ms"}`)
	start := time.Now()
	if _, err := a.Reconcile(t.Context(), request("default", "db", 1)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("Reconcile returned after %s; want the 50ms delay", d)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for name, call := range map[string]func() error{
		"reconcile": func() error { _, err := a.Reconcile(ctx, request("default", "db", 1)); return err },
		"delete":    func() error { _, err := a.Delete(ctx, request("default", "db", 1)); return err },
		"observe":   func() error { _, err := a.(actions.Observer).Observe(ctx, request("default", "db", 1)); return err },
		"plan":      func() error { _, err := a.(actions.Planner).Plan(ctx, request("default", "db", 1)); return err },
		"planDelete": func() error {
			_, err := a.(actions.DeletePlanner).PlanDelete(ctx, request("default", "db", 1))
			return err
		},
	} {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with cancelled ctx: err = %v; want context.Canceled", name, err)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ cfg, want string }{
		{`{"delay": "soon"}`, "delay"},
		{`{"delay": 5}`, "delay"},
		{`{"delay": "-1s"}`, "negative"},
		{`{"failFirst": -1}`, "negative"},
		{`{"fail_first": 1}`, "fail_first"},
	} {
		_, err := noop.New(json.RawMessage(tc.cfg), actions.Env{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%s) err = %v; want one containing %q", tc.cfg, err, tc.want)
		}
	}
}

func BenchmarkPlan(b *testing.B) {
	a, err := noop.New(nil, actions.Env{})
	if err != nil {
		b.Fatal(err)
	}
	p := a.(actions.Planner)
	ctx := context.Background()
	req := request("default", "db", 1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Plan(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReconcile(b *testing.B) {
	a, err := noop.New(nil, actions.Env{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	req := request("default", "db", 1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Reconcile(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
