package preview

import (
	"context"
	"strings"
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
// why. Other plugins plan alongside.
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
	if out := c.planOne(t.Context(), plain, req, time.Minute, nil); out.Status != "planned" || !asked {
		t.Errorf("plan of a plugin without arbitration while reconciling: %+v", out)
	}
	asked = false
	out := c.planOne(t.Context(), p, req, time.Minute, nil)
	done()
	if asked || out.Status != "error" || !strings.Contains(out.Error, "being reconciled") {
		t.Errorf("plan while reconciling: %+v (plugin asked: %v); want it refused as busy", out, asked)
	}
	if out := c.planOne(t.Context(), p, req, time.Minute, nil); out.Status != "planned" || !asked {
		t.Errorf("plan once the reconcile ended: %+v", out)
	}
}
