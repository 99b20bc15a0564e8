package terraform

import (
	"context"
	"sync"
)

// keyLocks serialises the runs of one resource within the process; the backend's state lock
// does the same across processes. Waiting honours the call's context.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	ch    chan struct{} // holds a token while locked
	users int           // holders and waiters; the entry goes with the last
}

func (l *keyLocks) lock(ctx context.Context, key string) (unlock func(), err error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*keyLock{}
	}
	k := l.m[key]
	if k == nil {
		k = &keyLock{ch: make(chan struct{}, 1)}
		l.m[key] = k
	}
	k.users++
	l.mu.Unlock()

	release := func() {
		l.mu.Lock()
		if k.users--; k.users == 0 {
			delete(l.m, key)
		}
		l.mu.Unlock()
	}
	select {
	case k.ch <- struct{}{}:
		return func() { <-k.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, context.Cause(ctx)
	}
}
