package reconciler

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"
)

// TestMaintenanceServices: two replicas run maintenance on one database. Both heartbeat;
// exactly one holds the maintenance lease, and its duty releases the resource leases a
// cut-off replica stopped renewing. When the holder stops, it gives the lease up and the
// other replica, woken, takes it over and carries on the duties.
func TestMaintenanceServices(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openGated(ctx, t)
	const ttl = 900 * time.Millisecond
	expire := func() {
		t.Helper()
		// A replica that claims both resources and is then cut off: its leases run out.
		if c, err := st.Claim(ctx, "gone", 10, time.Minute); err != nil || len(c) != 2 {
			t.Fatalf("claim: %d claimed, %v", len(c), err)
		}
		if _, err := st.Pool().Exec(ctx, `UPDATE resource_queue SET lease_expires_at = now() - interval '1 second'`); err != nil {
			t.Fatal(err)
		}
	}
	leased := func() (bool, string) {
		var n int
		if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM resource_queue WHERE lease_owner = 'gone'`).Scan(&n); err != nil {
			return false, err.Error()
		}
		return n == 0, fmt.Sprintf("%d resources still leased by the cut-off replica", n)
	}
	holder := func() string {
		var h string
		_ = st.Pool().QueryRow(ctx, `SELECT holder FROM leases WHERE name = 'maintenance' AND expires_at > now()`).Scan(&h)
		return h
	}
	run := func(name string) (*Maintenance, context.CancelFunc, chan struct{}) {
		m := NewMaintenance(st, MaintenanceOptions{Replica: name, LeaseTTL: ttl}, slog.New(slog.DiscardHandler))
		mctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = m.Run(mctx) }()
		t.Cleanup(func() { cancel(); <-done })
		return m, cancel, done
	}
	expire()
	m1, stop1, done1 := run("r1")
	m2, stop2, done2 := run("r2")
	waitFor(t, "both replicas heartbeat", func() (bool, string) {
		rs, err := st.ListReplicas(ctx, 3*ttl)
		if err != nil {
			return false, err.Error()
		}
		alive := 0
		for _, r := range rs {
			if r.Alive {
				alive++
			}
		}
		return alive == 2, fmt.Sprintf("%d alive of %+v", alive, rs)
	})
	waitFor(t, "one replica holds the maintenance lease", func() (bool, string) {
		h := holder()
		return h == "r1" || h == "r2", "holder " + h
	})
	waitFor(t, "expired resource leases released by the holder", leased)

	first := holder()
	stop, done, other, otherName := stop1, done1, m2, "r2"
	if first == "r2" {
		stop, done, other, otherName = stop2, done2, m1, "r1"
	}
	stop()
	<-done
	other.Wake()
	waitFor(t, otherName+" takes the maintenance lease over", func() (bool, string) {
		h := holder()
		return h == otherName, "holder " + h
	})
	expire()
	waitFor(t, "expired resource leases released by the new holder", leased)
}
