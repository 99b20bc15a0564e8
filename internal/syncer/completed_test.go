package syncer

import (
	"context"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/sources"
)

// TestCompletedAfterApply: the holder publishes a poll as soon as it reads the head, but a
// completed sync (what `sync --wait` waits on) only once the revision read is applied.
func TestCompletedAfterApply(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := &repo{}
	r.set(rev(1), dbFiles(1))
	src := r.source()
	entered, release := make(chan struct{}), make(chan struct{})
	fetch := src.fetch
	src.fetch = func(ctx context.Context, revision string) (*sources.Snapshot, error) {
		close(entered)
		<-release
		return fetch(ctx, revision)
	}
	s := b.syncer(src, "r1", time.Minute)
	began := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := s.SyncOnce(b.ctx)
		done <- err
	}()
	<-entered
	rt, ok := s.Runtime()
	if !ok || rt.LastPoll == nil || rt.LastPoll.Before(began) {
		t.Fatalf("no poll published while fetching: %+v %v", rt, ok)
	}
	if rt.Completed != nil {
		t.Errorf("a completed sync published before the revision was applied: %v", rt.Completed)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b.source().Revision != rev(1) {
		t.Fatalf("revision %q not applied", b.source().Revision)
	}
	rt, _ = s.Runtime()
	if rt.Completed == nil || rt.Completed.Before(began) {
		t.Fatalf("no completed sync after the apply: %+v", rt)
	}
	// A sync that finds nothing new completes too.
	again := time.Now()
	if out, err := s.SyncOnce(b.ctx); err != nil || !out.Unchanged {
		t.Fatalf("%+v %v", out, err)
	}
	if rt, _ = s.Runtime(); rt.Completed == nil || rt.Completed.Before(again) {
		t.Fatalf("no completed sync after an unchanged poll: %+v", rt)
	}
}
