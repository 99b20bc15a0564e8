package preview

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
)

type planFunc func(context.Context, actions.Request) (actions.Plan, error)

func (f planFunc) Plan(ctx context.Context, req actions.Request) (actions.Plan, error) {
	return f(ctx, req)
}

// arbitrated is a planner that asks for arbitration, with no gate of its own: the host's is
// used.
type arbitrated struct{ planFunc }

func (arbitrated) PlanGate() *actions.PlanGate { return nil }

// A preview plans an actions.PlanArbitrated plugin through the gate the reconciler calls
// through: a resource being reconciled in this process is not planned, and the preview says
// why, as when another replica holds it (skipped). Other plugins plan alongside.
func TestPlanOneThroughTheGate(t *testing.T) {
	t.Parallel()
	c := &Checker{Plans: &actions.PlanGate{}}
	req := actions.Request{Resource: actions.Resource{Namespace: "default", Kind: "Database", Name: "db"}}
	asked := false
	plain := planFunc(func(context.Context, actions.Request) (actions.Plan, error) {
		asked = true
		return actions.Plan{Changes: true, Summary: "1 to add"}, nil
	})
	p := arbitrated{plain}
	done, err := c.Plans.Want(t.Context(), req.Resource)
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := c.planOne(t.Context(), plain, req, time.Minute, nil); out.Status != "planned" || !asked {
		t.Errorf("plan of a plugin without arbitration while reconciling: %+v", out)
	}
	asked = false
	out, _ := c.planOne(t.Context(), p, req, time.Minute, nil)
	done()
	if asked || out.Status != "skipped" || out.Summary != reconcilingSkipped || out.Error != "" {
		t.Errorf("plan while reconciling: %+v (plugin asked: %v); want it refused as busy", out, asked)
	}
	if out, _ := c.planOne(t.Context(), p, req, time.Minute, nil); out.Status != "planned" || !asked {
		t.Errorf("plan once the reconcile ended: %+v", out)
	}
}

// A plugin that refuses a plan because another plan holds the resource is shown skipped, and
// says so.
func TestPlanOneAnotherPlan(t *testing.T) {
	t.Parallel()
	c := &Checker{}
	req := actions.Request{Resource: actions.Resource{Namespace: "default", Kind: "Database", Name: "db"}}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{actions.ErrPlanInProgress, planningSkipped},
		{fmt.Errorf("workspace: %w", actions.ErrPlanBusy), reconcilingSkipped},
	} {
		p := planFunc(func(context.Context, actions.Request) (actions.Plan, error) { return actions.Plan{}, tc.err })
		if out, _ := c.planOne(t.Context(), p, req, time.Minute, nil); out.Status != "skipped" || out.Summary != tc.want {
			t.Errorf("plan refused with %v: %+v, want skipped: %s", tc.err, out, tc.want)
		}
	}
}
