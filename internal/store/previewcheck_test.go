package store

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/manifest"
)

// CheckRevision reads the applied resources and reports identity conflicts with another
// source, writing nothing.
func TestCheckRevision(t *testing.T) {
	t.Parallel()
	st := openTest(t, "a", "b")
	ctx := context.Background()
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "a", Revision: "r1", Set: widgets(3, func(int) int { return 1 })}); err != nil {
		t.Fatal(err)
	}
	before := readApplied(t, st, "a")
	check, err := st.CheckRevision(ctx, ApplyParams{Source: "b", Revision: "pr", Set: widgets(1, func(int) int { return 2 })})
	if err != nil {
		t.Fatal(err)
	}
	if len(check.Applied) != 0 || len(check.Conflicts) != 1 || !strings.Contains(check.Conflicts[0].Msg, "already declared by source a") {
		t.Fatalf("check of b: %+v", check)
	}
	check, err = st.CheckRevision(ctx, ApplyParams{Source: "a", Revision: "pr", Set: &manifest.Set{}})
	if err != nil {
		t.Fatal(err)
	}
	if check.Revision != "r1" || len(check.Applied) != 3 || check.Applied[0].Name != "w00" || string(check.Applied[0].Spec) != `{"size": 1}` || len(check.Conflicts) != 0 {
		t.Fatalf("check of a: %+v", check)
	}
	if after := readApplied(t, st, "a"); after.Changes != before.Changes || after.Revision != before.Revision {
		t.Errorf("CheckRevision wrote: %+v then %+v", before, after)
	}
}

// Two replicas publishing the comment of one pull request at once create it once: the
// second finds the first's id under the row lock and edits.
func TestPublishPreviewCommentOnce(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	if _, err := st.SavePreview(ctx, Preview{Source: "s", Number: 7, Provider: "github", HeadSHA: "abc", State: PreviewRunning}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	creates, edits := 0, 0
	publish := func(ctx context.Context, id string) (string, string, error) {
		time.Sleep(20 * time.Millisecond) // the forge's round trip, while the other replica waits
		mu.Lock()
		defer mu.Unlock()
		if id != "" {
			edits++
			return id, "", nil
		}
		creates++
		return "1001", "https://forge/c/1001", nil
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := st.PublishPreviewComment(ctx, "s", 7, publish); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	p, err := st.GetPreview(ctx, "s", 7)
	if err != nil {
		t.Fatal(err)
	}
	if creates != 1 || edits != 1 || p.CommentID != "1001" || p.CommentURL != "https://forge/c/1001" {
		t.Errorf("creates %d edits %d, stored %q %q", creates, edits, p.CommentID, p.CommentURL)
	}
	if err := st.PublishPreviewComment(ctx, "s", 8, publish); !errors.Is(err, ErrNotFound) {
		t.Errorf("without a row: %v", err)
	}
}

// BeingReconciled tells a preview, on any replica, that a reconcile holds a resource: claimed
// with a lease not expired; once released or expired, it does not.
func TestBeingReconciled(t *testing.T) {
	t.Parallel()
	st := openTest(t, "a")
	ctx := context.Background()
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "a", Revision: "r1", Set: widgets(1, func(int) int { return 1 })}); err != nil {
		t.Fatal(err)
	}
	held := func(want bool, when string) {
		t.Helper()
		got, err := st.BeingReconciled(ctx, "default", "widget", "w00") // the kind in any case
		if err != nil || got != want {
			t.Fatalf("%s: BeingReconciled = %v, %v; want %v", when, got, err, want)
		}
	}
	held(false, "before a claim")
	claimed, err := st.Claim(ctx, "replica-b", 10, time.Hour)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	held(true, "claimed")
	if _, err := st.Pool().Exec(ctx, `UPDATE resource_queue SET lease_expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	held(false, "lease expired")
	if err := st.Release(ctx, "replica-b", []int64{claimed[0].ID}, []string{claimed[0].LeaseToken}); err != nil {
		t.Fatal(err)
	}
	held(false, "released")
	if got, err := st.BeingReconciled(ctx, "default", "Widget", "missing"); err != nil || got {
		t.Fatalf("a resource that does not exist: %v, %v", got, err)
	}
}
