package store

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestOutboxWrittenWithResults: the transitions a batch of results makes are in the outbox
// after the commit, read with the resource's identity; a resync that changes nothing adds
// nothing.
func TestOutboxWrittenWithResults(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	seed(t, st,
		seedRow{name: "fails", source: "infra", revision: "r1", phase: "Pending", generation: 1},
		seedRow{name: "recovers", source: "infra", revision: "r1", phase: "Failed", generation: 1},
		seedRow{name: "goes", source: "infra", revision: "r1", phase: "Deleting", generation: 1, deleting: true},
		seedRow{name: "quiet", source: "infra", revision: "r1", phase: "Ready", generation: 1, observed: 1},
		seedRow{name: "drifts", source: "infra", revision: "r1", phase: "Ready", generation: 1, observed: 1},
	)
	if _, err := st.pool.Exec(ctx, "WITH r AS (UPDATE resources SET labels = '{\"tier\":\"critical\"}' RETURNING id) UPDATE resource_queue q SET run_at = now() FROM r WHERE q.id = r.id"); err != nil {
		t.Fatal(err)
	}
	claimed, err := st.Claim(ctx, "a", 10, time.Minute)
	if err != nil || len(claimed) != 5 {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	var items []Completion
	for _, c := range claimed {
		u := Update{Phase: "Ready", ObservedGeneration: 1, Message: "ok"}
		switch c.Name {
		case "fails":
			u = Update{Phase: "Failed", Message: "boom"}
		case "goes":
			u = Update{Remove: true}
		case "drifts":
			u.Drifted = true
		}
		items = append(items, Completion{ID: c.ID, Token: c.LeaseToken, Fn: func(Current) Update { return u }})
	}
	if lost, _, err := st.CompleteResults(ctx, items); err != nil || len(lost) != 0 {
		t.Fatalf("complete: %v, %v", lost, err)
	}
	got, err := st.ListOutbox(ctx, OutboxPending, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range got {
		names = append(names, e.Name+":"+e.Event)
		if e.Source != "infra" || e.Revision != "r1" || e.Labels["tier"] != "critical" || e.Kind != "Queue" {
			t.Errorf("entry %+v lacks the resource's identity", e)
		}
	}
	sort.Strings(names)
	if want := "drifts:Drifted fails:Failed goes:Deleted recovers:Recovered"; strings.Join(names, " ") != want {
		t.Fatalf("outbox = %v, want %s", names, want)
	}

	due, err := st.DueOutbox(ctx, 10)
	if err != nil || len(due) != 4 {
		t.Fatalf("due: %d, %v", len(due), err)
	}
	if err := st.FinishOutbox(ctx, []OutboxResult{{ID: due[3].ID, State: OutboxSent}}); err != nil {
		t.Fatal(err)
	}
	due = due[:3]
	res := []OutboxResult{
		{ID: due[0].ID, State: OutboxSent, Done: []string{"r/p"}, Attempts: 1},
		{ID: due[1].ID, State: OutboxDead, Attempts: 5, Error: "provider said 500"},
		{ID: due[2].ID, State: OutboxPending, Attempts: 1, NextAttempt: time.Now().Add(time.Hour), Done: []string{"r/a"}},
	}
	if err := st.FinishOutbox(ctx, res); err != nil {
		t.Fatal(err)
	}
	if due, err := st.DueOutbox(ctx, 10); err != nil || len(due) != 0 {
		t.Fatalf("due after finish: %v, %v", due, err)
	}
	dead, err := st.ListOutbox(ctx, OutboxDead, 0)
	if err != nil || len(dead) != 1 || dead[0].LastError != "provider said 500" || dead[0].FinishedAt == nil {
		t.Fatalf("dead: %+v, %v", dead, err)
	}
	pend, err := st.ListOutbox(ctx, OutboxPending, 0)
	if err != nil || len(pend) != 1 || len(pend[0].Done) != 1 || pend[0].Done[0] != "r/a" {
		t.Fatalf("pending: %+v, %v", pend, err)
	}
}

// TestOutboxSyncFailure: a rejected revision is told once, with its file:line (origin) errors,
// which the source keeps; a fetch failure is not told.
func TestOutboxSyncFailure(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	if err := st.RegisterSource(ctx, SourceConfig{Name: "infra", URL: "file:///x", Branch: "main"}); err != nil {
		t.Fatal(err)
	}
	f := SyncFailure{Source: "infra", Revision: "abc", Reason: "ValidationFailed", Message: "1 error",
		Errors: []SourceError{{File: "db.yaml", Line: 3, Message: "spec.size: required"},
			{File: "sets/x.yaml", Line: 13, Path: "spec.size", Message: "spec.size: required", Origin: "tenant=a, region=eu"}}}
	for range 2 {
		if err := st.RecordSyncFailure(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	if src, err := st.GetSource(ctx, "infra"); err != nil || !reflect.DeepEqual(src.Errors, f.Errors) {
		t.Fatalf("source errors %+v, %v; want %+v", src.Errors, err, f.Errors)
	}
	if err := st.RecordSyncFailure(ctx, SyncFailure{Source: "infra", Reason: "FetchFailed", Message: "no route"}); err != nil {
		t.Fatal(err)
	}
	got, err := st.ListOutbox(ctx, "", 0)
	if err != nil || len(got) != 1 {
		t.Fatalf("outbox: %+v, %v", got, err)
	}
	if e := got[0]; e.Event != "SourceRejected" || e.Revision != "abc" || e.Message != "1 error\ndb.yaml:3: spec.size: required\nsets/x.yaml:13 (tenant=a, region=eu): spec.size: required" {
		t.Fatalf("entry %+v", e)
	}
}

func TestTrimOutbox(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	var entries []OutboxEntry
	for range 4 {
		entries = append(entries, OutboxEntry{Event: "Failed", Namespace: "ns", Kind: "Queue", Name: "q"})
	}
	if err := st.AddOutbox(ctx, entries); err != nil {
		t.Fatal(err)
	}
	due, err := st.DueOutbox(ctx, 10)
	if err != nil || len(due) != 4 {
		t.Fatalf("due: %v, %v", due, err)
	}
	// 0: sent long ago, 1: sent just now, 2: dead long ago, 3: pending.
	if err := st.FinishOutbox(ctx, []OutboxResult{{ID: due[0].ID, State: OutboxSent}, {ID: due[1].ID, State: OutboxSent}, {ID: due[2].ID, State: OutboxDead}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.pool.Exec(ctx, `UPDATE notification_outbox SET finished_at = now() - interval '40 days' WHERE id = ANY($1)`, []int64{due[0].ID, due[2].ID}); err != nil {
		t.Fatal(err)
	}
	n, err := st.TrimOutbox(ctx, 7*24*time.Hour, 30*24*time.Hour, 100)
	if err != nil || n != 2 {
		t.Fatalf("trimmed %d, %v", n, err)
	}
	left, err := st.ListOutbox(ctx, "", 0)
	if err != nil || len(left) != 2 || left[0].ID != due[3].ID || left[1].ID != due[1].ID {
		t.Fatalf("left: %+v, %v", left, err)
	}
}

// TestFinishOutboxMergesDone: a result's done is merged into what the entry holds, so a
// target recorded meanwhile (MarkOutboxDelivered) is not lost; a delivery id recorded for a
// target stays the first one.
func TestFinishOutboxMergesDone(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	if err := st.AddOutbox(ctx, []OutboxEntry{{Event: "Failed", Namespace: "ns", Kind: "Queue", Name: "q"}}); err != nil {
		t.Fatal(err)
	}
	due, err := st.DueOutbox(ctx, 10)
	if err != nil || len(due) != 1 {
		t.Fatalf("due: %v, %v", due, err)
	}
	id := due[0].ID
	if err := st.StartOutboxDelivery(ctx, []int64{id}, "all/mail", "first"); err != nil {
		t.Fatal(err)
	}
	if err := st.StartOutboxDelivery(ctx, []int64{id}, "all/mail", "second"); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkOutboxDelivered(ctx, []int64{id}, "all/mail"); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishOutbox(ctx, []OutboxResult{{ID: id, State: OutboxPending, Done: []string{"all/slack", "all/hook"}, Attempts: 1, NextAttempt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	due, err = st.DueOutbox(ctx, 10)
	if err != nil || len(due) != 1 {
		t.Fatalf("due: %v, %v", due, err)
	}
	if got := strings.Join(due[0].Done, ","); got != "all/hook,all/mail,all/slack" {
		t.Errorf("done %s, want all/hook,all/mail,all/slack", got)
	}
	if got := due[0].Deliveries["all/mail"]; got != "first" || len(due[0].Deliveries) != 1 {
		t.Errorf("deliveries %v, want all/mail: first", due[0].Deliveries)
	}
}
