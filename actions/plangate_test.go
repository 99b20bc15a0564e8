package actions

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
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

// stopped checks, once Want has returned, that the plugin's plan had returned (it sends its
// context's cause just before), stopped by a call, and that the gate reported it busy.
func stopped(t *testing.T, what string, cause, res <-chan error) {
	t.Helper()
	select {
	case c := <-cause:
		if !errors.Is(c, ErrPlanBusy) {
			t.Errorf("%s: the plan's context cause = %v, want ErrPlanBusy", what, c)
		}
	default:
		t.Errorf("Want returned before %s did", what)
		return
	}
	if err := <-res; !errors.Is(err, ErrPlanBusy) || err.Error() != "the resource is being reconciled: no plan now" {
		t.Errorf("%s: the stopped plan's error = %v, want ErrPlanBusy", what, err)
	}
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
	var g PlanGate
	done, err := g.Want(t.Context(), gateReq("db").Resource)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Plan(t.Context(), never, gateReq("db")); !errors.Is(err, ErrPlanBusy) {
		t.Errorf("Plan while busy: %v, want ErrPlanBusy", err)
	}
	// Another resource is not held up.
	if _, err := g.Plan(t.Context(), planFunc(func(context.Context, Request) (Plan, error) { return Plan{}, nil }), gateReq("other")); err != nil {
		t.Errorf("Plan of another resource: %v", err)
	}
	done()
	if len(g.m) != 0 {
		t.Errorf("entries left: %v", g.m)
	}
}

// Plans of one resource run together (a plugin that plans once at a time refuses on its
// own); a call stops them all.
func TestPlanGatePlansRunTogether(t *testing.T) {
	t.Parallel()
	var g PlanGate
	cause1, res1 := blockingPlan(t, &g, gateReq("db"))
	cause2, res2 := blockingPlan(t, &g, gateReq("db"))
	done, err := g.Want(t.Context(), gateReq("db").Resource)
	if err != nil {
		t.Fatal(err)
	}
	stopped(t, "the first plan", cause1, res1)
	stopped(t, "the second plan", cause2, res2)
	done()
	if len(g.m) != 0 {
		t.Fatalf("entries left: %v", g.m)
	}
}

// The gate names a resource as the store and exec's lock do: the kind's case does not count.
func TestGateKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b Resource
		same bool
	}{
		{Resource{Namespace: "team-a", Kind: "Database", Name: "orders"}, Resource{Namespace: "team-a", Kind: "database", Name: "orders", UID: "u1"}, true},
		{Resource{Namespace: "team-a", Kind: "Database", Name: "orders"}, Resource{Namespace: "team-a", Kind: "Database", Name: "Orders"}, false},
		{Resource{Namespace: "team-a", Kind: "Database", Name: "orders"}, Resource{Namespace: "Team-a", Kind: "Database", Name: "orders"}, false},
		{Resource{Namespace: "a/b", Kind: "c", Name: "d"}, Resource{Namespace: "a", Kind: "b/c", Name: "d"}, true}, // not valid names: the store refuses "/" in them
	} {
		if got := gateKey(tc.a) == gateKey(tc.b); got != tc.same {
			t.Errorf("gateKey(%+v) == gateKey(%+v): %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}

// A reconcile whose kind is spelt otherwise than the pull request's stops its plan.
func TestPlanGateKindCase(t *testing.T) {
	t.Parallel()
	var g PlanGate
	req := gateReq("orders")
	req.Resource.Kind = "database"
	cause, res := blockingPlan(t, &g, req)
	done, err := g.Want(t.Context(), Resource{Namespace: "default", Kind: "Database", Name: "orders", UID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	stopped(t, "the plan", cause, res)
}

// A call waits StopWait at most for a plan that ignores its cancellation, then fails and
// is not made.
func TestPlanGateStopWait(t *testing.T) {
	t.Parallel()
	g := PlanGate{StopWait: 50 * time.Millisecond}
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
	done, err := g.Want(t.Context(), gateReq("db").Resource)
	if err == nil || done != nil || !strings.Contains(err.Error(), "did not stop within 50ms") {
		t.Errorf("Want past StopWait: %v, want it to fail", err)
	}
	close(finish)
	if err := <-res; !errors.Is(err, ErrPlanBusy) {
		t.Errorf("the plan asked to stop: %v, want ErrPlanBusy", err)
	}
	if len(g.m) != 0 {
		t.Fatalf("entries left: %v", g.m)
	}
}

// arbitrated is a PlanArbitrated planner with a gate of its own.
type arbitrated struct {
	planFunc
	gate PlanGate
}

func (a *arbitrated) PlanGate() *PlanGate { return &a.gate }

func TestGateFor(t *testing.T) {
	t.Parallel()
	shared := &PlanGate{}
	own := &arbitrated{}
	plain := planFunc(func(context.Context, Request) (Plan, error) { return Plan{}, nil })
	for _, tc := range []struct {
		name   string
		shared *PlanGate
		act    any
		want   *PlanGate
	}{
		{"not arbitrated, shared gate", shared, plain, nil},
		{"not arbitrated, no shared gate", nil, plain, nil},
		{"arbitrated, shared gate", shared, own, shared},
		{"arbitrated, no shared gate", nil, own, &own.gate},
		{"not a planner", shared, struct{}{}, nil},
	} {
		if got := GateFor(tc.shared, tc.act); got != tc.want {
			t.Errorf("%s: GateFor = %p, want %p", tc.name, got, tc.want)
		}
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
	stopped(t, "the plan", cause, res)
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
