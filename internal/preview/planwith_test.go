package preview

import (
	"context"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
)

// withRecorder records the with: parameters each Plan gets.
type withRecorder struct {
	planner
	withs []string
}

func (w *withRecorder) Plan(ctx context.Context, req actions.Request) (actions.Plan, error) {
	w.mu.Lock()
	w.withs = append(w.withs, string(req.With))
	w.mu.Unlock()
	return actions.Plan{Changes: true}, nil
}

// The with: a plan gets (github-actions planWorkflow/workflow/ref, gitlab planJob/variables)
// chooses what runs for it: it is the applied type's, never the pull request's.
func TestPlanUsesTheAppliedTypesAction(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, store.SourceConfig{Name: "infra"})
	withType := func(with string) string {
		return strings.Replace(typeDoc, "action: {name: planner}", "action: {name: planner, with: "+with+"}", 1)
	}
	appliedType := withType("{workflow: plan.yml, planWorkflow: plan.yml}")
	set, err := manifest.NewLoader().Load([]sources.File{{Path: "types.yaml", Data: []byte(appliedType)}, {Path: "q.yaml", Data: []byte(queueDoc("a", 1))}}, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyRevision(ctx, store.ApplyParams{Source: "infra", Revision: "r1", Set: set}); err != nil {
		t.Fatal(err)
	}
	const changed = "the pull request changes the type's action: not planned before merge"
	tests := []struct {
		name, types string
		wantWith    string // "" : no plan
		wantSummary string
	}{
		{"same action", appliedType, `{"planWorkflow":"plan.yml","workflow":"plan.yml"}`, ""},
		{"with changed", withType("{workflow: deploy.yml, planWorkflow: deploy.yml, ref: main}"), "", changed},
		{"with added", withType("{workflow: plan.yml, planWorkflow: plan.yml, inputs: {x: y}}"), "", changed},
		{"action renamed", strings.Replace(appliedType, "name: planner", "name: other", 1), "", changed},
		{"type added", strings.ReplaceAll(strings.Replace(appliedType, "name: Queue", "name: Topic", 1), "mq.example.com", "mq2.example.com"), "",
			"the pull request adds the type: not planned before merge"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			act := &withRecorder{}
			c := &Checker{Source: "infra", Store: st, Loader: manifest.NewLoader(), Prune: false, Actions: map[string]actions.Action{"planner": act, "other": act}}
			res := queueDoc("a", 2)
			if tt.name == "type added" {
				res = strings.Replace(strings.Replace(queueDoc("b", 1), "Queue", "Topic", 1), "mq.example.com", "mq2.example.com", 1)
				tt.types = appliedType + "---\n" + tt.types
			}
			out, _, err := c.Check(ctx, &sources.Snapshot{Revision: "pr", Files: []sources.File{{Path: "types.yaml", Data: []byte(tt.types)}, {Path: "q.yaml", Data: []byte(res)}}})
			if err != nil {
				t.Fatal(err)
			}
			var ch *Change
			for i := range out.Changes {
				if out.Changes[i].Op != "delete" {
					ch = &out.Changes[i]
				}
			}
			if ch == nil || ch.Plan == nil {
				t.Fatalf("no planned change: %+v", out)
			}
			if tt.wantWith == "" {
				if len(act.withs) != 0 || ch.Plan.Status != "skipped" || ch.Plan.Summary != tt.wantSummary {
					t.Errorf("planned with %q, plan %+v; want skipped: %s", act.withs, ch.Plan, tt.wantSummary)
				}
				return
			}
			if len(act.withs) == 1 {
				c, _ := manifest.Canonical([]byte(act.withs[0]))
				act.withs[0] = string(c)
			}
			if len(act.withs) != 1 || act.withs[0] != tt.wantWith || ch.Plan.Status != "planned" {
				t.Errorf("planned with %q, plan %+v; want %s", act.withs, ch.Plan, tt.wantWith)
			}
		})
	}
}
