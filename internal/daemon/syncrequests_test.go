package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/syncer"
	"github.com/trueup-dev/trueup/sources"
)

// countingSource serves one manifest file at a settable head and counts head reads (one per
// sync).
type countingSource struct {
	head  atomic.Value // string
	heads atomic.Int32
}

func (c *countingSource) Head(context.Context) (string, error) {
	c.heads.Add(1)
	return c.head.Load().(string), nil
}

func (c *countingSource) Fetch(_ context.Context, rev string) (*sources.Snapshot, error) {
	doc := "apiVersion: trueup.dev/v1\nkind: ResourceType\nmetadata:\n  name: Thing\nspec:\n  group: example.com\n" +
		"  description: at " + rev + "\n  versions:\n    - name: v1\n      schema:\n        type: object\n  action:\n    name: noop\n"
	return &sources.Snapshot{Revision: rev, Files: []sources.File{{Path: "t.yaml", Hash: rev, Data: []byte(doc)}}}, nil
}

func (c *countingSource) Close() error { return nil }

// replicaUnderTest is one replica's syncer for source "infra" with the sync request wiring
// of serve: its webhook trigger and its LISTEN handler.
type replicaUnderTest struct {
	src      *countingSource
	syncer   *syncer.Syncer
	requests syncRequests
	sentinel chan struct{} // a notification for source "sentinel" came through LISTEN
}

func startReplica(t *testing.T, st *store.Store, name string) *replicaUnderTest {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	r := &replicaUnderTest{src: &countingSource{}, sentinel: make(chan struct{}, 1)}
	r.src.head.Store(strings.Repeat("1", 40))
	r.syncer = syncer.New(st, syncer.Options{Name: "infra", Source: r.src, Interval: time.Hour, Replica: name, LeaseTTL: 15 * time.Second}, logger)
	r.requests = syncRequests{store: st, syncers: func(name string) *syncer.Syncer {
		if name == "infra" {
			return r.syncer
		}
		return nil
	}, log: logger}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	listening := make(chan struct{})
	var once sync.Once
	wg.Add(2)
	go func() { defer wg.Done(); _ = r.syncer.Run(ctx) }()
	go func() {
		defer wg.Done()
		st.Listen(ctx, []string{store.SyncChannel}, func(channel, payload string) {
			switch {
			case channel == "":
				once.Do(func() { close(listening) })
			case payload == "sentinel":
				r.sentinel <- struct{}{}
			default:
				r.requests.notified(payload)
			}
		}, logger)
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	<-listening
	return r
}

// TestWebhookSyncsOnce: a push webhook leads to exactly one sync, by the holder of the
// source's lease, whichever replica receives it: the holder's own NOTIFY coming back through
// its LISTEN must not sync again.
func TestWebhookSyncsOnce(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, holder, follower := twoReplicas(ctx, t)

	for i, receiver := range []*replicaUnderTest{holder, follower} {
		rev := strings.Repeat(fmt.Sprint(i+2), 40)
		holder.src.head.Store(rev)
		follower.src.head.Store(rev)
		before := holder.src.heads.Load()
		receiver.requests.webhook("infra", rev)
		eventually(t, "the pushed revision applied", func() bool {
			src, err := st.GetSource(ctx, "infra")
			return err == nil && src.Revision == rev
		})
		// Every notification sent so far has reached both replicas once the sentinel has
		// (one sender's notifications arrive in order; the webhook's was sent before).
		if err := st.NotifySync(ctx, "sentinel", ""); err != nil {
			t.Fatal(err)
		}
		<-holder.sentinel
		<-follower.sentinel
		// A second sync would start as soon as the first ended: give it time to show.
		deadline := time.After(500 * time.Millisecond)
		for done := false; !done; {
			select {
			case <-deadline:
				done = true
			case <-time.After(10 * time.Millisecond):
				if holder.src.heads.Load()-before > 1 {
					done = true
				}
			}
		}
		who := []string{"holder", "other replica"}[i]
		if n := holder.src.heads.Load() - before; n != 1 {
			t.Errorf("webhook received by the %s: %d syncs by the holder, want 1", who, n)
		}
		if n := follower.src.heads.Load(); n != 0 {
			t.Errorf("webhook received by the %s: the replica without the lease synced %d times", who, n)
		}
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// twoReplicas starts replica r1 on a fresh database with source infra, waits until it holds
// the source's lease and applied its head, then starts r2.
func twoReplicas(ctx context.Context, t *testing.T) (*store.Store, *replicaUnderTest, *replicaUnderTest) {
	t.Helper()
	st, err := store.Open(ctx, pgtest.NewDatabase(t, store.MigrateURL), store.Options{MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if err := st.RegisterSource(ctx, store.SourceConfig{Name: "infra", URL: "test"}); err != nil {
		t.Fatal(err)
	}
	holder := startReplica(t, st, "r1")
	eventually(t, "r1 holds the lease and applied its head", func() bool {
		src, err := st.GetSource(ctx, "infra")
		_, held := holder.syncer.Runtime()
		return err == nil && held && src.Revision == strings.Repeat("1", 40)
	})
	return st, holder, startReplica(t, st, "r2")
}
