package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestTimeline(t *testing.T) {
	t.Parallel()
	st := openTest(t, "infra")
	ctx := context.Background()
	applyRefreshed(t, st, "infra", "1111111111111111111111111111111111111111", chainSet())
	if _, err := st.RequestReconcileOverride(ctx, "prod", "app", "app", "user:ann", "INC-42"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `INSERT INTO reconcile_history (resource_uid, namespace, kind, name, generation, revision,
		operation, trigger, result, message, started_at, finished_at, actor)
		SELECT uid, namespace, kind, name, generation, revision, 'reconcile', 'manual', 'WindowClosed', 'held by freeze',
		  now(), now(), 'user:ann' FROM resources WHERE kind = 'App'`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `INSERT INTO notification_outbox (event, namespace, kind, name, message, state)
		VALUES ('Failed', 'prod', 'App', 'app', 'it failed', 'sent'), ('Failed', 'prod', 'Network', 'network', 'not this one', 'sent')`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `UPDATE sources SET pinned_revision = '1111111111111111111111111111111111111111',
		pinned_by = 'user:bob', pin_reason = 'bad deploy', pinned_at = now() WHERE name = 'infra'`); err != nil {
		t.Fatal(err)
	}
	tl, err := st.Timeline(ctx, Everything, "prod", "APP", "app", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range tl.Entries {
		got = append(got, fmt.Sprintf("%s %s %s %s %s", e.Kind, e.Reason, e.Result, e.Actor, e.Revision))
	}
	want := []string{
		"commit Created   111111111111",
		"wait WaitingForDependency   ",
		"operator ManualReconcile   ",
		"operator WindowOverridden   ",
		"attempt reconcile (manual) WindowClosed user:ann 1111111111111111111111111111111111111111",
		"notification Failed sent  ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("entries =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := 1; i < len(tl.Entries); i++ {
		if tl.Entries[i].Time.Before(tl.Entries[i-1].Time) {
			t.Errorf("entry %d is older than entry %d", i, i-1)
		}
	}
	if tl.Resource.Kind != "App" || len(tl.Dependencies) != 1 || tl.Dependencies[0].Resource.Name != "database" ||
		!tl.Dependencies[0].Exists || tl.Dependencies[0].Resource.APIVersion != "example.com/v1" {
		t.Errorf("resource %s, dependencies not Ready = %+v, want Database", tl.Resource.Kind, tl.Dependencies)
	}
	if tl.Pin == nil || tl.Pin.Actor != "user:bob" || tl.Pin.Reason != "bad deploy" || tl.Pin.At.IsZero() || tl.SourceSuspended {
		t.Errorf("pin = %+v, source suspended %v", tl.Pin, tl.SourceSuspended)
	}
	// The newest limit entries, still oldest first.
	tl, err = st.Timeline(ctx, Everything, "prod", "App", "app", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Entries) != 2 || tl.Entries[0].Kind != "attempt" || tl.Entries[1].Kind != "notification" {
		t.Errorf("limit 2 = %+v", tl.Entries)
	}
	if _, err := st.Timeline(ctx, Everything, "prod", "App", "nope", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing resource: %v, want ErrNotFound", err)
	}
	// A limit above 1000 is 1000, not the default.
	if _, err := st.Pool().Exec(ctx, `INSERT INTO events (namespace, kind, name, source, type, reason, message)
		SELECT 'prod', 'App', 'app', 'infra', 'Normal', 'Noted', 'note ' || i FROM generate_series(1, 120) i`); err != nil {
		t.Fatal(err)
	}
	if tl, err = st.Timeline(ctx, Everything, "prod", "App", "app", 5000); err != nil || len(tl.Entries) != 126 {
		t.Errorf("limit 5000: %v, %d entries, want 126", err, len(tl.Entries))
	}
	if _, err := st.Timeline(ctx, InNamespaces("dev"), "prod", "App", "app", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("resource out of scope: %v, want ErrNotFound", err)
	}
}
