package preview

import (
	"context"
	"testing"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
)

// A plan gives way to a reconcile of its resource on any replica (issue 19, 4): the plugin's
// lock is a file of one host, so the preview asks the database whether a reconcile holds the
// resource (a lease that has not expired) and then skips the plan without calling the action.
// A lease whose holder stopped renewing does not hold it.
func TestPlanGivesWayToAClaimedResource(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, store.SourceConfig{Name: "infra"})
	set, err := manifest.NewLoader().Load([]sources.File{{Path: "types.yaml", Data: []byte(typeDoc)}, {Path: "q.yaml", Data: []byte(queueDoc("a", 1))}}, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyRevision(ctx, store.ApplyParams{Source: "infra", Revision: "r1", Set: set}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, lease string // lease: the SET clause of the resource's claim
		wantStatus  string
	}{
		{"claimed on another replica", `lease_owner = 'replica-b', lease_token = gen_random_uuid(), lease_expires_at = now() + interval '1 hour'`, "skipped"},
		{"lease expired", `lease_owner = 'replica-b', lease_token = gen_random_uuid(), lease_expires_at = now() - interval '1 second'`, "planned"},
		{"not claimed", `lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL`, "planned"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := st.Pool().Exec(ctx, `UPDATE resource_queue SET `+tt.lease+` WHERE id IN (SELECT id FROM resources WHERE name = 'a')`); err != nil {
				t.Fatal(err)
			}
			act := &withRecorder{}
			c := &Checker{Source: "infra", Store: st, Loader: manifest.NewLoader(), Actions: map[string]actions.Action{"planner": act}}
			out, _, err := c.Check(ctx, &sources.Snapshot{Revision: "pr", Files: []sources.File{{Path: "types.yaml", Data: []byte(typeDoc)},
				{Path: "q.yaml", Data: []byte(queueDoc("a", 2))}}})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Changes) != 1 || out.Changes[0].Plan == nil {
				t.Fatalf("changes %+v", out.Changes)
			}
			plan := out.Changes[0].Plan
			switch {
			case plan.Status != tt.wantStatus:
				t.Errorf("plan %+v, want %s", plan, tt.wantStatus)
			case tt.wantStatus == "skipped" && (len(act.withs) != 0 || plan.Summary != reconcilingSkipped):
				t.Errorf("plan %+v after %d calls; want skipped without a call: %s", plan, len(act.withs), reconcilingSkipped)
			case tt.wantStatus == "planned" && len(act.withs) != 1:
				t.Errorf("%d plan calls, want 1", len(act.withs))
			}
		})
	}
}
