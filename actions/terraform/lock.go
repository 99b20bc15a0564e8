package terraform

import (
	"context"
	"sync"
)

// keyLocks serialises the runs of one resource within the process; the backend's state lock
// does the same across processes. Waiting honours the call's context. A plan only takes a
// free lock (the host's actions.PlanGate stops it when another call of its resource comes).
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	ch    chan struct{} // holds a token while locked
	users int           // holders and waiters; the entry goes with the last
}

// entry returns key's lock, counting one more user; l.mu is held.
func (l *keyLocks) entry(key string) *keyLock {
	if l.m == nil {
		l.m = map[string]*keyLock{}
	}
	k := l.m[key]
	if k == nil {
		k = &keyLock{ch: make(chan struct{}, 1)}
		l.m[key] = k
	}
	k.users++
	return k
}

// leave counts one user less; l.mu is held.
func (l *keyLocks) leave(key string, k *keyLock) {
	if k.users--; k.users == 0 {
		delete(l.m, key)
	}
}

func (l *keyLocks) lock(ctx context.Context, key string) (unlock func(), err error) {
	l.mu.Lock()
	k := l.entry(key)
	l.mu.Unlock()

	select {
	case k.ch <- struct{}{}:
		return func() {
			<-k.ch
			l.mu.Lock()
			l.leave(key, k)
			l.mu.Unlock()
		}, nil
	case <-ctx.Done():
		l.mu.Lock()
		l.leave(key, k)
		l.mu.Unlock()
		return nil, context.Cause(ctx)
	}
}

// tryLock takes key's lock when it is free, for a plan, which never waits.
func (l *keyLocks) tryLock(key string) (unlock func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.entry(key)
	select {
	case k.ch <- struct{}{}:
	default:
		l.leave(key, k)
		return nil, false
	}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		<-k.ch
		l.leave(key, k)
	}, true
}
