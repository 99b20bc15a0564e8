package store

import (
	"context"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
)

// openTest opens a store on a fresh database and registers the named sources in it.
func openTest(t *testing.T, sources ...string) *Store {
	t.Helper()
	ctx := context.Background()
	st, err := Open(ctx, pgtest.NewDatabase(t, MigrateURL), Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	for _, name := range sources {
		if err := st.RegisterSource(ctx, SourceConfig{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func TestRecordDelivery(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	for _, c := range []struct {
		source, id string
		first      bool
	}{
		{"infra", "d-1", true},
		{"infra", "d-1", false}, // redelivery
		{"infra", "d-2", true},
		{"apps", "d-1", true}, // ids are per source
		{"apps", "d-1", false},
	} {
		first, err := st.RecordDelivery(ctx, c.source, c.id)
		if err != nil {
			t.Fatal(err)
		}
		if first != c.first {
			t.Errorf("%s/%s: first = %v, want %v", c.source, c.id, first, c.first)
		}
	}

	if _, err := st.pool.Exec(ctx, `UPDATE webhook_deliveries SET received_at = now() - interval '3 days' WHERE delivery_id = 'd-1'`); err != nil {
		t.Fatal(err)
	}
	n, err := st.TrimDeliveries(ctx, 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("trimmed %d deliveries, want 2", n)
	}
	if n, _ := st.TrimDeliveries(ctx, 0); n != 0 {
		t.Errorf("maxAge 0 trimmed %d", n)
	}
	// A forgotten delivery counts as new again.
	if first, err := st.RecordDelivery(ctx, "infra", "d-1"); err != nil || !first {
		t.Errorf("after trim: first = %v, err = %v", first, err)
	}
}
