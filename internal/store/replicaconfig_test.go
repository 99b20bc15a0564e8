package store

import (
	"context"
	"testing"
	"time"
)

// A refused reload keeps the running config's hash and load time; an applied one clears the
// error.
func TestSetReplicaConfig(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	if err := st.Heartbeat(ctx, Replica{Name: "r1", Hostname: "h", PID: 1}); err != nil {
		t.Fatal(err)
	}
	list := func() ReplicaConfig {
		t.Helper()
		rs, err := st.ListReplicas(ctx, time.Minute)
		if err != nil || len(rs) != 1 {
			t.Fatalf("ListReplicas: %v %v", rs, err)
		}
		return rs[0].Config
	}
	if c := list(); c != (ReplicaConfig{}) {
		t.Errorf("before any: %+v", c)
	}
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	steps := []struct {
		set  ReplicaConfig
		want ReplicaConfig
	}{
		{ReplicaConfig{Hash: "aaa", LoadedAt: t0}, ReplicaConfig{Hash: "aaa", LoadedAt: t0}},
		{ReplicaConfig{Error: "sources[0]: bad", ErrorAt: t0.Add(time.Second)},
			ReplicaConfig{Hash: "aaa", LoadedAt: t0, Error: "sources[0]: bad", ErrorAt: t0.Add(time.Second)}},
		{ReplicaConfig{Hash: "bbb", LoadedAt: t0.Add(2 * time.Second)}, ReplicaConfig{Hash: "bbb", LoadedAt: t0.Add(2 * time.Second)}},
	}
	for i, s := range steps {
		if err := st.SetReplicaConfig(ctx, "r1", s.set); err != nil {
			t.Fatal(err)
		}
		got := list()
		if got.Hash != s.want.Hash || got.Error != s.want.Error || !got.LoadedAt.Equal(s.want.LoadedAt) || !got.ErrorAt.Equal(s.want.ErrorAt) {
			t.Errorf("step %d: %+v, want %+v", i, got, s.want)
		}
	}
}
