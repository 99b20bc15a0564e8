package reconciler

import (
	"context"
	"errors"
	"testing"

	"github.com/trueup-dev/trueup/actions"
)

// planningAction reconciles by calling reconcile; it plans until its context ends.
type planningAction struct {
	started   chan struct{}
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
	<-ctx.Done()
	return actions.Plan{}, context.Cause(ctx)
}

// A call of the reconciler stops the plan in progress of its resource through the gate the
// previews plan through, and calls the plugin once the plan has returned.
func TestCallStopsPlanOfItsResource(t *testing.T) {
	t.Parallel()
	for _, deleting := range []bool{false, true} {
		r := newTestReconciler()
		r.opts.Plans = &actions.PlanGate{}
		req := actions.Request{Resource: actions.Resource{Namespace: "default", Kind: "Database", Name: "db", UID: "u1"}}
		planErr := make(chan error, 1)
		act := &planningAction{started: make(chan struct{})}
		act.reconcile = func() (actions.Result, error) {
			select {
			case err := <-planErr:
				planErr <- err
			default:
				t.Error("the plugin was called before the plan returned")
			}
			return actions.Result{Done: true}, nil
		}
		go func() {
			preq := req
			preq.Resource.UID = "" // a preview's resource carries none
			_, err := r.opts.Plans.Plan(t.Context(), act, preq)
			planErr <- err
		}()
		<-act.started
		a := attempt{op: "reconcile", trigger: "spec-changed"}
		r.call(t.Context(), act, "fake", req, deleting, nil, &a)
		if a.err != nil || !a.res.Done {
			t.Fatalf("deleting=%v: call = %+v, %v", deleting, a.res, a.err)
		}
		if err := <-planErr; !errors.Is(err, actions.ErrPlanBusy) {
			t.Errorf("deleting=%v: the plan's error = %v, want ErrPlanBusy", deleting, err)
		}
	}
}
