package metrics

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// scrape gathers c and returns each family's name with its series' count.
func scrape(t *testing.T, c prometheus.Collector) map[string]int {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, f := range fams {
		out[f.GetName()] = len(f.GetMetric())
		if f.GetName() == "trueup_state_readable" {
			out["readable"] = int(f.GetMetric()[0].GetGauge().GetValue())
		}
	}
	return out
}

// TestStateCollectorDegrades: a failed or slow state read serves trueup_state_readable 0 and
// the counts; a failed count drops only trueup_resources.
func TestStateCollectorDegrades(t *testing.T) {
	st := State{Sources: []SourceState{{Name: "infra", Ready: true}}, Leases: map[string]bool{"maintenance": true}, ReplicasAlive: 2}
	counts := []ResourceCount{{Source: "infra", Phase: "Ready", Count: 3}}
	down := errors.New("database down")
	for _, c := range []struct {
		name          string
		stErr, resErr error
		want          map[string]int
	}{
		{"both read", nil, nil, map[string]int{"readable": 1, "trueup_state_readable": 1, "trueup_source_ready": 1, "trueup_source_lag_seconds": 1,
			"trueup_lease_held": 1, "trueup_replicas_alive": 1, "trueup_resources": 1}},
		{"state fails", down, nil, map[string]int{"readable": 0, "trueup_state_readable": 1, "trueup_resources": 1}},
		{"counts fail", nil, down, map[string]int{"readable": 1, "trueup_state_readable": 1, "trueup_source_ready": 1, "trueup_source_lag_seconds": 1,
			"trueup_lease_held": 1, "trueup_replicas_alive": 1}},
		{"both fail", down, down, map[string]int{"readable": 0, "trueup_state_readable": 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			col := &stateCollector{now: time.Now,
				read:   func(context.Context) (State, error) { return st, c.stErr },
				counts: func(context.Context) ([]ResourceCount, error) { return counts, c.resErr }}
			got := scrape(t, col)
			if !maps.Equal(got, c.want) {
				t.Errorf("scrape %v, want %v", got, c.want)
			}
		})
	}
}

// TestStateCollectorCaches: scrapes within stateTTL of a read are served from it, failures
// included; the first scrape after it reads again.
func TestStateCollectorCaches(t *testing.T) {
	now := time.Unix(1000, 0)
	var reads, counts int
	fail := true
	col := &stateCollector{now: func() time.Time { return now },
		read: func(context.Context) (State, error) {
			reads++
			if fail {
				return State{}, errors.New("down")
			}
			return State{ReplicasAlive: 1}, nil
		},
		counts: func(context.Context) ([]ResourceCount, error) { counts++; return nil, nil }}
	for range 3 {
		if got := scrape(t, col); got["readable"] != 0 {
			t.Fatalf("readable %d while the read fails", got["readable"])
		}
		now = now.Add(stateTTL / 4)
	}
	if reads != 1 || counts != 1 {
		t.Fatalf("%d state reads, %d counts in three scrapes within %v; want 1 and 1", reads, counts, stateTTL)
	}
	fail = false
	now = now.Add(stateTTL)
	if got := scrape(t, col); got["readable"] != 1 || got["trueup_replicas_alive"] != 1 {
		t.Fatalf("after %v: %v", stateTTL, got)
	}
	if reads != 2 || counts != 2 {
		t.Fatalf("%d state reads, %d counts; want 2 and 2", reads, counts)
	}
}
