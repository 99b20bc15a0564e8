// Package reconciler is the reconcile controller (DESIGN §2, §7): every replica claims due
// resources with FOR UPDATE SKIP LOCKED and a lease, calls the resource type's action, and
// writes status, conditions, outputs, plugin state and a history row in one transaction
// fenced by the lease token. Failures back off exponentially with jitter; Ready resources are
// resynced; removed manifests run the action's Delete before their row goes.
package reconciler

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/metrics"
	"github.com/trueup-dev/trueup/internal/store"
)

// Options tune the controller.
type Options struct {
	Replica        string // lease owner name; unique per process
	Workers        int
	LeaseTTL       time.Duration
	ResyncInterval time.Duration // default for types that do not set one; 0 turns resync off
	BackoffInitial time.Duration
	BackoffMax     time.Duration
	// PollInterval is the fallback when no notification arrives (default 1s).
	PollInterval time.Duration
	// Scrub removes secrets from messages before they are stored or logged.
	Scrub func(string) string
	// Metrics records attempts (nil: none).
	Metrics *metrics.Metrics
}

// Reconciler runs the workers of one replica.
type Reconciler struct {
	opts    Options
	store   *store.Store
	actions map[string]actions.Action
	log     *slog.Logger

	wake        chan struct{}
	completions chan pending
	mu          sync.Mutex
	// inflight maps lease tokens of claimed work to the cancel function of their call: leases
	// are renewed by token, and a call whose lease is gone is stopped.
	inflight map[string]context.CancelCauseFunc
}

// New returns a reconciler. acts maps action instance names (from the config) to plugins.
func New(st *store.Store, acts map[string]actions.Action, opts Options, logger *slog.Logger) *Reconciler {
	if opts.Workers <= 0 {
		opts.Workers = 16
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = 30 * time.Second
	}
	if opts.BackoffInitial <= 0 {
		opts.BackoffInitial = 5 * time.Second
	}
	if opts.BackoffMax < opts.BackoffInitial {
		opts.BackoffMax = opts.BackoffInitial
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = time.Second
	}
	if opts.Scrub == nil {
		opts.Scrub = func(s string) string { return s }
	}
	return &Reconciler{opts: opts, store: st, actions: acts, log: logger,
		wake: make(chan struct{}, 1), completions: make(chan pending, 4*maxBatch), inflight: map[string]context.CancelCauseFunc{}}
}

// Wake makes the claimer look for work at once. The owner of the replica's LISTEN connection
// calls it on every notification of store.WorkChannel (and after every reconnect).
func (r *Reconciler) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run claims and reconciles until ctx ends, then waits for in-flight work to finish (their
// calls see a cancelled context) and releases what it could not complete.
func (r *Reconciler) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	loopCtx, stopLoops := context.WithCancel(context.Background())
	defer stopLoops()
	wg.Add(2)
	go func() { defer wg.Done(); r.renewLoop(loopCtx) }()
	go func() { defer wg.Done(); r.reapLoop(loopCtx) }()

	work := make(chan store.Claimed)
	// idle holds one token per idle worker; the claimer never claims more than that.
	idle := make(chan struct{}, r.opts.Workers)
	writerDone := make(chan struct{})
	go func() { defer close(writerDone); r.writeLoop(r.completions) }()
	var workers sync.WaitGroup
	for i := 0; i < r.opts.Workers; i++ {
		idle <- struct{}{}
		workers.Add(1)
		go func() {
			defer workers.Done()
			for c := range work {
				r.process(ctx, c)
				idle <- struct{}{}
				r.Wake()
			}
		}()
	}
	r.claimLoop(ctx, work, idle)
	close(work)
	workers.Wait()
	close(r.completions)
	<-writerDone
	stopLoops()
	wg.Wait()
	return nil
}

// claimLoop claims as many items as there are idle workers and hands them over.
func (r *Reconciler) claimLoop(ctx context.Context, work chan<- store.Claimed, idle chan struct{}) {
	free := func() int { return len(idle) }
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-r.wake:
		}
		for ctx.Err() == nil {
			n := free()
			if n == 0 {
				// Wait for a worker to finish; it wakes us.
				break
			}
			claimed, err := r.store.Claim(ctx, r.opts.Replica, n, r.opts.LeaseTTL)
			if err != nil {
				if ctx.Err() == nil {
					r.log.Warn("claim failed", "err", err)
				}
				break
			}
			for _, c := range claimed {
				<-idle
				select {
				case work <- c:
				case <-ctx.Done():
					r.release(c)
					idle <- struct{}{}
				}
			}
			if len(claimed) < n {
				break
			}
		}
		resetTimer(timer, r.nextWait(ctx))
	}
}

// nextWait is how long to sleep before looking again: until the next due item, at most the
// poll interval (notifications cut it short).
func (r *Reconciler) nextWait(ctx context.Context) time.Duration {
	wait := r.opts.PollInterval
	if next, err := r.store.NextDue(ctx); err == nil && next != nil {
		if d := time.Until(*next); d < wait {
			wait = max(d, 10*time.Millisecond)
		}
	}
	return wait
}

func resetTimer(t *time.Timer, d time.Duration) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	t.Reset(d)
}

func (r *Reconciler) track(token string, cancel context.CancelCauseFunc) {
	r.mu.Lock()
	r.inflight[token] = cancel
	r.mu.Unlock()
}

func (r *Reconciler) untrack(token string) {
	r.mu.Lock()
	delete(r.inflight, token)
	r.mu.Unlock()
}

// release gives a claimed item back untouched (shutdown).
func (r *Reconciler) release(c store.Claimed) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.store.Release(ctx, c.ID, c.LeaseToken); err != nil {
		r.log.Warn("release lease", "resource", c.Namespace+"/"+c.Kind+"/"+c.Name, "err", err)
	}
	r.untrack(c.LeaseToken)
}

// renewLoop extends the leases of in-flight work in one statement, every TTL/3.
func (r *Reconciler) renewLoop(ctx context.Context) {
	t := time.NewTicker(r.opts.LeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		tokens := make([]string, 0, len(r.inflight))
		for tok := range r.inflight {
			tokens = append(tokens, tok)
		}
		r.mu.Unlock()
		lost, err := r.store.RenewLeases(ctx, r.opts.Replica, tokens, r.opts.LeaseTTL)
		if err != nil && ctx.Err() == nil {
			r.log.Warn("renew leases failed", "err", err)
		}
		// Another replica may run these now: stop ours rather than act next to it.
		r.mu.Lock()
		for _, tok := range lost {
			if cancel := r.inflight[tok]; cancel != nil {
				cancel(errLeaseLost)
			}
		}
		r.mu.Unlock()
		if len(lost) > 0 {
			r.log.Warn("leases lost; their calls were cancelled", "count", len(lost))
		}
	}
}

// reapLoop frees leases of dead replicas so their work is retaken.
func (r *Reconciler) reapLoop(ctx context.Context) {
	t := time.NewTicker(max(r.opts.LeaseTTL/2, 500*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := r.store.ReleaseExpiredLeases(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("release expired leases failed", "err", err)
		} else if n > 0 {
			r.log.Info("released expired leases", "count", n)
		}
	}
}

// errLeaseLost cancels a call whose lease moved to another replica.
var errLeaseLost = errors.New("lease lost: another replica took this resource over")

func randFloat() float64 { return rand.Float64() }

func (r *Reconciler) backoff(attempt int) time.Duration {
	d := r.opts.BackoffInitial
	for i := 1; i < attempt && d < r.opts.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, r.opts.BackoffMax)
	j := time.Duration(float64(d) * (rand.Float64()*0.4 - 0.2))
	return d + j
}
