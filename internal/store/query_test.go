package store

import (
	"context"
	"reflect"
	"testing"
	"time"
)

// TestResourceDependsOnAsWritten: a resource read by the list or alone carries its edges in
// identity order, each dependency's kind as written (queue, not the target's Queue), without
// the dependency's state; a resource without edges has none.
func TestResourceDependsOnAsWritten(t *testing.T) {
	t.Parallel()
	st := graphSeed(t)
	ctx := context.Background()
	list, _, err := st.ListResources(ctx, Everything, ResourceFilter{Namespace: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]ResourceEdge{}
	for _, r := range list {
		got[r.Metadata.Name] = r.DependsOn
	}
	want := map[string][]ResourceEdge{
		"app": {
			{NodeRef: NodeRef{"queue", "prod", "db"}, Explicit: true, Outputs: []string{"endpoint"}},
			{NodeRef: NodeRef{"Secret", "prod", "creds"}, Explicit: true, Outputs: []string{}},
		},
		"db": {
			{NodeRef: NodeRef{"Queue", "dev", "shared"}, Explicit: true, Outputs: []string{}},
			{NodeRef: NodeRef{"Queue", "prod", "net"}, Outputs: []string{"subnetId", "port"}},
		},
		"net":   nil,
		"alone": nil,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("dependsOn by resource\n%+v\nwant\n%+v", got, want)
	}
	one, err := st.GetResource(ctx, "prod", "Queue", "app")
	if err != nil || !reflect.DeepEqual(one.DependsOn, want["app"]) {
		t.Errorf("app alone: %+v %v", one.DependsOn, err)
	}
}

// TestNextReconcileTimeAsTheDueIndex: the next reconcile time a resource shows, alone and
// listed, is its run_at exactly when the due index (resource_queue_due) holds the row: not leased,
// not suspended, not blocked.
func TestNextReconcileTimeAsTheDueIndex(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	if _, err := st.Pool().Exec(ctx, `INSERT INTO resources (namespace, kind, name, api_version, source, spec_hash, meta_hash)
		VALUES ('default', 'Thing', 'x', 'v1', 'src', 'h', 'h')`); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	past, future := now.Add(-time.Hour), now.Add(time.Hour)
	replica := "replica-1"
	for _, runAt := range []*time.Time{nil, &past, &future} {
		for _, lease := range []*string{nil, &replica} {
			for _, susp := range []bool{false, true} {
				for _, blocked := range []bool{false, true} {
					if _, err := st.Pool().Exec(ctx, `UPDATE resource_queue SET run_at = $1, lease_owner = $2, suspended = $3, blocked = $4`, runAt, lease, susp, blocked); err != nil {
						t.Fatal(err)
					}
					var due *time.Time
					if err := st.Pool().QueryRow(ctx, `SELECT CASE WHEN lease_owner IS NULL AND NOT suspended AND NOT blocked THEN run_at END FROM resource_queue`).Scan(&due); err != nil {
						t.Fatal(err)
					}
					r, err := st.GetResource(ctx, "default", "Thing", "x")
					if err != nil {
						t.Fatal(err)
					}
					list, _, err := st.ListResources(ctx, Everything, ResourceFilter{})
					if err != nil || len(list) != 1 {
						t.Fatal(err, len(list))
					}
					for _, got := range []*time.Time{r.Status.NextReconcileTime, list[0].Status.NextReconcileTime} {
						if (got == nil) != (due == nil) || got != nil && !got.Equal(*due) {
							t.Errorf("run_at %v, leased %v, suspended %v, blocked %v: next reconcile %v, want %v", runAt, lease != nil, susp, blocked, got, due)
						}
					}
				}
			}
		}
	}
}
