package store

import (
	"context"
	"reflect"
	"testing"
)

// seedRow inserts one resource row as the syncer and the reconciler would leave it.
type seedRow struct {
	name, source, revision, phase string
	generation, observed          int64
	deleting, stalled             bool
	attempt                       int
	message                       string
}

func seed(t *testing.T, st *Store, rows ...seedRow) {
	t.Helper()
	for _, r := range rows {
		conds := `[{"type":"Ready","status":"Unknown"}]`
		if r.stalled {
			conds = `[{"type":"Ready","status":"False"},{"type":"Stalled","status":"True","reason":"ActionRejected"}]`
		}
		_, err := st.pool.Exec(context.Background(), `INSERT INTO resources (namespace, kind, name, api_version, source, revision,
			  spec_hash, meta_hash, phase, generation, observed_generation, conditions, attempt, message, deletion_timestamp)
			VALUES ('default', 'Queue', $1, 'mq.example.com/v1', $2, $3, 'h', 'm', $4, $5, $6, $7::jsonb, $8, $9,
			  CASE WHEN $10 THEN now() END)`,
			r.name, r.source, r.revision, r.phase, r.generation, r.observed, conds, r.attempt, r.message, r.deleting)
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestRevisionProgress(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	if _, err := st.pool.Exec(ctx, `INSERT INTO sources (name, revision) VALUES ('infra', 'r2')`); err != nil {
		t.Fatal(err)
	}
	seed(t, st,
		seedRow{name: "ready", source: "infra", revision: "r2", phase: "Ready", generation: 2, observed: 2},
		// Ready for its previous generation only: the new one is still to come.
		seedRow{name: "stale-ready", source: "infra", revision: "r2", phase: "Ready", generation: 3, observed: 2},
		seedRow{name: "pending", source: "infra", revision: "r2", phase: "Pending", generation: 1},
		seedRow{name: "reconciling", source: "infra", revision: "r2", phase: "Reconciling", generation: 2, observed: 1},
		seedRow{name: "retrying", source: "infra", revision: "r2", phase: "Failed", generation: 1, attempt: 2, message: "quota exceeded"},
		seedRow{name: "stalled", source: "infra", revision: "r2", phase: "Failed", generation: 1, observed: 1, stalled: true, message: "bad engine"},
		// Deletions count whatever revision last changed the row.
		seedRow{name: "deleting", source: "infra", revision: "r1", phase: "Deleting", generation: 1, observed: 1, deleting: true},
		seedRow{name: "delete-failed", source: "infra", revision: "r1", phase: "Deleting", generation: 1, observed: 1, deleting: true, attempt: 1, message: "delete failed: 503"},
		// Not this revision, not this source.
		seedRow{name: "older", source: "infra", revision: "r1", phase: "Failed", generation: 1, message: "old"},
		seedRow{name: "other-source", source: "apps", revision: "r2", phase: "Failed", generation: 1, message: "x"},
	)
	got, err := st.RevisionProgress(ctx, "infra", "r2")
	if err != nil {
		t.Fatal(err)
	}
	want := RevisionProgress{Total: 8, Ready: 1, Failed: 3, Pending: 4, Stalled: 1, Failures: []string{
		"Queue default/delete-failed: delete failed: 503",
		"Queue default/retrying: quota exceeded",
		"Queue default/stalled: bad engine",
	}, SourceRevision: "r2"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if got.Settled() {
		t.Error("settled with pending resources")
	}

	// A revision that changed nothing (and a source with nothing being deleted) is done.
	got, err = st.RevisionProgress(ctx, "apps", "r9")
	if err != nil {
		t.Fatal(err)
	}
	if got.Total != 0 || !got.Settled() || len(got.Failures) != 0 || got.SourceRevision != "" {
		t.Errorf("empty revision: %+v", got)
	}
}

func TestRevisionProgressFailuresBounded(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	var rows []seedRow
	for _, n := range []string{"g", "f", "e", "d", "c", "b", "a"} {
		rows = append(rows, seedRow{name: n, source: "infra", revision: "r1", phase: "Failed", generation: 1})
	}
	seed(t, st, rows...)
	got, err := st.RevisionProgress(context.Background(), "infra", "r1")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Queue default/a: failed", "Queue default/b: failed", "Queue default/c: failed", "Queue default/d: failed", "Queue default/e: failed"}
	if got.Failed != 7 || !reflect.DeepEqual(got.Failures, want) || !got.Settled() {
		t.Errorf("got %+v", got)
	}
}
