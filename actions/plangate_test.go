package actions

import (
	"context"
	"errors"
	"testing"
)

// planFunc is a Planner from a function.
type planFunc func(ctx context.Context, req Request) (Plan, error)

func (f planFunc) Plan(ctx context.Context, req Request) (Plan, error) { return f(ctx, req) }

func gateReq(name string) Request {
	return Request{Resource: Resource{Namespace: "default", Kind: "Database", Name: name}}
}

// blockingPlan starts a plan through g that runs until its context ends; it returns when the
// plan has started, and the channel its result comes on.
func blockingPlan(t *testing.T, g *PlanGate, req Request) (causes <-chan error, result <-chan error) {
	t.Helper()
	started, cause, res := make(chan struct{}), make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := g.Plan(t.Context(), planFunc(func(ctx context.Context, _ Request) (Plan, error) {
			close(started)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return Plan{}, errors.New("killed") // what a plugin says of its killed command
		}), req)
		res <- err
	}()
	select {
	case <-started:
	case err := <-res:
		t.Fatalf("the plan did not start: %v", err)
	}
	return cause, res
}

func TestPlanGateFree(t *testing.T) {
	t.Parallel()
	var g PlanGate
	want := Plan{Changes: true, Summary: "1 to add"}
	got, err := g.Plan(t.Context(), planFunc(func(context.Context, Request) (Plan, error) { return want, nil }), gateReq("db"))
	if err != nil || got != want {
		t.Fatalf("Plan = %+v, %v; want %+v", got, err, want)
	}
	done, err := g.Want(t.Context(), gateReq("db").Resource)
	if err != nil {
		t.Fatal(err)
	}
	done()
	if len(g.m) != 0 {
		t.Fatalf("entries left: %v", g.m)
	}
}

func TestPlanGateRefusesPlanWhileBusy(t *testing.T) {
	t.Parallel()
	never := planFunc(func(context.Context, Request) (Plan, error) {
		t.Error("the plugin was asked for a plan")
		return Plan{}, nil
	})
	for _, tc := range []struct {
		name string
		hold func(t *testing.T, g *PlanGate) (release func())
	}{
		{"a call runs", func(t *testing.T, g *PlanGate) func() {
			done, err := g.Want(t.Context(), gateReq("db").Resource)
			if err != nil {
				t.Fatal(err)
			}
			return done
		}},
		{"another plan runs", func(t *testing.T, g *PlanGate) func() {
			ctx, cancel := context.WithCancel(t.Context())
			res := make(chan error, 1)
			started := make(chan struct{})
			go func() {
				_, err := g.Plan(ctx, planFunc(func(ctx context.Context, _ Request) (Plan, error) {
					close(started)
					<-ctx.Done()
					return Plan{}, ctx.Err()
				}), gateReq("db"))
				res <- err
			}()
			<-started
			return func() { cancel(); <-res }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var g PlanGate
			release := tc.hold(t, &g)
			if _, err := g.Plan(t.Context(), never, gateReq("db")); !errors.Is(err, ErrPlanBusy) {
				t.Errorf("Plan while busy: %v, want ErrPlanBusy", err)
			}
			// Another resource is not held up.
			if _, err := g.Plan(t.Context(), planFunc(func(context.Context, Request) (Plan, error) { return Plan{}, nil }), gateReq("other")); err != nil {
				t.Errorf("Plan of another resource: %v", err)
			}
			release()
			if len(g.m) != 0 {
				t.Errorf("entries left: %v", g.m)
			}
		})
	}
}

func TestPlanGateCallStopsPlan(t *testing.T) {
	t.Parallel()
	var g PlanGate
	cause, res := blockingPlan(t, &g, gateReq("db"))
	done, err := g.Want(t.Context(), gateReq("db").Resource)
	if err != nil {
		t.Fatal(err)
	}
	// Want returned: the plan has returned too, stopped with the cause, reporting busy.
	select {
	case err := <-res:
		if !errors.Is(err, ErrPlanBusy) || err.Error() != "the resource is being reconciled: no plan now" {
			t.Errorf("the stopped plan's error = %v, want ErrPlanBusy", err)
		}
	default:
		t.Fatal("Want returned before the plan did")
	}
	if c := <-cause; !errors.Is(c, ErrPlanBusy) {
		t.Errorf("the plan's context cause = %v, want ErrPlanBusy", c)
	}
	done()
	if len(g.m) != 0 {
		t.Fatalf("entries left: %v", g.m)
	}
}

func TestPlanGateWantGivesUpWithItsContext(t *testing.T) {
	t.Parallel()
	var g PlanGate
	// A plan that ignores its cancellation until told.
	started, finish, res := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		_, err := g.Plan(t.Context(), planFunc(func(context.Context, Request) (Plan, error) {
			close(started)
			<-finish
			return Plan{}, nil
		}), gateReq("db"))
		res <- err
	}()
	<-started
	gone := errors.New("shutting down")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(gone)
	if _, err := g.Want(ctx, gateReq("db").Resource); !errors.Is(err, gone) {
		t.Errorf("Want with an ended context: %v, want its cause", err)
	}
	close(finish)
	if err := <-res; !errors.Is(err, ErrPlanBusy) {
		t.Errorf("the plan asked to stop: %v, want ErrPlanBusy", err)
	}
	if len(g.m) != 0 {
		t.Fatalf("entries left: %v", g.m)
	}
}

func TestNilPlanGatePassesThrough(t *testing.T) {
	t.Parallel()
	var g *PlanGate
	if _, err := g.Plan(t.Context(), planFunc(func(context.Context, Request) (Plan, error) { return Plan{}, ErrNoPlan }), gateReq("db")); !errors.Is(err, ErrNoPlan) {
		t.Errorf("nil gate Plan: %v, want the plugin's error", err)
	}
	done, err := g.Want(t.Context(), gateReq("db").Resource)
	if err != nil {
		t.Fatal(err)
	}
	done()
}
