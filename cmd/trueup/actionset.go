package main

import (
	"sync"
	"sync/atomic"

	"github.com/trueup-dev/trueup/actions"
)

// actionSet holds serve's action instances across config reloads. A call acquires its
// instance and releases it when done; a reload replaces the set, and the instances it drops
// (changed or removed in the config) are closed once their last call released them: a call
// in flight finishes with the instance it started with.
type actionSet struct {
	cur atomic.Pointer[map[string]*actionRef]
	// plans arbitrates between the previews' plans and the reconciler's calls.
	plans actions.PlanGate
}

// actionRef is one instance and the calls using it.
type actionRef struct {
	act     actions.Action
	mu      sync.Mutex
	users   int
	retired bool // no longer in the set: closed when users drops to 0
}

func newActionSet(acts map[string]actions.Action) *actionSet {
	s := &actionSet{}
	m := make(map[string]*actionRef, len(acts))
	for name, a := range acts {
		m[name] = &actionRef{act: a}
	}
	s.cur.Store(&m)
	return s
}

// acquire is reconciler.Options.Acquire.
func (s *actionSet) acquire(name string) (actions.Action, func(), bool) {
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

// snapshot acquires every instance of the set at once, for a user that holds them for its
// whole life (a preview runner plans with them).
func (s *actionSet) snapshot() (map[string]actions.Action, func()) {
	for {
		m := s.cur.Load()
		out := make(map[string]actions.Action, len(*m))
		var held []*actionRef
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

// current is the set as it is now, for lookups that do not call the instances (checking a
// ResourceType's action reference, reading rate limits).
func (s *actionSet) current() map[string]actions.Action {
	m := s.cur.Load()
	out := make(map[string]actions.Action, len(*m))
	for name, ref := range *m {
		out[name] = ref.act
	}
	return out
}

// replace makes next the set: instances named in keep stay (next's instance of that name
// is closed at once, unused), the others are next's; the instances left out are retired.
func (s *actionSet) replace(next map[string]actions.Action, keep map[string]bool) {
	old := *s.cur.Load()
	m := make(map[string]*actionRef, len(next))
	for name, a := range next {
		if keep[name] && old[name] != nil {
			m[name] = old[name]
			_ = actions.Close(a)
			continue
		}
		m[name] = &actionRef{act: a}
	}
	s.cur.Store(&m)
	for name, ref := range old {
		if m[name] != ref {
			ref.retire()
		}
	}
}

// close retires every instance (serve is ending): each closes once its calls are over.
func (s *actionSet) close() {
	empty := map[string]*actionRef{}
	old := s.cur.Swap(&empty)
	for _, ref := range *old {
		ref.retire()
	}
}

func (r *actionRef) use() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.retired {
		return false
	}
	r.users++
	return true
}

func (r *actionRef) release() {
	r.mu.Lock()
	r.users--
	last := r.retired && r.users == 0
	r.mu.Unlock()
	if last {
		_ = actions.Close(r.act)
	}
}

func (r *actionRef) retire() {
	r.mu.Lock()
	if r.retired {
		r.mu.Unlock()
		return
	}
	r.retired = true
	last := r.users == 0
	r.mu.Unlock()
	if last {
		_ = actions.Close(r.act)
	}
}
