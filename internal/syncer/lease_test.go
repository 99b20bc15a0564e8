package syncer

import (
	"bytes"
	"github.com/trueup-dev/trueup/internal/clip"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// logBuffer collects a logger's lines for the test to read while the syncer writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSyncLongApplyKeepsLease: an apply that lasts 3.5 × leaseTTL (a slow trigger on the
// desired-state table) keeps the holder's lease — its renewals do not wait on the apply — and
// commits once: the revision is fetched once, the term never changes, and the log never
// says the lease was lost.
func TestSyncLongApplyKeepsLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const ttl = time.Second
	if _, err := b.db.Exec(b.ctx, `
		CREATE FUNCTION test_slow() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_sleep(3.5); RETURN NULL; END $$;
		CREATE TRIGGER test_slow AFTER INSERT ON resources FOR EACH STATEMENT EXECUTE FUNCTION test_slow();`); err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	var r repo
	r.set(rev(1), dbFiles(1))
	src := r.source()
	s := New(b.store, Options{Name: "infra", Source: src, Interval: time.Hour, Prune: true, Replica: "r1", LeaseTTL: ttl},
		slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("syncer log:\n%s", logs.String())
		}
	})
	start := time.Now()
	b.run(s)
	b.eventually(40*time.Second, "revision "+clip.Rev(rev(1))+" applied", func() (bool, string) {
		got := b.source().Revision
		return got == rev(1), got
	})
	t.Logf("applied %s after the start (leaseTTL %s)", time.Since(start).Round(time.Millisecond), ttl)
	if n := src.fetches.Load(); n != 1 {
		t.Errorf("revision fetched %d times, want once (a sync was interrupted and started over)", n)
	}
	if l := b.lease(); l.holder != "r1" || l.term != 1 || !l.valid {
		t.Errorf("lease after the apply: %+v, want r1's first term, valid", l)
	}
	out := logs.String()
	// From the first holding on: a first take that ran out of time on a loaded machine (the
	// attempt has leaseTTL/3) is no renewal waiting on the apply.
	if i := strings.Index(out, "holding the source's lease"); i >= 0 {
		out = out[i:]
	}
	// Every message of the lease holder and the syncer that tells of a lease in trouble: a renewal
	// that failed (even while still held), one lost or expired, a sync interrupted or failed.
	for _, bad := range []string{"lease lost", "lease was lost", "failed; still held", "take the source's lease failed",
		"lost the source's lease", "expired unrenewed", "gave up the source's lease", "sync interrupted", "sync failed"} {
		if strings.Contains(out, bad) {
			t.Errorf("log says %q:\n%s", bad, out)
		}
	}
}
