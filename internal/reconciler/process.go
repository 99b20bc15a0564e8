package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/tracing"
)

// defaultRequeue is the delay before the next call when an action is in progress and did not
// say when to come back.
const defaultRequeue = 5 * time.Second

// History results.
const (
	resultSucceeded  = "Succeeded"
	resultInProgress = "InProgress"
	resultFailed     = "Failed"
	resultStalled    = "Stalled"
	resultDrifted    = "Drifted"
	resultInSync     = "InSync"
)

// msgDriftGone is what a resync that finds the drift the gate held gone says.
const msgDriftGone = "drift gone: nothing applied; the change the policies held is no longer needed"

// attempt is one call's outcome, gathered before the fenced write.
type attempt struct {
	op      string // reconcile | delete
	trigger string
	started time.Time
	ended   time.Time
	res     actions.Result
	err     error
	drift   string // Observe found drift (a reconcile followed, unless leave)
	inSync  bool   // Observe found nothing to do (or drift only in ignored fields: ignored)
	// driftPolicy is the type's drift policy (nil: remediate); leave says Observe found drift
	// that it leaves in place (detect, notify), ignored that it found drift only in fields it
	// ignores.
	driftPolicy    *manifest.DriftPolicy
	leave, ignored bool
	// resolved is what the call took from the resource's dependencies (nil: none).
	resolved *store.Resolved
	// traceID names the attempt's trace when it is sampled ("": none); history keeps it.
	traceID string
	// revision is the revision a delete was called at, and revisionWhy which one it is
	// (callRevision); history keeps both. "" for a reconcile.
	revision, revisionWhy string
	// gate is the passage of a change through the policies (nil: not gated); unselected says
	// no policy selects the resource; wasHeld that the gate held its change before (wasHeld).
	gate                *gate
	unselected, wasHeld bool
	// window is what the change windows made of the call.
	window windowCheck
}

// held reports whether the gate held the change: the plugin was not called.
func (a *attempt) held() bool {
	return a.gate != nil && a.err == nil && a.gate.outcome >= gateWaiting
}

// origins are the paths of the called spec whose value came from other namespaces (nil: the
// call resolved nothing).
func (a *attempt) origins() map[string][]string {
	if a.resolved == nil {
		return nil
	}
	return a.resolved.Origins
}

// process runs one claimed item and writes its result. ctx is the call's own context (from
// start): it also ends when the lease is found lost (renewLoop) or the replica suspends;
// shutdown is the replica's.
func (r *Reconciler) process(shutdown, ctx context.Context, c store.Claimed, claim claimWindow) {
	a := attempt{started: time.Now(), trigger: trigger(c), driftPolicy: c.Drift}
	act, done, err := r.actionFor(c)
	defer done()
	if c.Deleting {
		a.op = "delete"
	} else {
		a.op = "reconcile"
	}
	var resolved *store.Resolved
	var foreign []string // values taken from other namespaces (resolution.foreign)
	if c.Deleting {
		// A delete gets the spec it was last applied with: its dependencies may be going too.
		// Its messages are scrubbed of what that spec (or the last resolved one) took from
		// other namespaces.
		foreign = append(foreignIn(c.Spec, c.ResolvedSpec, c.Namespace, c.ResolvedOrigins),
			foreignIn(c.Spec, c.AppliedSpec, c.Namespace, c.AppliedOrigins)...)
		c.Spec = deleteSpec(c)
		a.revision, a.revisionWhy = callRevision(c)
	}
	if err == nil && c.HasDeps && !c.Deleting {
		// References to dependencies' outputs first: secrets are put back into the resolved spec.
		var spec json.RawMessage
		spec, resolved, foreign, err = r.resolve(ctx, c, claim.end)
		if errors.Is(err, errNotReady) {
			// Given back before any trace is started: a dependent waiting for its dependencies
			// may be claimed and given back many times, and a trace holding only a claim would
			// say nothing that the resource's status does not.
			r.release([]store.Claimed{c})
			rctx, cancel := context.WithTimeout(shutdown, 10*time.Second)
			if rerr := r.store.RefreshDependencies(rctx, []int64{c.ID}); rerr != nil {
				r.log.WarnContext(ctx, "refresh a dependent given back", "resource", c.Namespace+"/"+c.Kind+"/"+c.Name, "err", rerr)
			}
			cancel()
			return
		}
		if err == nil {
			c.Spec = spec
		}
	}
	if err == nil {
		r.checkWindows(&c, &a)
	}
	held := a.window.held != nil // by a window: nothing is called
	if !held {
		// The call starts: from now on the resource shows Reconciling (the start writer
		// stores it).
		r.callStarting(c)
	}
	// The trace starts here but is dated from the claim: it covers the resolve above.
	ctx, span := startTrace(ctx, c, claim, a.started, a.trigger)
	a.traceID = tracing.TraceID(span)
	handed := false // to the writer, which ends the span after the write
	defer func() {
		if !handed {
			span.End()
		}
	}()
	if err == nil && !held {
		a.gate, a.unselected = r.gateFor(&c, a.trigger)
		a.wasHeld = wasHeld(&c)
		if a.gate != nil {
			var through bool
			if through, err = r.letThrough(ctx, &c, a.trigger); through {
				a.gate = nil
			}
		}
	}
	spec, secrets, revealErr := c.Spec, []string(nil), error(nil)
	if err == nil && !held && r.opts.Reveal != nil {
		spec, secrets, revealErr = r.opts.Reveal(ctx, c)
	}
	scrub := actions.Scrubber(secrets)
	numbers := actions.NewNumbers(scrub, secrets)
	req := actions.Request{Resource: actions.Resource{APIVersion: c.APIVersion, Kind: c.Kind, Namespace: c.Namespace,
		Name: c.Name, UID: c.UID, Generation: c.Generation, Spec: spec, Labels: c.Labels, Annotations: c.Annotations,
		Source: c.Source, Revision: revisionOf(c), FallbackRevision: fallbackRevision(c)}, With: c.ActionWith, State: c.ActionState, Secrets: secrets,
		Checkpoint: func(ctx context.Context, state json.RawMessage) error {
			return r.store.SaveActionState(ctx, c.ID, c.LeaseToken, scrubJSON(state, scrub, numbers))
		}}
	switch {
	case err != nil:
		a.err = err
	case revealErr != nil:
		a.err = revealErr
	case held:
	default:
		release := r.opts.Redact.Hold(secrets)
		r.call(ctx, act, c.ActionName, req, c.Deleting, foreign, &a)
		release()
	}
	a.ended = time.Now()
	if len(secrets) > 0 {
		scrubAttempt(&a, r.opts.Redact.KeptWith(secrets), scrub, numbers)
	}
	if len(foreign) > 0 {
		scrubMessages(&a, actions.Scrubber(foreign))
	}
	if why := unstorableState(a); why != "" {
		// Written, it would fail the whole result batch; as a failed attempt, the resource
		// backs off and keeps its last state.
		a.res = actions.Result{}
		a.err = fmt.Errorf("the action's state was not stored: %s", why)
	}
	r.observeCall(a.ended.Sub(a.started))
	if err == nil && revealErr == nil && !a.held() && a.window.held == nil {
		r.opts.Metrics.ActionCalled(c.ActionName, a.op, actionResult(a))
	}
	if shutdown.Err() != nil && a.err != nil {
		// Shutting down: the call was interrupted, not failed. Another replica (or this one
		// after restart) takes the item again. A call that finished is written as usual.
		traceReleased(span, "interrupted by shutdown; the item is given back")
		r.release([]store.Claimed{c})
		return
	}
	if cause := context.Cause(ctx); a.err != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		// Cancelled because the lease is gone (lost, or this replica's session ended): the
		// work belongs to whoever holds it now. Writing would fail on the fence anyway.
		traceReleased(span, "call stopped: lease gone")
		r.log.InfoContext(ctx, "call stopped: lease gone", "resource", c.Namespace+"/"+c.Kind+"/"+c.Name, "cause", cause)
		r.untrack(c.LeaseToken)
		return
	}
	a.resolved = resolved
	handed = true
	r.mu.Lock()
	if cl := r.inflight[c.LeaseToken]; cl != nil {
		cl.called = true
	}
	r.mu.Unlock()
	r.completions <- pending{c: c, a: a, span: span}
}

// deleteSpec is the spec a delete is called with: the one the last successful reconcile was
// called with (references resolved), so that the module or script of the applied revision
// gets the inputs it applied, not a later desired state that never applied (a variable
// renamed in a commit that failed to apply). A resource applied before that was recorded
// gets the spec of its last call with references resolved, else its latest spec.
func deleteSpec(c store.Claimed) json.RawMessage {
	switch {
	case len(c.AppliedSpec) > 0:
		return c.AppliedSpec
	case len(c.ResolvedSpec) > 0:
		return c.ResolvedSpec
	}
	return c.Spec
}

// Why a delete runs at the revision callRevision chose.
const (
	atApplied  = "the revision it was last applied at"
	atRemoving = "the revision that removed it (never applied)"
	atNewest   = "the source's newest revision (the delete at the applied revision failed)"
)

// callRevision is the revision a delete is made at, and why (atApplied, atRemoving,
// atNewest); "" for a reconcile, which runs at the revision that last wrote the resource's
// desired state (c.Revision).
//
// A delete runs at the revision the resource was last applied at: what the action read
// there (a Terraform module kept in the repository, a script) applied it and can delete it,
// while the removing commit may have broken or removed it. When that delete failed, what
// applied may be what cannot delete (prevent_destroy, a provider version pulled from the
// registry), and the operator's fix is a push after the removal: the retries alternate, the
// odd attempts (c.Attempt counts the failures since the delete started) running at the
// source's newest revision when it is neither the applied revision nor the removing one,
// the even ones at the applied revision again (its failure may have been passing). A
// resource never applied is deleted at the revision that removed it.
func callRevision(c store.Claimed) (revision, why string) {
	switch {
	case !c.Deleting:
		return "", ""
	case c.AppliedRevision == "":
		return c.Revision, atRemoving
	case c.Attempt%2 == 1 && c.SourceRevision != "" && c.SourceRevision != c.AppliedRevision && c.SourceRevision != c.Revision:
		return c.SourceRevision, atNewest
	}
	return c.AppliedRevision, atApplied
}

// revisionOf is the revision a call of c is made at.
func revisionOf(c store.Claimed) string {
	if rev, _ := callRevision(c); rev != "" {
		return rev
	}
	return c.Revision
}

// fallbackRevision is, for a delete, where a plugin reads the repository when the commit of
// callRevision is gone (history rewritten): the newest revision the source applied, so that
// a fix pushed to a module reaches a delete that cannot read the old one. "" otherwise.
func fallbackRevision(c store.Claimed) string {
	if !c.Deleting || c.SourceRevision == revisionOf(c) {
		return ""
	}
	return c.SourceRevision
}

// call runs the plugin: Delete, or Observe then Reconcile on a resync, or Reconcile. A
// plugin that panics fails the attempt (retried with backoff) instead of stopping the
// controller; the panic's text is not kept (it may quote the spec it was given). foreign are
// the values the call took from other namespaces (resolution.foreign), scrubbed from its spans
// as from its messages.
func (r *Reconciler) call(ctx context.Context, act actions.Action, name string, req actions.Request, deleting bool, foreign []string, a *attempt) {
	var open trace.Span // the span of the plugin call running: a panic ends it failed
	// What a span of this call records is scrubbed as the history row is: of the call's own
	// secrets (revealed SOPS fields, secretRef values: req.Secrets, which the registry holds
	// only while the call runs) with the values it took from other namespaces, and of the
	// controller's. Spans go to a collector outside, often a vendor's; a plugin error may quote
	// a value it was given. Unused unless the attempt's span records (then the action spans do).
	scrub := r.opts.Redact.Scrub
	if trace.SpanFromContext(ctx).IsRecording() {
		scrub = r.opts.Redact.With(slices.Concat(req.Secrets, foreign))
	}
	done, err := actions.GateFor(r.opts.Plans, act).Want(ctx, req.Resource)
	if err != nil {
		a.err = err
		return
	}
	defer done()
	g := a.gate
	if g != nil {
		g.spanScrub = scrub
	}
	defer func() {
		if p := recover(); p != nil {
			r.log.ErrorContext(ctx, "action panicked", "resource", req.Resource.Namespace+"/"+req.Resource.Kind+"/"+req.Resource.Name, "operation", a.op)
			a.res, a.err = actions.Result{}, fmt.Errorf("the action panicked during %s (a bug in the plugin; see the controller's log)", a.op)
			if open != nil {
				endAction(open, a.err, scrub, a.res)
			}
		}
	}()
	if g != nil && a.trigger != "resync" && !r.decide(ctx, act, name, &req, deleting, a) {
		return
	}
	switch {
	case deleting:
		actx, span := r.actionSpan(ctx, "delete", name, req)
		open = span
		a.res, a.err = act.Delete(actx, req)
		endAction(span, a.err, scrub, a.res)
	case a.trigger == "resync":
		if obs, ok := act.(actions.Observer); ok {
			actx, span := r.actionSpan(ctx, "observe", name, req)
			open = span
			o, oerr := obs.Observe(actx, req)
			endAction(span, oerr, scrub, actions.Result{Done: oerr == nil && o.InSync})
			open = nil
			switch {
			case oerr != nil:
				a.err = fmt.Errorf("observe: %w", oerr)
			case o.InSync:
				a.inSync = true
			default:
				// The paths' values are scrubbed as the attempt's messages are (scrubAttempt,
				// scrubMessages), as one set.
				if observedDrift(o, req.Resource.Spec, r.opts.Redact.KeptWith(slices.Concat(req.Secrets, foreign)), a) {
					return
				}
			}
		}
		if !a.inSync && a.err == nil && a.window.recheck != nil && r.windowHolds(a.window.recheck, a) {
			return
		}
		if !a.inSync && a.err == nil && g != nil && !r.decide(ctx, act, name, &req, deleting, a) {
			return
		}
		if !a.inSync && a.err == nil {
			actx, span := r.actionSpan(ctx, "reconcile", name, req)
			open = span
			a.res, a.err = act.Reconcile(actx, req)
			endAction(span, a.err, scrub, a.res)
		}
	default:
		actx, span := r.actionSpan(ctx, "reconcile", name, req)
		open = span
		a.res, a.err = act.Reconcile(actx, req)
		endAction(span, a.err, scrub, a.res)
	}
}

// scrub removes the controller's kept secrets from text a result stores (scrubAttempt removes
// the call's own with them, as one set: Registry.KeptWith): a stored message does not depend on the calls running beside it, and the
// writer does not rebuild a replacer each time a call starts or ends.
func (r *Reconciler) scrub(s string) string {
	scrub, _ := r.opts.Redact.Kept()
	return scrub(s)
}

// complete writes results, retrying a transaction PostgreSQL aborted to break a deadlock or a
// serialization conflict.
func (r *Reconciler) complete(items []store.Completion) ([]int64, error) {
	var lost, refresh []int64
	var err error
	for try := 0; try < 3; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		lost, refresh, err = r.store.CompleteResults(ctx, items)
		cancel()
		if !store.IsRetryable(err) {
			break
		}
		// Batches lock their rows in id order and should never deadlock: say so when one did.
		r.log.Warn("write results: the batch is written again", "count", len(items), "try", try+1, "err", err)
	}
	if err == nil && len(refresh) > 0 {
		// The results are written: what waited for them is told now. A failure here is
		// caught up by the maintenance sweep (StaleWaits).
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if rerr := r.store.RefreshDependencies(ctx, refresh); rerr != nil {
			r.log.Warn("refresh dependents", "count", len(refresh), "err", rerr)
		}
		cancel()
	}
	return lost, err
}

// unstorable replaces a result the database refused with a failed attempt saying so, so that
// the resource backs off instead of being retried at every lease expiry.
func (r *Reconciler) unstorable(p *pending, place string, cause error) store.Completion {
	a := p.a
	a.res = actions.Result{}
	a.err = fmt.Errorf("the action's result could not be stored: %v", cause)
	const quiet = false // a failed attempt
	return r.completion(&p.c, &a, place, quiet)
}

// completion is the result of attempt a on claim c, its queue row last known at place
// (store.Completion.QueueAt). Fn reads c and a when the batch is written.
func (r *Reconciler) completion(c *store.Claimed, a *attempt, place string, quiet bool) store.Completion {
	return store.Completion{ID: c.ID, Token: c.LeaseToken, QueueAt: place,
		Fn:        func(cur store.Current) store.Update { return r.update(*c, *a, cur) },
		Namespace: c.Namespace, Kind: c.Kind, Name: c.Name, Source: c.Source, Quiet: quiet}
}

// pending is a finished call waiting for the batch writer.
type pending struct {
	c    store.Claimed
	a    attempt
	span trace.Span // the attempt's reconcile span, ended by the writer
}

// maxBatch bounds how many results one transaction writes.
const maxBatch = 256

// resultWriters is how many result writers (writeLoop) take finished calls from the one
// channel, each writing its own batches through a connection of the pool. While one
// writer's statements run in PostgreSQL, the other gathers, builds and writes the next
// batch (commits that notify still take turns): one writer would hold a first reconcile of
// many resources to one transaction at a time (drain_fresh 5,000–5,700 1/s with one,
// 7,200–7,300 with two, at 50,000 resources on 2 cores). Batches never deadlock
// with each other, as with the start writer: every batch locks its rows in id order, and a
// result whose lease moved on (its resource claimed again meanwhile, perhaps in the other
// writer's batch) is fenced out by its lease token.
const resultWriters = 2

// callStarting hands c to the start writer. It never blocks the call: starts has room for
// every item the replica holds at once, and should the writer fall further behind (a database
// that stalls it), the start waits in a pending list the writer drains after the channel.
// Release paths decide from a stored start whether an attempt was interrupted, so a start is
// kept until it is stored or its call is over.
func (r *Reconciler) callStarting(c store.Claimed) {
	s := started{Start: store.Start{ID: c.ID, Token: c.LeaseToken, Generation: c.Generation, Deleting: c.Deleting,
		Namespace: c.Namespace, Kind: c.Kind, Name: c.Name, Source: c.Source}, at: time.Now()}
	select {
	case r.starts <- s:
		return
	default:
	}
	r.startsMu.Lock()
	defer r.startsMu.Unlock()
	if len(r.startsPending) >= maxPendingStarts {
		// Far more starts than the replica can hold calls: not stored, counted and logged.
		r.startsLost++
		r.log.Warn("call start not recorded: the start writer is too far behind", "resource", c.Namespace+"/"+c.Kind+"/"+c.Name,
			"lost", r.startsLost)
		return
	}
	r.startsPending = append(r.startsPending, s)
	// The writer may be waiting on an empty channel: wake it.
	select {
	case r.startsWake <- struct{}{}:
	default:
	}
}

// maxPendingStarts bounds the starts waiting beside the channel.
const maxPendingStarts = 1 << 16

// takePending moves up to n pending starts out of the pending list.
func (r *Reconciler) takePending(n int) []started {
	r.startsMu.Lock()
	defer r.startsMu.Unlock()
	n = min(n, len(r.startsPending))
	out := append([]started(nil), r.startsPending[:n]...)
	r.startsPending = append(r.startsPending[:0], r.startsPending[n:]...)
	return out
}

// started is a call that started at at, for the start writer.
type started struct {
	store.Start
	at time.Time
}

// startDelay is how long a start waits before it is stored: a call that returns sooner goes
// from waiting to its result without the write (a start is worth showing only for calls long
// enough to be seen running), and the starts of that window share one transaction.
const startDelay = 10 * time.Millisecond

// Retry pause of a batch of starts the database refused: doubled on each failure up to the
// cap.
const (
	startRetryFirst = 100 * time.Millisecond
	startRetryMax   = 5 * time.Second
)

// startLoop stores that calls started (store.Started), in batches of whatever arrived
// meanwhile (the channel, then the pending list), each start startDelay after its call
// began. A call that returned already is left out: it finished before its start was stored,
// and its result says what it came to. A batch the database refuses is tried again after a
// pause, with whatever arrived meanwhile and again only the calls still running (the lease
// token fences a repeat); once in is closed (every call over) a failed batch is given up.
func (r *Reconciler) startLoop(in <-chan started) {
	timer := time.NewTimer(0)
	<-timer.C
	var (
		retry  []store.Start
		pause  time.Duration
		closed bool
	)
	for {
		var batch []store.Start
		if len(retry) > 0 {
			timer.Reset(pause)
			<-timer.C
			batch = retry
		} else {
			var first started
			if p := r.takePending(1); len(p) > 0 {
				first = p[0]
			} else if closed {
				return
			} else {
				select {
				case s, ok := <-in:
					if !ok {
						closed = true
						continue
					}
					first = s
				case <-r.startsWake:
					continue
				}
			}
			if d := time.Until(first.at.Add(startDelay)); d > 0 {
				timer.Reset(d)
				<-timer.C
			}
			batch = []store.Start{first.Start}
		}
	drain:
		for len(batch) < maxBatch && !closed {
			select {
			case s, ok := <-in:
				if !ok {
					closed = true
					break drain
				}
				batch = append(batch, s.Start)
			default:
				break drain
			}
		}
		for _, p := range r.takePending(maxBatch - len(batch)) {
			batch = append(batch, p.Start)
		}
		r.mu.Lock()
		live := batch[:0]
		for _, s := range batch {
			if c := r.inflight[s.Token]; c != nil && !c.called && !c.writing && !c.dropped {
				live = append(live, s)
			}
		}
		r.mu.Unlock()
		retry = nil
		if len(live) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		placed, err := r.store.Started(ctx, live)
		cancel()
		if err == nil {
			r.recordPlaces(placed)
			pause = 0
			continue
		}
		if closed {
			// Every call is over: their results (or releases) are written without it.
			r.log.Warn("record calls started: given up at shutdown", "count", len(live), "err", err)
			continue
		}
		pause = min(max(2*pause, startRetryFirst), startRetryMax)
		r.log.Warn("record calls started: will retry", "count", len(live), "in", pause, "err", err)
		retry = live
	}
}

// writeLoop writes finished calls in batches: whatever has queued up while the previous
// transaction ran goes into the next one, so under load the cost per result is a few rows,
// not a round trip. Items stay leased (and renewed) until written. resultWriters of them
// share in.
func (r *Reconciler) writeLoop(in <-chan pending) {
	// One batch's room for all: a pending (the claim and the attempt) is about a kilobyte,
	// and a batch grown from one element by appends copied it several times over.
	batch := make([]pending, 0, maxBatch)
	for first := range in {
		batch = append(batch[:0], first)
	drain:
		for len(batch) < maxBatch {
			select {
			case p, ok := <-in:
				if !ok {
					break drain
				}
				batch = append(batch, p)
			default:
				break drain
			}
		}
		tokens := make([]string, len(batch))
		for i := range batch {
			tokens[i] = batch[i].c.LeaseToken
		}
		places := r.writing(tokens)
		items := make([]store.Completion, len(batch))
		for i := range batch {
			// Fn is called before this batch ends (r.complete returns after it): it may read
			// the batch's element rather than a copy of its own.
			p := &batch[i]
			items[i] = r.completion(&p.c, &p.a, places[i], p.a.quiet(p.c))
		}
		writeStart := time.Now()
		outcome := make([]writeOutcome, len(batch)) // written, unless said otherwise below
		lost, err := r.complete(items)
		if err != nil && len(batch) > 1 {
			// One result the database refuses must not take the others down with it.
			r.log.Warn("write results as a batch failed; writing one by one", "count", len(batch), "err", err)
			lost = nil
			for i, it := range items {
				l, err := r.complete([]store.Completion{it})
				if err != nil {
					if l, err = r.complete([]store.Completion{r.unstorable(&batch[i], it.QueueAt, err)}); err == nil {
						outcome[i] = writeRefused
					}
				}
				if err != nil {
					outcome[i] = writeFailed
					r.log.ErrorContext(trace.ContextWithSpan(context.Background(), batch[i].span), "write result", "resource_id", it.ID, "err", err)
				}
				lost = append(lost, l...)
			}
		} else if err != nil {
			if l, err2 := r.complete([]store.Completion{r.unstorable(&batch[0], items[0].QueueAt, err)}); err2 == nil {
				lost = l
				outcome[0] = writeRefused
			} else {
				// The lease expires and the work is claimed again: nothing is lost, only repeated.
				outcome[0] = writeFailed
				r.log.ErrorContext(trace.ContextWithSpan(context.Background(), batch[0].span), "write result", "resource_id", batch[0].c.ID, "err", err2)
			}
		}
		writeEnd := time.Now()
		lostIDs := map[int64]bool{}
		for _, id := range lost {
			lostIDs[id] = true
		}
		for i, p := range batch {
			if lostIDs[p.c.ID] {
				outcome[i] = writeLost
				r.log.WarnContext(trace.ContextWithSpan(context.Background(), p.span), "lease lost; result discarded", "resource_id", p.c.ID)
			}
			traceWrite(p, writeStart, writeEnd, len(batch), outcome[i])
		}
		// The batch may have scheduled work (retries, requeues) sooner than the claimer's
		// next look: let it recompute its wait now that the rows are committed.
		r.nudge()
		r.untrack(tokens...)
		written := time.Now()
		for _, p := range batch {
			r.opts.Metrics.Reconciled(p.c.Kind, p.a.op, historyResult(p.a), p.a.ended.Sub(p.a.started), written.Sub(p.a.ended))
		}
		clear(batch) // what the attempts hold (specs, results, spans) is not kept until the next batch
	}
}

func actionResult(a attempt) string {
	switch {
	case a.err != nil && actions.IsTerminal(a.err):
		return "terminal"
	case a.err != nil:
		return "error"
	case a.inSync || a.leave || a.res.Done:
		return "success"
	default:
		return "in_progress"
	}
}

// historyResult names an attempt's result for metrics (as history does).
func historyResult(a attempt) string {
	switch {
	case a.window.held != nil:
		return resultWindowClosed
	case a.held():
		return a.gate.result()
	case a.leave:
		return resultDrifted
	case a.inSync:
		return resultInSync
	case a.err != nil && actions.IsTerminal(a.err):
		return resultStalled
	case a.err != nil:
		return resultFailed
	case !a.res.Done:
		return resultInProgress
	default:
		return resultSucceeded
	}
}

// actionFor returns the claimed item's action instance and the func that releases it once
// the call is over (the instance is not closed by a config reload before).
func (r *Reconciler) actionFor(c store.Claimed) (actions.Action, func(), error) {
	// Both are retried, not Stalled: a sync (the type back) or a rolling upgrade (a replica
	// that knows the action) fixes them without a spec change.
	if !c.TypeKnown {
		return nil, func() {}, fmt.Errorf("no ResourceType declares kind %s", c.Kind)
	}
	act, release, ok := r.opts.Acquire(c.ActionName)
	if !ok {
		return nil, func() {}, fmt.Errorf("action %q is not configured on replica %s", c.ActionName, r.opts.Replica)
	}
	return act, release, nil
}

// trigger names why this item runs, for history.
func trigger(c store.Claimed) string {
	switch {
	case c.ManualBy != "":
		// An operator (or the reconcile-requested-at annotation) asked for this run: a full
		// reconcile, never a drift check that may find nothing to do.
		return "manual"
	case c.Deleting:
		return "deleted"
	case c.DependencyBy != "":
		// Outputs this resource references changed: a full reconcile with the new values.
		return "dependency"
	case c.Attempt > 0:
		return "retry"
	case c.ObservedGeneration == 0 && len(c.ActionState) == 0:
		return "created"
	case c.ObservedGeneration < c.Generation && len(c.ActionState) == 0:
		return "spec-changed"
	case c.ObservedGeneration < c.Generation:
		// Work in flight for this generation (the last call, in progress, was at it) is a
		// requeue; state an action kept from an older generation's success is not.
		if synced, ok := status.Get(c.Conditions, status.Synced); ok && synced.ObservedGeneration == c.Generation {
			return "requeue"
		}
		return "spec-changed"
	case c.Phase == status.PhaseReconciling:
		return "requeue"
	default:
		return "resync"
	}
}

// update turns an attempt into the fenced write, given the row as it is now. Phase and
// conditions come from internal/status; this decides history, events and scheduling.
func (r *Reconciler) update(c store.Claimed, a attempt, cur store.Current) store.Update {
	now := time.Now()
	msg := ""
	if a.err != nil {
		msg = r.scrub(a.err.Error())
	} else {
		msg = r.scrub(a.res.Message)
	}
	h := &store.HistoryEntry{UID: c.UID, Namespace: c.Namespace, Kind: c.Kind, Name: c.Name, Generation: c.Generation,
		Revision: nonEmpty(a.revision, c.Revision), Operation: a.op, Trigger: a.trigger, Message: msg, Replica: r.opts.Replica,
		StartedAt: a.started, FinishedAt: now, Actor: c.ManualBy, TraceID: a.traceID}
	a.res.Outputs = r.boundOutputs(a.res.Outputs)
	if a.res.Outputs != nil {
		h.Outputs, _ = json.Marshal(a.res.Outputs)
	}
	ev := func(typ, reason, m string) store.Event {
		return store.Event{Namespace: c.Namespace, Kind: c.Kind, Name: c.Name, Source: c.Source, Type: typ, Reason: reason, Message: m, Replica: r.opts.Replica}
	}
	prev := status.State{Phase: cur.Phase, Conditions: cur.Conditions, ObservedGeneration: cur.ObservedGeneration}
	if a.trigger == "dependency" {
		h.Message = "outputs of " + c.DependencyBy + " changed" + prefixed(h.Message)
	}
	if a.revisionWhy != "" {
		// The revision field holds the revision the delete ran at; the message says which.
		h.Message = "at " + a.revisionWhy + prefixed(h.Message)
	}
	u := store.Update{ActionState: a.res.State, History: h, Message: msg, Resolved: a.resolved}
	if !a.held() || a.gate.outcome != gateWaiting {
		// One override serves the next call of the resource, whatever comes of it (a window
		// that refuses it, a policy's denial, a failure): only a change that waits for
		// approvals keeps it, for the approved call.
		u.ClearWindowOverride = c.WindowOverride
	}
	if p := a.window.overridden; p != "" {
		// Whichever way the result is written, its history row (h) names the override.
		defer func() { h.Message = p + h.Message }()
	}
	if a.err != nil {
		// Keep the handle of work in flight, including an intent the plugin checkpointed
		// during this failed call: the side effect may have happened.
		u.KeepActionState = true
	}
	set := func(s status.State) {
		u.Phase, u.Conditions, u.ObservedGeneration = s.Phase, s.Conditions, s.ObservedGeneration
	}

	if a.window.held != nil {
		return r.windowClosed(c, a, cur, u, prev, ev, now)
	}
	if a.held() {
		return r.held(c, a, cur, u, prev, ev, now)
	}
	if g := a.gate; g != nil && (g.outcome == gateAllowed || g.outcome == gateApproved) {
		// The gate let the call through: whatever the call did (a failure included),
		// nothing waits for approvals any more, and history names who let it through.
		was, ok := status.Get(prev.Conditions, status.Approved)
		if ok && was.Status != status.True {
			u.ClearApproval = true
		}
		gm := r.scrub(g.message())
		reason := status.ReasonPolicyAllowed
		if g.outcome == gateApproved {
			reason = status.ReasonApproved
			if was.Status != status.True || was.Reason != reason || was.Message != gm || was.ObservedGeneration != c.Generation {
				// Once per approval: a retry of the approved change is not approved again.
				u.Events = append(u.Events, ev(store.EventNormal, status.ReasonApproved, gm))
			}
		}
		prev.Conditions = status.Allowed(prev.Conditions, c.Generation, reason, gm, now)
		h.Message = gm + prefixed(h.Message)
	}
	if a.waited() {
		// The drift the gate held (for approvals, or refused) went away: nothing was applied,
		// and nothing is held any more. The plugin's state and the applied spec stay as they
		// are; history says why the hold ended.
		h.Result, h.Message = resultInSync, msgDriftGone
		set(status.InSync(status.DriftGone(prev, c.Generation, msgDriftGone, now), c.Generation, cur.Generation, cur.Deleting, now))
		u.ClearApproval, u.KeepActionState = true, true
		u.Message = msgDriftGone
		u.RunAt = r.resyncAt(c, now)
		return u
	}
	if _, ok := status.Get(prev.Conditions, status.Approved); ok && a.unselected {
		// No policy selects the resource any more.
		prev.Conditions = status.Remove(prev.Conditions, status.Approved)
		u.ClearApproval = true
	}
	if a.leave {
		return r.driftLeft(c, a, cur, u, prev, ev, now)
	}
	if a.inSync {
		// Nothing to do: keep status, schedule the next resync; no history row unless the
		// drift found is only in ignored fields. A change or a deletion that arrived
		// meanwhile shows at once (dirty runs it right after).
		u.History = nil
		if a.ignored {
			h.Result, h.Message, u.History = resultInSync, msgDriftIgnored+r.scrub(a.drift), h
		}
		set(status.InSync(status.WindowPassed(prev), c.Generation, cur.Generation, cur.Deleting, now))
		u.Message = "in sync: no drift found at resync"
		u.KeepActionState = true
		u.RunAt = r.resyncAt(c, now)
		u.AppliedRevision, u.AppliedSpec, u.AppliedOrigins = c.Revision, c.Spec, a.origins()
		return u
	}
	o := status.Outcome{Generation: c.Generation, CurrentGeneration: cur.Generation, Delete: a.op == "delete", Deleting: cur.Deleting,
		Message: msg, Drift: a.drift != ""}
	switch {
	case a.err != nil:
		o.Err, o.Terminal = msg, actions.IsTerminal(a.err) && a.op != "delete"
	case !a.res.Done:
		o.InProgress = true
	default:
		o.Done = true
	}
	st, removed := status.Result(prev, o, now)
	set(st)
	u.Remove = removed

	if a.op == "delete" {
		switch {
		case a.err != nil:
			h.Result = resultFailed
			u.Attempt = c.Attempt + 1
			u.RunAt = ptr(now.Add(r.backoff(u.Attempt)))
			u.Message = "delete failed: " + msg
			u.Events = append(u.Events, ev(store.EventWarning, "DeleteFailed", msg))
		case !a.res.Done:
			h.Result = resultInProgress
			u.RunAt = ptr(now.Add(requeue(a.res.RequeueAfter)))
			u.Message = nonEmpty(msg, "deletion in progress")
		default:
			h.Result = resultSucceeded
			u.Events = append(u.Events, ev(store.EventNormal, "Deleted", nonEmpty(msg, "deleted by action "+c.ActionName)))
		}
		if !cur.Deleting {
			// The manifest came back while we deleted: reconcile it again from scratch.
			u.ActionState = nil
			u.KeepActionState = false
			u.Attempt = 0
			u.RunAt = ptr(now)
		}
		return u
	}

	for _, pc := range a.res.Conditions {
		if pc.Type == status.Ready || pc.Type == status.Reconciling || pc.Type == status.Stalled || pc.Type == status.Synced || pc.Type == status.Suspended {
			continue // the standard conditions are derived, never set by plugins
		}
		u.Conditions = status.Set(u.Conditions, status.Condition{Type: pc.Type, Status: pc.Status, Reason: pc.Reason, Message: r.scrub(pc.Message), ObservedGeneration: c.Generation}, now)
	}
	switch {
	case a.err != nil && o.Terminal:
		h.Result = resultStalled
		u.Attempt = c.Attempt + 1
		u.RunAt = nil // not retried until the spec changes
		u.Events = append(u.Events, ev(store.EventWarning, "Stalled", msg))
	case a.err != nil:
		h.Result = resultFailed
		u.Attempt = c.Attempt + 1
		delay := r.backoff(u.Attempt)
		u.RunAt = ptr(now.Add(delay))
		u.Events = append(u.Events, ev(store.EventWarning, "ReconcileFailed", fmt.Sprintf("attempt %d failed, retry in %s: %s", u.Attempt, delay.Round(time.Millisecond), msg)))
	case !a.res.Done:
		h.Result = resultInProgress
		u.Outputs = a.res.Outputs
		u.RunAt = ptr(now.Add(requeue(a.res.RequeueAfter)))
	default:
		h.Result = resultSucceeded
		if a.drift != "" {
			h.Message = "drift corrected: " + r.scrub(a.drift)
			u.Events = append(u.Events, ev(store.EventWarning, "DriftDetected", r.scrub(a.drift)))
			u.Drifted = true
		}
		u.Outputs = a.res.Outputs
		if u.Outputs == nil {
			u.Outputs = map[string]any{}
		}
		u.AppliedRevision, u.AppliedSpec, u.AppliedOrigins = c.Revision, c.Spec, a.origins()
		u.RunAt = r.resyncAt(c, now)
		if c.Phase != status.PhaseReady || c.ObservedGeneration != c.Generation {
			u.Events = append(u.Events, ev(store.EventNormal, "Reconciled", fmt.Sprintf("generation %d is Ready", c.Generation)))
		}
	}
	if cur.Generation != c.Generation {
		// A new generation arrived during the call: it starts with a clean slate of
		// attempts, and runs at once (dirty).
		u.Attempt = 0
		u.RunAt = ptr(now)
	}
	if cur.Deleting {
		// The delete runs next, with a clean slate of attempts.
		u.Attempt = 0
		u.RunAt = ptr(now)
	}
	return u
}

// unstorableState says why the state a call returned cannot be stored ("" when it can, or
// when it is not written: the call failed and the stored state stays, or a delete finished
// and the row goes).
func unstorableState(a attempt) string {
	if a.err != nil || a.op == "delete" && a.res.Done {
		return ""
	}
	return store.UnstorableNumber(a.res.State)
}

// maxOutputs bounds what one result stores as status.outputs (and in its history row).
const maxOutputs = 64 << 10

// boundOutputs scrubs the config's secrets from a plugin's outputs (strings and numbers, as
// scrubAttempt does for the call's) and replaces outputs over maxOutputs with a note: they
// are stored on the resource and in every history row.
func (r *Reconciler) boundOutputs(out map[string]any) map[string]any {
	if out == nil {
		return nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return map[string]any{"error": "outputs could not be encoded as JSON"}
	}
	if len(b) > maxOutputs {
		return map[string]any{"error": fmt.Sprintf("outputs of %d bytes were not stored (limit %d)", len(b), maxOutputs)}
	}
	if why := store.UnstorableNumber(b); why != "" {
		return map[string]any{"error": "outputs were not stored: " + why}
	}
	scrub, numbers := r.opts.Redact.Kept()
	return scrubEncodedOutputs(out, b, scrub, numbers)
}

// resyncAt is when a Ready resource is checked for drift: the type's interval, else the
// controller's; zero turns it off.
func (r *Reconciler) resyncAt(c store.Claimed, now time.Time) *time.Time {
	d := r.opts.ResyncInterval
	if c.ResyncIntervalMs != nil {
		d = time.Duration(*c.ResyncIntervalMs) * time.Millisecond
	}
	if d <= 0 {
		return nil
	}
	// Spread resyncs so that resources created together do not resync together.
	return ptr(now.Add(d + time.Duration(float64(d)*0.1*randFloat())))
}

func requeue(d time.Duration) time.Duration {
	if d <= 0 {
		return defaultRequeue
	}
	return d
}

func ptr[T any](v T) *T { return &v }

// prefixed returns ": "+s, or "" for an empty s.
func prefixed(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
