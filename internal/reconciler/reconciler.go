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
	"sync/atomic"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/changewindow"
	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/metrics"
	"github.com/trueup-dev/trueup/internal/policy"
	"github.com/trueup-dev/trueup/internal/redact"
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
	// Redact holds the controller's secrets (nil: none): the messages, conditions and outputs
	// a result stores are scrubbed of the kept ones (Kept; in any form: an output number 1000
	// for the secret "1e3"), spans of every one. Each call holds its revealed values in it
	// while it runs: every log line written meanwhile is scrubbed of them.
	Redact *redact.Registry
	// Reveal, when set, gives each call its spec with secrets put back (nil: the stored
	// spec as it is).
	Reveal Reveal
	// Acquire, when set, looks action instances up instead of the map given to New: the
	// instance it returns stays usable until release is called (the config may be reloaded
	// meanwhile; a replaced instance is closed once its last call released it).
	Acquire func(name string) (act actions.Action, release func(), ok bool)
	// Plans, when set, is the gate the previews plan through, shared by the instances: a call
	// of a resource stops the resource's plan in progress before it calls the plugin, for
	// actions.PlanArbitrated plugins (nil: each instance's own gate).
	Plans *actions.PlanGate
	// Metrics records attempts (nil: none).
	Metrics *metrics.Metrics
	// ActionType names an action instance's plugin type, as configured now (the traces'
	// action spans name both; nil: the type is left out).
	ActionType func(name string) string
	// CheckReference decides, before each call, whether a dependency may cross namespaces
	// (crossref.Check over the config's grants, read live); a refused one stalls the
	// dependent with ingest's message. nil: every one may.
	CheckReference func(from string, target graph.ID, outputs []string) error
	// Policies, when set, gives the policies in force and how long an approval stays valid,
	// read at each change (a reload applies at once): a change of a resource they select is
	// planned, decided and called only when allowed or approved (gate.go). nil: no gate.
	Policies func() (*policy.Set, time.Duration)
	// Windows, when set, gives the change windows in force, read at each change (a reload
	// applies at once): a change of a resource a window holds is not called; it waits,
	// due when the windows let it proceed. nil: no windows.
	Windows func() *changewindow.Set
	// Author gives the author of a source's revision, for policies that read change.author
	// and for notAuthor (nil: unknown).
	Author func(ctx context.Context, source, revision string) (policy.Author, error)
}

// Reconciler runs the workers of one replica.
type Reconciler struct {
	opts  Options
	store *store.Store
	log   *slog.Logger

	wake chan struct{}
	// dueNews: due work was announced since the claimer last began a claim (Wake); its
	// next claim scans the due rows from the start (dueFloor).
	dueNews     atomic.Bool
	completions chan pending
	// starts carries items whose call starts to the start writer, which stores their status
	// (a claim shows Reconciling only once its call runs).
	starts chan started
	// startsPending holds starts that did not fit in starts (a writer far behind), drained by
	// the writer after the channel; startsWake tells it one was added.
	startsMu      sync.Mutex
	startsPending []started
	startsLost    int // starts neither sent nor kept (the pending list was full)
	startsWake    chan struct{}
	callAvg       atomic.Int64 // moving average of action call durations (ns), for claim sizing
	busy          atomic.Int32 // workers inside a call

	mu sync.Mutex
	// inflight maps lease tokens of claimed work (queued, running, or being written) to its
	// call: leases are renewed by token, and a call whose lease is gone is stopped.
	inflight map[string]*call
	// suspended holds why this replica may not run anything now: its liveness session is
	// down, or its leases could not be renewed for most of their TTL. Either way peers may
	// take its work at any moment, so nothing is claimed or started.
	suspended map[string]error
	// epoch grows at every suspension: a claim that began before one is stale.
	epoch uint64
}

// Suspension reasons.
const (
	suspendLiveness = "liveness"
	suspendRenewal  = "renewal"
)

// call is one claimed item's life on this replica.
type call struct {
	cancel  context.CancelCauseFunc // nil until the call starts
	dropped bool                    // lease given up before the call started: do not run it
	writing bool                    // handed to the result writer: its lease ends with the write
	called  bool                    // the call returned: its start no longer needs storing
	claim   claimWindow             // the claim that took it, for its trace
	id      int64                   // the resource's row: renewals find it by key
	// at is the last place of the row's queue version the replica was told of: the claim's,
	// its start's or a renewal's, each of which writes a version elsewhere (a renewal's reply
	// may come after a later start's). The result's locking read looks there first.
	at string
}

// claimWindow is when the batch claim that took an item ran, and how many it took: each
// item's trace shows that claim as its own claim span.
type claimWindow struct {
	start, end time.Time
	size       int
}

// New returns a reconciler. acts maps action instance names (from the config) to plugins
// (unused when Options.Acquire is set).
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
	if opts.Acquire == nil {
		opts.Acquire = func(name string) (actions.Action, func(), bool) {
			a, ok := acts[name]
			return a, func() {}, ok
		}
	}
	r := &Reconciler{opts: opts, store: st, log: logger,
		wake: make(chan struct{}, 1), completions: make(chan pending, 4*maxBatch), inflight: map[string]*call{}, suspended: map[string]error{},
		// Room for every item this replica can hold at once (queued and running): a worker
		// never waits on it.
		starts: make(chan started, queueSize(opts.Workers)+opts.Workers), startsWake: make(chan struct{}, 1)}
	// Until calls were seen, they count as long: no claim runs ahead of the workers.
	r.callAvg.Store(int64(prefetchBelow))
	return r
}

// Wake makes the claimer look for work at once, all of the due rows. The owner of the
// replica's LISTEN connection calls it on every notification of store.WorkChannel (and after
// every reconnect).
func (r *Reconciler) Wake() {
	r.dueNews.Store(true)
	r.nudge()
}

// nudge makes the claimer look for work at once from where its claims scan (a worker
// finished, a batch of results was written).
func (r *Reconciler) nudge() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Suspend stops everything in flight at once and claims nothing until Resume: the replica's
// liveness session ended, so peers may release its leases and run that work right now.
// Calls are cancelled (their results are fenced out anyway); queued items are dropped. It
// then waits (at most quiesceWait) until the cancelled calls have returned, so that the
// caller releases this replica's leases only once nothing of it runs.
func (r *Reconciler) Suspend(cause error) {
	n := r.suspend(suspendLiveness, cause)
	r.log.Warn("liveness lost: stopped work in flight and claiming", "cancelled", n, "err", cause)
	r.quiesce(quiesceWait)
}

// Resume lets the claimer work again (liveness regained; the previous session's leases were
// released by whoever saw it end first).
func (r *Reconciler) Resume() { r.resume(suspendLiveness) }

// quiesceWait bounds how long Suspend waits for cancelled calls (exec: SIGTERM, a 2 s grace,
// SIGKILL).
const quiesceWait = 10 * time.Second

// suspend records reason, cancels every running call and drops every queued item; it returns
// how many calls it cancelled.
func (r *Reconciler) suspend(reason string, cause error) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.suspended[reason] = cause
	r.epoch++
	n := 0
	for _, c := range r.inflight {
		if c.writing {
			continue
		}
		if c.cancel != nil {
			c.cancel(cause)
			n++
		}
		c.dropped = true
	}
	return n
}

func (r *Reconciler) resume(reason string) {
	r.mu.Lock()
	_, was := r.suspended[reason]
	delete(r.suspended, reason)
	r.mu.Unlock()
	if was {
		r.Wake()
	}
}

// quiesce waits until no call runs, at most d.
func (r *Reconciler) quiesce(d time.Duration) {
	deadline := time.Now().Add(d)
	for r.busy.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := r.busy.Load(); n > 0 {
		r.log.Warn("calls still running after they were cancelled", "count", n)
	}
}

// claimable reports whether claims may run, and the epoch to check them against.
func (r *Reconciler) claimable() (bool, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.suspended) == 0, r.epoch
}

// Run claims and reconciles until ctx ends, then waits for in-flight work to finish (their
// calls see a cancelled context) and releases what it could not complete.
func (r *Reconciler) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	loopCtx, stopLoops := context.WithCancel(context.Background())
	defer stopLoops()
	wg.Add(1)
	go func() { defer wg.Done(); r.renewLoop(loopCtx) }()

	// The queue holds claimed items waiting for a worker: when calls are short, claims take
	// more than the idle workers so that workers never wait for the next claim.
	queue := make(chan store.Claimed, queueSize(r.opts.Workers))
	startsDone := make(chan struct{})
	var writers sync.WaitGroup
	for range resultWriters {
		writers.Add(1)
		go func() { defer writers.Done(); r.writeLoop(r.completions) }()
	}
	go func() { defer close(startsDone); r.startLoop(r.starts) }()
	var workers sync.WaitGroup
	for i := 0; i < r.opts.Workers; i++ {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for c := range queue {
				if ctx.Err() != nil {
					r.release([]store.Claimed{c})
					continue
				}
				cctx, cancel, claim, ok := r.start(ctx, c)
				if !ok {
					// Dropped while it waited (suspension, lease lost): give the lease back
					// if it is still ours (fenced by the token).
					r.release([]store.Claimed{c})
					continue
				}
				r.process(ctx, cctx, c, claim)
				cancel(nil)
				r.busy.Add(-1)
				r.nudge()
			}
		}()
	}
	r.claimLoop(ctx, queue)
	close(queue)
	workers.Wait()
	close(r.starts)
	<-startsDone
	close(r.completions)
	writers.Wait()
	stopLoops()
	wg.Wait()
	return nil
}

// queueSize is how many claimed items may wait for a worker.
func queueSize(workers int) int { return max(2*workers, maxOutstanding) }

// start creates c's call context and marks it running, under the same lock that Suspend and
// the renewal take: a call either starts before them (and they cancel it) or not at all. It
// reports false when the item was dropped while it waited, or claims are suspended.
func (r *Reconciler) start(parent context.Context, c store.Claimed) (context.Context, context.CancelCauseFunc, claimWindow, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cl := r.inflight[c.LeaseToken]
	if cl == nil || cl.dropped || len(r.suspended) > 0 {
		return nil, nil, claimWindow{}, false
	}
	ctx, cancel := context.WithCancelCause(parent)
	cl.cancel = cancel
	r.busy.Add(1)
	return ctx, cancel, cl.claim, true
}

// claimSize is how many items to claim now: enough to keep every worker busy until the next
// claim. When calls are short (under prefetchBelow on average), a claim may fill the queue
// too, up to twice the workers in all — and, when calls take almost nothing (under
// burstBelow: noop, or a plugin answering from a cache), up to maxOutstanding, since then the
// claim's commit is the bottleneck and items never wait long — and it waits until at least
// half the workers' worth is free so that claims stay large. When calls are long, only idle
// workers get items, so that other replicas can take the rest.
func claimSize(workers, busy, queued int, avgCall time.Duration) int {
	idle := workers - busy - queued
	if avgCall >= prefetchBelow {
		return max(idle, 0)
	}
	target := 2 * workers
	if avgCall < burstBelow {
		target = max(target, maxOutstanding)
	}
	free := target - busy - queued
	if idle <= 0 && free < max(workers/2, 1) {
		return 0
	}
	return max(free, 0)
}

const (
	// prefetchBelow: calls shorter than this on average let claims run ahead of the workers.
	prefetchBelow = 50 * time.Millisecond
	// burstBelow: calls shorter than this let claims take up to maxOutstanding items.
	burstBelow = 2 * time.Millisecond
	// maxOutstanding bounds items claimed and not yet written, per replica.
	maxOutstanding = maxBatch
)

// claimLoop claims as many items as claimSize says and queues them for the workers.
func (r *Reconciler) claimLoop(ctx context.Context, queue chan store.Claimed) {
	var floor dueFloor
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			r.drain(queue)
			return
		case <-timer.C:
		case <-r.wake:
		}
		wait := r.opts.PollInterval
		for ctx.Err() == nil {
			ok, epoch := r.claimable()
			if !ok {
				break // Resume wakes us
			}
			n := claimSize(r.opts.Workers, int(r.busy.Load()), len(queue), time.Duration(r.callAvg.Load()))
			if n == 0 {
				break // a worker that finishes wakes us
			}
			claimStart := time.Now()
			from := floor.from(claimStart, r.dueNews.Swap(false))
			claimed, oldest, err := r.store.ClaimFrom(ctx, r.opts.Replica, n, r.opts.LeaseTTL, from)
			window := claimWindow{start: claimStart, end: time.Now(), size: len(claimed)}
			if err != nil {
				if from.IsZero() {
					r.dueNews.Store(true) // the news is not taken in yet
				}
				if ctx.Err() == nil {
					r.log.Warn("claim failed", "err", err)
				}
				break
			}
			floor.took(claimStart, from, oldest, window.end.Sub(claimStart))
			r.mu.Lock()
			// A suspension that began while the claim ran may already have handed these
			// rows to a peer: they are dropped, never started.
			stale := len(r.suspended) > 0 || r.epoch != epoch
			for _, c := range claimed {
				r.inflight[c.LeaseToken] = &call{dropped: stale, claim: window, id: c.ID, at: c.QueueAt}
			}
			r.mu.Unlock()
			for _, c := range claimed {
				queue <- c // never blocks: claimSize leaves room
			}
			if len(claimed) < n {
				// The queue is drained: sleep until the next due item from the floor (or a
				// notification), at most the poll interval and until the next scan from the
				// start is due (a row made due below the floor unannounced).
				wait = min(r.nextWait(ctx, floor.at), max(time.Until(floor.nextFull()), 10*time.Millisecond))
				break
			}
		}
		timer.Reset(wait)
	}
}

// drain releases items still queued at shutdown.
func (r *Reconciler) drain(queue chan store.Claimed) {
	var left []store.Claimed
	for {
		select {
		case c := <-queue:
			left = append(left, c)
		default:
			r.release(left)
			return
		}
	}
}

// nextWait is how long to sleep before looking again: until the next due item from floor
// (below it lie the dead entries a long transaction elsewhere keeps), at most the poll
// interval (notifications cut it short).
func (r *Reconciler) nextWait(ctx context.Context, floor time.Time) time.Duration {
	wait := r.opts.PollInterval
	if next, err := r.store.NextDueFrom(ctx, floor); err == nil && next != nil {
		if d := time.Until(*next); d < wait {
			wait = max(d, 10*time.Millisecond)
		}
	}
	return wait
}

// observeCall feeds the moving average of call durations (weight 1/8 per call).
func (r *Reconciler) observeCall(d time.Duration) {
	for {
		old := r.callAvg.Load()
		nv := old + (int64(d)-old)/8
		if r.callAvg.CompareAndSwap(old, nv) {
			return
		}
	}
}

// writing marks tokens as handed to the result writer: their leases end with the write, so a
// renewal that finds them gone is no loss. It returns where each one's queue row was last
// placed ("" when unknown).
func (r *Reconciler) writing(tokens []string) (places []string) {
	places = make([]string, len(tokens))
	r.mu.Lock()
	for i, t := range tokens {
		if c := r.inflight[t]; c != nil {
			c.writing = true
			places[i] = c.at
		}
	}
	r.mu.Unlock()
	return places
}

// recordPlaces records where a start or a renewal left queue rows (by lease token). A row
// handed to the writer keeps the place it was handed with: the locking read finds it by key
// if it moved since.
func (r *Reconciler) recordPlaces(places map[string]string) {
	r.mu.Lock()
	for t, at := range places {
		if c := r.inflight[t]; c != nil && !c.writing {
			c.at = at
		}
	}
	r.mu.Unlock()
}

func (r *Reconciler) untrack(tokens ...string) {
	r.mu.Lock()
	for _, t := range tokens {
		delete(r.inflight, t)
	}
	r.mu.Unlock()
}

// release gives claimed items back untouched (shutdown).
func (r *Reconciler) release(cs []store.Claimed) {
	if len(cs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ids, toks := make([]int64, len(cs)), make([]string, len(cs))
	r.mu.Lock()
	for i, c := range cs {
		ids[i], toks[i] = c.ID, c.LeaseToken
		if cl := r.inflight[c.LeaseToken]; cl != nil {
			cl.dropped = true // being given back: a renewal that misses it is no loss
		}
	}
	r.mu.Unlock()
	if err := r.store.Release(ctx, r.opts.Replica, ids, toks); err != nil {
		r.log.Warn("release leases", "count", len(cs), "err", err)
	}
	r.untrack(toks...)
}

// renewLoop extends the leases of claimed work in one statement, every TTL/3.
func (r *Reconciler) renewLoop(ctx context.Context) {
	t := time.NewTicker(r.opts.LeaseTTL / 3)
	defer t.Stop()
	lastRenewed := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		ids, tokens := make([]int64, 0, len(r.inflight)), make([]string, 0, len(r.inflight))
		for tok, c := range r.inflight {
			if !c.writing && !c.dropped {
				ids, tokens = append(ids, c.id), append(tokens, tok)
			}
		}
		r.mu.Unlock()
		placed, lost, err := r.store.RenewLeases(ctx, r.opts.Replica, ids, tokens, r.opts.LeaseTTL)
		switch {
		case err == nil:
			r.recordPlaces(placed)
			lastRenewed = time.Now()
			r.resume(suspendRenewal)
		case ctx.Err() != nil:
			return
		default:
			r.log.Warn("renew leases failed", "err", err)
			if selfFence(time.Since(lastRenewed), r.opts.LeaseTTL) {
				// Our leases run out soon and the maintenance holder will hand the work to
				// another replica: stop it now rather than run next to it.
				n := r.suspend(suspendRenewal, errRenewFailing)
				r.log.Warn("leases not renewed for most of their TTL: stopped work in flight and claiming", "cancelled", n)
			}
		}
		// A token missing from the renewal is lost only if its work is still ours and not
		// written meanwhile (a result committed between the snapshot and the statement clears
		// its lease: that is the normal end of a lease, not a loss).
		r.mu.Lock()
		confirmed := confirmLost(lost, r.inflight)
		for _, c := range confirmed {
			if c.cancel != nil {
				// Another replica may run it now: stop ours rather than act next to it.
				c.cancel(errLeaseLost)
			} else {
				c.dropped = true
			}
		}
		r.mu.Unlock()
		if n := len(confirmed); n > 0 {
			r.log.Warn("leases lost; their calls were cancelled", "count", n)
		}
	}
}

// confirmLost returns the calls whose leases a renewal found gone and that are really lost:
// still ours, and not handed to the result writer (whose commit ends a lease normally; a
// token written and untracked between the renewal's snapshot and its statement is no loss).
func confirmLost(lost []string, inflight map[string]*call) []*call {
	var out []*call
	for _, tok := range lost {
		if c := inflight[tok]; c != nil && !c.writing && !c.dropped {
			out = append(out, c)
		}
	}
	return out
}

// selfFence reports whether leases not renewed for since (of ttl) must be presumed lost: past
// two thirds of the TTL the maintenance holder may release them before the next renewal.
func selfFence(since, ttl time.Duration) bool { return since >= ttl*2/3 }

var errRenewFailing = errors.New("leases could not be renewed for most of their TTL; another replica may take this work over")

// errLeaseLost cancels a call whose lease moved to another replica.
var errLeaseLost = errors.New("lease lost: another replica took this resource over")

func randFloat() float64 { return rand.Float64() }

func (r *Reconciler) backoff(attempt int) time.Duration {
	return Backoff(attempt, r.opts.BackoffInitial, r.opts.BackoffMax, rand.Float64())
}
