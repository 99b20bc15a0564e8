package terraform

import (
	"context"
	"sync"

	"github.com/trueup-dev/trueup/actions"
)

// keyLocks serialises the runs of one resource within the process (a lock per workspace),
// and the inits of the instance (initKey); the backend's state lock does the same across
// processes. Waiting honours the call's context. A plan only takes a free lock that nobody
// waits for, and gives it up (its context is cancelled with actions.ErrPlanBusy) as soon as
// another call asks for it: a plan init of one resource never holds up a call of another.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	ch      chan struct{}           // holds a token while locked
	users   int                     // holders and waiters; the entry goes with the last
	wanted  int                     // lock calls waiting
	preempt context.CancelCauseFunc // the holding plan's, nil when no plan holds it
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

// lock takes key's lock, stopping the plan that holds it.
func (l *keyLocks) lock(ctx context.Context, key string) (unlock func(), err error) {
	l.mu.Lock()
	k := l.entry(key)
	k.wanted++
	if k.preempt != nil {
		k.preempt(actions.ErrPlanBusy)
	}
	l.mu.Unlock()

	select {
	case k.ch <- struct{}{}:
		l.mu.Lock()
		k.wanted--
		l.mu.Unlock()
		return func() {
			<-k.ch
			l.mu.Lock()
			l.leave(key, k)
			l.mu.Unlock()
		}, nil
	case <-ctx.Done():
		l.mu.Lock()
		k.wanted--
		l.leave(key, k)
		l.mu.Unlock()
		return nil, context.Cause(ctx)
	}
}

// tryLockPlan takes key's lock for a plan when it is free and no call waits for it; a call
// that asks for it later cancels the plan with preempt(actions.ErrPlanBusy). It refuses with
// actions.ErrPlanInProgress when another plan holds the lock, else actions.ErrPlanBusy.
func (l *keyLocks) tryLockPlan(key string, preempt context.CancelCauseFunc) (unlock func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.entry(key)
	if k.wanted > 0 {
		l.leave(key, k)
		return nil, actions.ErrPlanBusy
	}
	select {
	case k.ch <- struct{}{}:
	default:
		byPlan := k.preempt != nil
		l.leave(key, k)
		if byPlan {
			return nil, actions.ErrPlanInProgress
		}
		return nil, actions.ErrPlanBusy
	}
	k.preempt = preempt
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		k.preempt = nil
		<-k.ch
		l.leave(key, k)
	}, nil
}
