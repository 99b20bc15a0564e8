package actions

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
)

// closeCounter is an action instance that counts its Close calls.
type closeCounter struct {
	name   string
	closed atomic.Int32
}

func (c *closeCounter) Reconcile(context.Context, Request) (Result, error) {
	return Result{Done: true}, nil
}
func (c *closeCounter) Delete(context.Context, Request) (Result, error) {
	return Result{Done: true}, nil
}
func (c *closeCounter) Close() error { c.closed.Add(1); return nil }

// A replaced instance serves the calls that acquired it until they release it, then closes
// once; a kept instance stays and its rebuilt twin is closed unused; a snapshot holds its
// instances until released.
func TestSetReplace(t *testing.T) {
	t.Parallel()
	run1, keep1 := &closeCounter{name: "run1"}, &closeCounter{name: "keep1"}
	s := NewSet(map[string]Action{"run": run1, "keep": keep1, "gone": &closeCounter{name: "gone"}})
	gone := (*s.cur.Load())["gone"].act.(*closeCounter)

	inFlight, release, ok := s.Acquire("run")
	if !ok || inFlight != run1 {
		t.Fatalf("acquire run: %v %v", inFlight, ok)
	}
	snap, releaseSnap := s.Snapshot()
	if len(snap) != 3 {
		t.Fatalf("snapshot: %v", snap)
	}
	run2, keep2, added := &closeCounter{name: "run2"}, &closeCounter{name: "keep2"}, &closeCounter{name: "added"}
	s.Replace(map[string]Action{"run": run2, "keep": keep2, "added": added}, map[string]bool{"keep": true})

	if a, rel, _ := s.Acquire("run"); a != run2 {
		t.Errorf("after replace, run is %v", a)
	} else {
		rel()
	}
	if a, rel, _ := s.Acquire("keep"); a != keep1 {
		t.Errorf("kept instance replaced by %v", a)
	} else {
		rel()
	}
	if _, _, ok := s.Acquire("gone"); ok {
		t.Error("a removed instance is still found")
	}
	if keep2.closed.Load() != 1 || keep1.closed.Load() != 0 {
		t.Errorf("keep: rebuilt twin closed %d, kept closed %d; want 1, 0", keep2.closed.Load(), keep1.closed.Load())
	}
	if run1.closed.Load() != 0 || gone.closed.Load() != 0 {
		t.Fatal("an instance in use was closed")
	}
	release()
	release() // twice is once
	if run1.closed.Load() != 0 {
		t.Error("run1 closed while the snapshot still holds it")
	}
	releaseSnap()
	if run1.closed.Load() != 1 || gone.closed.Load() != 1 {
		t.Errorf("after the last release: run1 closed %d, gone closed %d; want 1, 1", run1.closed.Load(), gone.closed.Load())
	}
	s.Close()
	for _, c := range []*closeCounter{run2, keep1, added} {
		if c.closed.Load() != 1 {
			t.Errorf("%s closed %d times at the end", c.name, c.closed.Load())
		}
	}
}

// Calls acquiring while reloads replace the set: every instance is closed exactly once, and
// never while a call holds it.
func TestSetConcurrent(t *testing.T) {
	t.Parallel()
	first := &closeCounter{name: "0"}
	s := NewSet(map[string]Action{"run": first})
	all := []*closeCounter{first}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				a, rel, ok := s.Acquire("run")
				if !ok {
					t.Error("run not found")
					return
				}
				if a.(*closeCounter).closed.Load() != 0 {
					t.Error("acquired a closed instance")
				}
				rel()
			}
		})
	}
	for range 200 {
		c := &closeCounter{}
		all = append(all, c)
		s.Replace(map[string]Action{"run": c}, nil)
	}
	close(stop)
	wg.Wait()
	s.Close()
	for i, c := range all {
		if n := c.closed.Load(); n != 1 {
			t.Errorf("instance %d closed %d times", i, n)
		}
	}
}
