package actions

import (
	"sync"
	"sync/atomic"
)

// Set holds a daemon's action instances across config reloads. A call acquires its
// instance and releases it when done; a reload replaces the set, and the instances it drops
// (changed or removed in the config) are closed once their last call released them: a call
// in flight finishes with the instance it started with.
type Set struct {
	cur atomic.Pointer[map[string]*setRef]
	// plans arbitrates between the previews' plans and the reconciler's calls of every
	// instance the set holds, across reloads.
	plans PlanGate
}

// Plans is the gate every caller of the set's instances goes through (the reconciler and
// the preview runners), so that a reconcile stops a plan of its resource.
func (s *Set) Plans() *PlanGate { return &s.plans }

// setRef is one instance and the calls using it.
type setRef struct {
	act     Action
	mu      sync.Mutex
	users   int
	retired bool // no longer in the set: closed when users drops to 0
}

// NewSet holds acts.
func NewSet(acts map[string]Action) *Set {
	s := &Set{}
	m := make(map[string]*setRef, len(acts))
	for name, a := range acts {
		m[name] = &setRef{act: a}
	}
	s.cur.Store(&m)
	return s
}

// Acquire takes the instance name for one call; release gives it back (reconciler.Options.Acquire).
func (s *Set) Acquire(name string) (Action, func(), bool) {
	for {
		ref, ok := (*s.cur.Load())[name]
		if !ok {
			return nil, func() {}, false
		}
		if ref.use() {
			var once sync.Once
			return ref.act, func() { once.Do(ref.release) }, true
		}
		// Retired between the load and the use: the set holding its successor is stored
		// already (replace stores before it retires).
	}
}

// Snapshot acquires every instance of the set at once, for a user that holds them for its
// whole life (a preview runner plans with them).
func (s *Set) Snapshot() (map[string]Action, func()) {
	for {
		m := s.cur.Load()
		out := make(map[string]Action, len(*m))
		var held []*setRef
		ok := true
		for name, ref := range *m {
			if !ref.use() {
				ok = false
				break
			}
			held = append(held, ref)
			out[name] = ref.act
		}
		release := func() {
			for _, r := range held {
				r.release()
			}
		}
		if ok {
			var once sync.Once
			return out, func() { once.Do(release) }
		}
		release()
	}
}

// Current is the set as it is now, for lookups that do not call the instances (checking a
// ResourceType's action reference, reading rate limits).
func (s *Set) Current() map[string]Action {
	m := s.cur.Load()
	out := make(map[string]Action, len(*m))
	for name, ref := range *m {
		out[name] = ref.act
	}
	return out
}

// Replace makes next the set: instances named in keep stay (next's instance of that name
// is closed at once, unused), the others are next's; the instances left out are retired.
func (s *Set) Replace(next map[string]Action, keep map[string]bool) {
	old := *s.cur.Load()
	m := make(map[string]*setRef, len(next))
	for name, a := range next {
		if keep[name] && old[name] != nil {
			m[name] = old[name]
			_ = Close(a)
			continue
		}
		m[name] = &setRef{act: a}
	}
	s.cur.Store(&m)
	for name, ref := range old {
		if m[name] != ref {
			ref.retire()
		}
	}
}

// Close retires every instance (the daemon is stopping): each closes once its calls are over.
func (s *Set) Close() {
	empty := map[string]*setRef{}
	old := s.cur.Swap(&empty)
	for _, ref := range *old {
		ref.retire()
	}
}

func (r *setRef) use() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.retired {
		return false
	}
	r.users++
	return true
}

func (r *setRef) release() {
	r.mu.Lock()
	r.users--
	last := r.retired && r.users == 0
	r.mu.Unlock()
	if last {
		_ = Close(r.act)
	}
}

func (r *setRef) retire() {
	r.mu.Lock()
	if r.retired {
		r.mu.Unlock()
		return
	}
	r.retired = true
	last := r.users == 0
	r.mu.Unlock()
	if last {
		_ = Close(r.act)
	}
}
