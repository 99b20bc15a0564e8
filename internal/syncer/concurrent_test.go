package syncer

import (
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestReviewConcurrentSyncOnce: a load writing into the last Set in place
// (manifest.Options.ReuseSet) never writes into the Set an earlier sync is still applying
// (the Set is handed back only after its apply, and syncs take turns). Two goroutines sync
// a new revision each time, each changing one file of 200 resources; the race detector sees
// any overlap.
func TestReviewConcurrentSyncOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var r repo
	s := b.syncer(r.source(), "r1", time.Minute)
	db := func(name string, size int) string {
		return fmt.Sprintf("apiVersion: infra.example.com/v1\nkind: Database\nmetadata: {name: %s}\nspec: {size: %d}\n", name, size)
	}
	var mu sync.Mutex
	files := map[string]string{"t.yaml": dbType}
	for i := range 200 {
		files[fmt.Sprintf("db%03d.yaml", i)] = db(fmt.Sprintf("db%03d", i), 1)
	}
	var n atomic.Int64
	next := func() {
		k := int(n.Add(1))
		mu.Lock()
		defer mu.Unlock()
		files[fmt.Sprintf("db%03d.yaml", k%200)] = db(fmt.Sprintf("db%03d", k%200), 1+k%100)
		r.set(fmt.Sprintf("%040x", k), maps.Clone(files))
	}
	next()
	if _, err := s.SyncOnce(b.ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for range 8 {
				next()
				if _, err := s.SyncOnce(b.ctx); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	// The last revision is the head; a sync applies it if no sync above did.
	if _, err := s.SyncOnce(b.ctx); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	head := r.head
	r.mu.Unlock()
	if got := b.source().Revision; got != head {
		t.Errorf("applied %s, want the head %s", got, head)
	}
}
