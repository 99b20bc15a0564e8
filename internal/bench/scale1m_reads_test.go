package main

import (
	"context"
	"testing"

	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

// The reads1m fixture is settled rows: nothing due, the engine idle, so that the API's pacer
// (EngineBusy) does not pace the reads the bench measures. A plain INSERT into resources is
// due at once (the queue's insert trigger).
func TestReads1mFixtureIsSettled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, pgtest.NewDatabase(t, store.MigrateURL), store.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := writeReads1mFixture(ctx, st.Pool(), 1000); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := st.Pool().QueryRow(ctx, "SELECT count(*) FROM resources JOIN resource_queue USING (id)").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	busy, err := st.EngineBusy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	due, _, _, _, err := st.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rows != 1000 || busy || due != 0 {
		t.Errorf("after the fixture: %d rows with a queue entry, engine busy %v, %d due; want 1,000, idle, none due", rows, busy, due)
	}
}
