package reconciler

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
)

// The start writer keeps every start until it is stored: a start that does not fit in the
// channel waits in the pending list, and a batch the database refuses is tried again. Both
// calls here end with their start stored, so a release would show them interrupted.
func TestStartWriterKeepsAndRetriesStarts(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	st := openGated(ctx, t)
	pool := st.Pool()
	if _, err := pool.Exec(ctx, "UPDATE resource_queue SET run_at = now()"); err != nil {
		t.Fatal(err)
	}
	claimed, err := st.Claim(ctx, "r1", 10, time.Minute)
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claim: %d, %v", len(claimed), err)
	}
	// The database refuses to store a start until the test lets it: a trigger counts each
	// refusal on a sequence (not rolled back with the transaction).
	if _, err := pool.Exec(ctx, `CREATE SEQUENCE start_refused;
		CREATE FUNCTION refuse_start() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM nextval('start_refused'); RAISE EXCEPTION 'test: start refused'; END $$;
		CREATE TRIGGER refuse_start BEFORE UPDATE OF started_at ON resource_queue FOR EACH ROW
		  WHEN (NEW.started_at IS NOT NULL) EXECUTE FUNCTION refuse_start()`); err != nil {
		t.Fatal(err)
	}

	r := New(st, map[string]actions.Action{}, Options{Replica: "r1", Workers: 1, LeaseTTL: time.Minute}, log)
	r.starts = make(chan started, 1) // room for one: the second start does not fit
	r.mu.Lock()
	for _, c := range claimed {
		r.inflight[c.LeaseToken] = &call{}
	}
	r.mu.Unlock()
	for _, c := range claimed {
		r.callStarting(c)
	}
	done := make(chan struct{})
	go func() { defer close(done); r.startLoop(r.starts) }()

	waitFor(t, "a start refused", func() (bool, string) {
		var called bool
		if err := pool.QueryRow(ctx, "SELECT is_called FROM start_refused").Scan(&called); err != nil {
			t.Fatal(err)
		}
		return called, "none refused"
	})
	if _, err := pool.Exec(ctx, "DROP TRIGGER refuse_start ON resource_queue"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both starts stored", func() (bool, string) {
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM resource_queue WHERE started_at IS NOT NULL").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 2, fmt.Sprintf("%d stored", n)
	})
	r.mu.Lock()
	for _, c := range r.inflight {
		c.called = true
	}
	r.mu.Unlock()
	close(r.starts)
	<-done
}
