package store

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/notify"
	"github.com/trueup-dev/trueup/internal/status"
)

func TestAbandon(t *testing.T) {
	st := openTest(t, "s")
	ctx := context.Background()
	applyRefreshed(t, st, "s", "r1", chainSet())
	for _, out := range []map[string]any{{"subnet": "s-1"}, {"endpoint": "db:5432"}, {}} {
		_, cs := claimNames(t, st)
		succeed(t, st, cs[0], out)
	}
	abandon := func(kind string) error {
		_, err := st.Abandon(ctx, AbandonParams{Namespace: "prod", Kind: kind, Name: strings.ToLower(kind), Actor: "user:ann", Reason: "module gone"})
		return err
	}

	// The manifest is still in Git: refused, nothing written.
	if err := abandon("Network"); !errors.Is(err, ErrNotRemoved) || !strings.Contains(err.Error(), "network.yaml of source s") {
		t.Fatalf("abandon of a resource in Git: %v", err)
	}
	if err := abandon("Nothing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("abandon of a missing resource: %v", err)
	}

	// Network removed while Database still references it: its delete waits for Database for
	// as long as Database stays. Abandoned, it goes; Database sees it missing.
	applyRefreshed(t, st, "s", "r2", chainSet("Network"))
	if phase, c := condition(t, st, "Network", status.DependentsDeleted); phase != status.PhaseDeleting || c.Status != status.False {
		t.Fatalf("Network before the abandon: %s %+v", phase, c)
	}
	if err := abandon("network"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM resources WHERE kind = 'Network'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("Network rows after the abandon: %d %v", n, err)
	}
	if _, c := condition(t, st, "Database", status.DependenciesReady); c.Status != status.False ||
		c.Message != "waiting for Network/prod/network (not found)" {
		t.Fatalf("Database after its dependency was abandoned: %+v", c)
	}
	var op, result, actor, hmsg string
	if err := st.pool.QueryRow(ctx, `SELECT operation, result, actor, message FROM reconcile_history
		WHERE name = 'network' ORDER BY id DESC LIMIT 1`).Scan(&op, &result, &actor, &hmsg); err != nil {
		t.Fatal(err)
	}
	if op != OperationAbandon || result != ResultAbandoned || actor != "user:ann" || !strings.Contains(hmsg, "abandoned by user:ann: module gone") {
		t.Errorf("history: %s %s %s %q", op, result, actor, hmsg)
	}
	var typ, emsg string
	if err := st.pool.QueryRow(ctx, `SELECT type, message FROM events WHERE name = 'network' AND reason = $1`, ReasonAbandoned).
		Scan(&typ, &emsg); err != nil {
		t.Fatal(err)
	}
	if typ != EventWarning || !strings.Contains(emsg, "abandoned by user:ann: module gone") {
		t.Errorf("event: %s %q", typ, emsg)
	}
	var event string
	if err := st.pool.QueryRow(ctx, `SELECT event FROM notification_outbox WHERE name = 'network'`).Scan(&event); err != nil || event != notify.Abandoned {
		t.Errorf("outbox: %q %v", event, err)
	}
	var change string
	if err := st.pool.QueryRow(ctx, `SELECT type FROM changes WHERE name = 'network' ORDER BY id DESC LIMIT 1`).Scan(&change); err != nil ||
		change != string(ChangeDeleted) {
		t.Errorf("changes feed: %q %v", change, err)
	}

	// A delete in flight: abandoned, its result is discarded (lease lost).
	applyRefreshed(t, st, "s", "r3", &manifest.Set{Resources: []manifest.Resource{{APIVersion: "example.com/v1", Kind: "Other",
		Namespace: "prod", Name: "x", Labels: map[string]string{}, Annotations: map[string]string{}, Spec: json.RawMessage(`{}`),
		SpecHash: "{}", MetaHash: "m", File: "x.yaml", Line: 1}}})
	kinds, cs := claimNames(t, st)
	if !slices.Contains(kinds, "App") {
		t.Fatalf("claimed %v, want App's delete", kinds)
	}
	if err := abandon("App"); err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Kind != "App" {
			continue
		}
		err := st.Complete(ctx, c.ID, c.LeaseToken, func(Current) Update { return Update{Remove: true} })
		if !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("the abandoned delete's result: %v, want ErrLeaseLost", err)
		}
	}
	// Database, whose dependent is gone, is deleted next.
	if kinds, _ := claimNames(t, st); !slices.Equal(kinds, []string{"Database"}) {
		t.Fatalf("claimed %v after App was abandoned, want Database", kinds)
	}
}

// TestAbandonWaitsForTheSourcesApply: an abandon takes the apply's per-source lock before it
// locks the row, so that it cannot commit between an apply's read of the rows and its row
// locks. Here the test holds the lock as an apply that restores the manifest would: the
// abandon waits, the restore commits, and the abandon is refused (the manifest is back)
// instead of deleting the row the apply just restored.
func TestAbandonWaitsForTheSourcesApply(t *testing.T) {
	st := openTest(t, "s")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	applyRefreshed(t, st, "s", "r1", chainSet())
	applyRefreshed(t, st, "s", "r2", chainSet("App"))

	apply, err := st.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = apply.Rollback(ctx) }()
	if _, err := apply.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('trueup.source:' || $1))", "s"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := st.Abandon(ctx, AbandonParams{Namespace: "prod", Kind: "App", Name: "app", Actor: "user:ann", Reason: "stuck"})
		done <- err
	}()
	for waiting := false; !waiting; {
		select {
		case err := <-done:
			t.Fatalf("the abandon ended (%v) while the source's apply held its lock", err)
		default:
		}
		if err := st.pool.QueryRow(ctx, `SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if ctx.Err() != nil {
			t.Fatal("the abandon never waited for the source's apply")
		}
		time.Sleep(10 * time.Millisecond) // poll
	}
	// What the apply does once it has locked the row: the manifest is back.
	if tag, err := apply.Exec(ctx, `UPDATE resources SET deletion_timestamp = NULL, revision = 'r3' WHERE kind = 'App'`); err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("restore: %v %v", tag, err)
	}
	if err := apply.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrNotRemoved) {
		t.Fatalf("abandon after the manifest came back: %v, want ErrNotRemoved", err)
	}
	var n int
	if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM resources WHERE kind = 'App' AND deletion_timestamp IS NULL`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("App after the race: %d rows %v, want it kept", n, err)
	}
}
