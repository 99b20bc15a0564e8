package reconciler

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/store"
)

// claimGated opens openGated's store and claims both of its resources as replica r1.
func claimGated(ctx context.Context, t *testing.T) (*store.Store, []store.Claimed) {
	t.Helper()
	st := openGated(ctx, t)
	if _, err := st.Pool().Exec(ctx, "UPDATE resource_queue SET run_at = now()"); err != nil {
		t.Fatal(err)
	}
	claimed, err := st.Claim(ctx, "r1", 10, time.Minute)
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claim: %d, %v", len(claimed), err)
	}
	return st, claimed
}

// The start writer keeps every start until it is stored: a start that does not fit in the
// channel waits in the pending list, and a batch the database refuses is tried again. Both
// calls here end with their start stored, so a release would show them interrupted.
func TestStartWriterKeepsAndRetriesStarts(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	st, claimed := claimGated(ctx, t)
	pool := st.Pool()
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

// The places the reconciler hands the result writer follow the queue rows: a stored start
// and a lease renewal each write a version of the row elsewhere, and the call's record then
// holds where that version lies.
func TestPlacesFollowStartAndRenewal(t *testing.T) {
	ctx := context.Background()
	st, claimed := claimGated(ctx, t)
	pool := st.Pool()
	tokens := make([]string, len(claimed))
	r := New(st, map[string]actions.Action{}, Options{Replica: "r1", Workers: 1, LeaseTTL: 3 * time.Second}, slog.New(slog.DiscardHandler))
	r.mu.Lock()
	for i, c := range claimed {
		tokens[i] = c.LeaseToken
		r.inflight[c.LeaseToken] = &call{id: c.ID, at: c.QueueAt, cancel: func(error) {}}
	}
	r.mu.Unlock()
	// Each row's place as the replica knows it and as it is.
	places := func() (known, now []string) {
		r.mu.Lock()
		for _, tok := range tokens {
			known = append(known, r.inflight[tok].at)
		}
		r.mu.Unlock()
		for _, c := range claimed {
			var at string
			if err := pool.QueryRow(ctx, "SELECT ctid::text FROM resource_queue WHERE id = $1", c.ID).Scan(&at); err != nil {
				t.Fatal(err)
			}
			now = append(now, at)
		}
		return known, now
	}
	waitPlaces := func(what string, not []string) []string {
		t.Helper()
		var now []string
		waitFor(t, what, func() (bool, string) {
			var known []string
			known, now = places()
			return slices.Equal(known, now) && !slices.Equal(now, not), fmt.Sprintf("known %v, rows at %v, before %v", known, now, not)
		})
		return now
	}
	claimedAt := []string{claimed[0].QueueAt, claimed[1].QueueAt}

	starts := make(chan started, len(claimed))
	done := make(chan struct{})
	go func() { defer close(done); r.startLoop(starts) }()
	for _, c := range claimed {
		starts <- started{Start: store.Start{ID: c.ID, Token: c.LeaseToken, Generation: c.Generation, Namespace: c.Namespace, Kind: c.Kind, Name: c.Name, Source: c.Source}}
	}
	startedAt := waitPlaces("the started rows' places known", claimedAt)
	close(starts)
	<-done

	renewCtx, stop := context.WithCancel(ctx)
	renewed := make(chan struct{})
	go func() { defer close(renewed); r.renewLoop(renewCtx) }()
	waitPlaces("the renewed rows' places known", startedAt)
	stop()
	<-renewed

	_, now := places() // a renewal may have come between the wait and the stop
	if got := r.writing(tokens); !slices.Equal(got, now) {
		t.Fatalf("handed to the writer at %v, the rows lie at %v", got, now)
	}
}
