package store

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestLeaseState: held leases are those unexpired (a released one is not); alive replicas
// those seen within the window.
func TestLeaseState(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	for _, name := range []string{"maintenance", "source:s"} {
		if _, ok, err := st.AcquireLease(ctx, name, "r1", time.Minute); err != nil || !ok {
			t.Fatalf("take %s: %v %v", name, ok, err)
		}
	}
	l, ok, err := st.AcquireLease(ctx, "notifications", "r1", time.Minute)
	if err != nil || !ok {
		t.Fatalf("take notifications: %v %v", ok, err)
	}
	if err := st.ReleaseLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := st.Heartbeat(ctx, Replica{Name: "r1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.pool.Exec(ctx, `INSERT INTO replicas (name, hostname, pid, version, listen, last_seen) VALUES ('r0', 'h', 1, 'v', '', now() - interval '1 minute')`); err != nil {
		t.Fatal(err)
	}
	held, alive, err := st.LeaseState(ctx, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"maintenance", "source:s"}; !slices.Equal(held, want) || alive != 1 {
		t.Errorf("held %v, alive %d; want %v, 1", held, alive, want)
	}
}
