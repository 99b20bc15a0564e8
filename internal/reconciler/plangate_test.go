package reconciler

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
)

// planningAction reconciles by calling reconcile; it plans until its context ends.
type planningAction struct {
	started   chan struct{}
	ended     chan struct{} // closed as Plan returns
	reconcile func() (actions.Result, error)
}

func (g *planningAction) Reconcile(context.Context, actions.Request) (actions.Result, error) {
	return g.reconcile()
}

func (g *planningAction) Delete(context.Context, actions.Request) (actions.Result, error) {
	return g.reconcile()
}

func (g *planningAction) Plan(ctx context.Context, _ actions.Request) (actions.Plan, error) {
	close(g.started)
	if g.ended != nil {
		defer close(g.ended)
	}
	<-ctx.Done()
	return actions.Plan{}, context.Cause(ctx)
}

// arbitratedAction is a planningAction whose plans share the resource with its calls, as
// exec's and terraform's do.
type arbitratedAction struct {
	planningAction
	gate actions.PlanGate
}

func (g *arbitratedAction) PlanGate() *actions.PlanGate { return &g.gate }

// A call of the reconciler stops the plan in progress of its resource, for a plugin that
// asks for arbitration, through the gate the previews plan through (the host's, or else the
// instance's own), and calls the plugin once the plan has returned.
func TestCallStopsPlanOfItsResource(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		shared   *actions.PlanGate
		deleting bool
	}{
		{"reconcile, host's gate", &actions.PlanGate{}, false},
		{"delete, host's gate", &actions.PlanGate{}, true},
		{"reconcile, instance's gate", nil, false},
	} {
		r := newTestReconciler()
		r.opts.Plans = tc.shared
		req := actions.Request{Resource: actions.Resource{Namespace: "default", Kind: "Database", Name: "db", UID: "u1"}}
		planErr := make(chan error, 1)
		act := &arbitratedAction{planningAction: planningAction{started: make(chan struct{}), ended: make(chan struct{})}}
		act.reconcile = func() (actions.Result, error) {
			select {
			case <-act.ended:
			default:
				t.Errorf("%s: the plugin was called before the plan returned", tc.name)
			}
			return actions.Result{Done: true}, nil
		}
		go func() {
			preq := req
			preq.Resource.UID = "" // a preview's resource carries none
			_, err := actions.GateFor(tc.shared, act).Plan(t.Context(), act, preq)
			planErr <- err
		}()
		<-act.started
		a := attempt{op: "reconcile", trigger: "spec-changed"}
		r.call(t.Context(), act, "fake", req, tc.deleting, nil, &a)
		if a.err != nil || !a.res.Done {
			t.Fatalf("%s: call = %+v, %v", tc.name, a.res, a.err)
		}
		if err := <-planErr; !errors.Is(err, actions.ErrPlanBusy) {
			t.Errorf("%s: the plan's error = %v, want ErrPlanBusy", tc.name, err)
		}
	}
}

// A plugin that does not ask for arbitration (github-actions, gitlab: a plan is a CI run of
// its own) plans alongside the calls of its resource: a reconcile neither stops nor waits for
// its plan.
func TestCallLeavesPlansOfOtherPlugins(t *testing.T) {
	t.Parallel()
	r := newTestReconciler()
	r.opts.Plans = &actions.PlanGate{}
	req := actions.Request{Resource: actions.Resource{Namespace: "default", Kind: "Database", Name: "db", UID: "u1"}}
	act := &planningAction{started: make(chan struct{}), reconcile: func() (actions.Result, error) { return actions.Result{Done: true}, nil }}
	ctx, cancel := context.WithCancel(t.Context())
	planErr := make(chan error, 1)
	go func() {
		_, err := actions.GateFor(r.opts.Plans, act).Plan(ctx, act, req)
		planErr <- err
	}()
	<-act.started
	a := attempt{op: "reconcile", trigger: "spec-changed"}
	r.call(t.Context(), act, "fake", req, false, nil, &a)
	if a.err != nil || !a.res.Done {
		t.Fatalf("call = %+v, %v", a.res, a.err)
	}
	select {
	case err := <-planErr:
		t.Fatalf("the plan ended during the reconcile: %v", err)
	default:
	}
	cancel()
	if err := <-planErr; !errors.Is(err, context.Canceled) {
		t.Errorf("the plan's error = %v, want its own cancellation", err)
	}
}

// stubbornAction plans until told, whatever its context says.
type stubbornAction struct {
	planningAction
	finish chan struct{}
	gate   actions.PlanGate
}

func (g *stubbornAction) Plan(context.Context, actions.Request) (actions.Plan, error) {
	close(g.started)
	<-g.finish
	return actions.Plan{}, nil
}

func (g *stubbornAction) PlanGate() *actions.PlanGate { return &g.gate }

// A plan that ignores its cancellation holds a call up for the gate's StopWait at most: the
// attempt then fails clearly (and is retried), without calling the plugin beside the plan.
func TestCallGivesUpOnAPlanThatDoesNotStop(t *testing.T) {
	t.Parallel()
	r := newTestReconciler()
	req := actions.Request{Resource: actions.Resource{Namespace: "default", Kind: "Database", Name: "db", UID: "u1"}}
	act := &stubbornAction{planningAction: planningAction{started: make(chan struct{})}, finish: make(chan struct{})}
	act.gate.StopWait = 50 * time.Millisecond
	act.reconcile = func() (actions.Result, error) {
		t.Error("the plugin was called beside the plan")
		return actions.Result{}, nil
	}
	planErr := make(chan error, 1)
	go func() {
		_, err := actions.GateFor(nil, act).Plan(t.Context(), act, req)
		planErr <- err
	}()
	<-act.started
	a := attempt{op: "reconcile", trigger: "spec-changed"}
	r.call(t.Context(), act, "fake", req, false, nil, &a)
	if a.err == nil || !strings.Contains(a.err.Error(), "did not stop within 50ms") {
		t.Errorf("call beside a plan that does not stop: %v", a.err)
	}
	close(act.finish)
	if err := <-planErr; !errors.Is(err, actions.ErrPlanBusy) {
		t.Errorf("the plan's error = %v, want ErrPlanBusy", err)
	}
}
