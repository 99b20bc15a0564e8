package store

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestInterruptPreviews: previews left Running by a replica that died (or that recorded
// none) are marked Error; one a live replica runs, and finished ones, are left alone.
func TestInterruptPreviews(t *testing.T) {
	t.Parallel()
	st := openTest(t, "infra")
	ctx := context.Background()
	dying, err := Open(ctx, st.url, Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer dying.Close()
	liveDead, _, err := dying.HoldLiveness(ctx, Replica{Name: "dead"})
	if err != nil {
		t.Fatal(err)
	}
	live, _, err := st.HoldLiveness(ctx, Replica{Name: "live"})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	sha := strings.Repeat("ab", 20)
	for _, p := range []Preview{
		{Number: 1, Replica: "dead", State: PreviewRunning},
		{Number: 2, Replica: "live", State: PreviewRunning},
		{Number: 3, Replica: "", State: PreviewRunning},
		{Number: 4, Replica: "dead", State: PreviewSucceeded},
		{Number: 5, Replica: "never-registered", State: PreviewRunning},
	} {
		p.Source, p.Provider, p.HeadSHA = "infra", "github", sha
		if _, err := st.SavePreview(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	liveDead.Close()
	dying.Close()
	// Closing the client side does not end the server's session synchronously: the backend
	// frees the lock once it reads the end of the connection. Wait for that, as a peer would.
	deadline := time.Now().Add(10 * time.Second)
	for {
		held, err := keyHeld(ctx, st.pool, liveDead.Key)
		if err != nil {
			t.Fatal(err)
		}
		if !held {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the dead replica's liveness lock is still held 10 s after its session closed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	got, err := st.InterruptPreviews(ctx, "infra", "interrupted")
	if err != nil {
		t.Fatal(err)
	}
	var numbers []int
	for _, p := range got {
		if p.State != PreviewError || p.Message != "interrupted" || p.HeadSHA != sha {
			t.Errorf("interrupted row %+v", p)
		}
		numbers = append(numbers, p.Number)
	}
	slices.Sort(numbers)
	if !slices.Equal(numbers, []int{1, 3, 5}) {
		t.Errorf("interrupted %v, want [1 3 5]", numbers)
	}
	if p, err := st.GetPreview(ctx, "infra", 2); err != nil || p.State != PreviewRunning {
		t.Errorf("the live replica's preview: %+v %v", p, err)
	}
}
