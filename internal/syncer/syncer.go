// Package syncer is the source controller (DESIGN §2): per source it polls (with jitter) or
// reacts to a trigger, asks the source for its head, and when the revision is new fetches it,
// parses and validates every manifest, and applies the revision in one transaction. A
// failing revision changes nothing but the source's status.
//
// Only the replica holding the source's lease syncs. The lease is taken and renewed by a
// loop of its own (lease.go); the sync loop syncs only while the lease is held, under a
// context cancelled when it is lost, and every write is fenced by the lease's term.
package syncer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/trueup-dev/trueup/internal/changeplan"
	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/cputime"
	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/lease"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/metrics"
	"github.com/trueup-dev/trueup/internal/plural"
	"github.com/trueup-dev/trueup/internal/policy"
	"github.com/trueup-dev/trueup/internal/redact"
	"github.com/trueup-dev/trueup/internal/render"
	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/tracing"
	"github.com/trueup-dev/trueup/sources"
)

// tracer records a span tree per revision picked: sync <source> → fetch, parse, validate, apply.
var tracer = otel.Tracer("github.com/trueup-dev/trueup/internal/syncer")

// Options configure one source's syncer.
type Options struct {
	Name     string
	Source   sources.Source
	Interval time.Duration // poll period; 10% jitter is added
	Prune    bool
	// MaxPruneFraction is prune.maxFraction (0: the default 0.5).
	MaxPruneFraction float64
	// AllowEmpty is prune.allowEmpty: a revision without resources deletes them all.
	AllowEmpty bool
	Replica    string
	// LeaseTTL is how long the source's singleton lease lasts without renewal (default
	// 15s); it is renewed every TTL/3.
	LeaseTTL time.Duration
	// Live reports whether the replica holds its liveness session (liveness.Liveness.Held);
	// while it does not, the lease is neither taken nor renewed, and a held one is given up
	// (nil: always live).
	Live func() bool
	// CheckAction validates a type's action reference at ingest (unknown instance, bad with:).
	CheckAction func(name string, with json.RawMessage) error
	// CheckReference decides at ingest whether a dependency may cross namespaces
	// (manifest.Options.CheckReference; nil: every one may).
	CheckReference func(from string, target graph.ID, outputs []string) error
	// Limits caps each revision's files, documents and resources (zero: the defaults).
	Limits manifest.Limits
	// Redact holds the controller's secrets, scrubbed from messages before they are stored
	// or logged (nil: none).
	Redact *redact.Registry
	// Metrics records syncs (nil: none).
	Metrics *metrics.Metrics
	// Reporter posts commit statuses (nil: none).
	Reporter Reporter
	// Opener decrypts the source's SOPS-encrypted manifests (nil: the source has no keys,
	// and an encrypted file rejects the revision).
	Opener *sealed.Opener
	// Render turns a revision's files into the manifests read (render: kustomize); a
	// failure rejects the revision. nil: the files are the manifests.
	Render func(ctx context.Context, files []sources.File) ([]sources.File, error)
}

// Reporter is told what happens to each revision (commit statuses on the forge): Picked
// once the revision is written (applied, or held back by a suspension), then Applied; Rejected
// for a revision that does not validate.
type Reporter interface {
	Picked(ctx context.Context, revision string)
	Rejected(ctx context.Context, revision string, errors []string)
	Applied(ctx context.Context, revision string)
}

// Syncer syncs one source.
type Syncer struct {
	opts    Options
	store   *store.Store
	log     *slog.Logger
	loader  *manifest.Loader
	trigger chan struct{} // a sync is asked for (webhook, NOTIFY)
	lease   *lease.Holder // the source's lease
	// syncing is held for the whole of a sync: syncs take turns (Run's and SyncOnce's). A
	// load writes into the last Set in place (manifest.Options.ReuseSet) only once the
	// sync that applied it hands it back (Loader.Release), so overlapping syncs would be
	// safe without it; taking turns keeps two applies of one source from racing each other
	// for nothing.
	syncing sync.Mutex

	mu      sync.Mutex
	memTerm int64 // the lease term whose holder mem was loaded for
	// transitionsApplied holds, for the resources with transition rules, the spec hashes this
	// holder applied in term transitionsTerm: later syncs in that term read applied specs only
	// for resources whose hash moved (the source's revisions are applied only by its holder).
	transitionsApplied map[manifest.ResourceKey]string
	transitionsTerm    int64
	mem                memory
	want               string    // a commit a push webhook named, not yet seen at the remote
	lastPoll           time.Time // last time the head was read
	// completed is when the last completed sync began: it read the head, then applied the
	// revision, held it back, rejected it, recorded a failure, or found nothing new.
	completed   time.Time
	lastWebhook time.Time // last push webhook for this source
	head        string    // the remote head last read
	headSeen    time.Time // when that head was first read
	// rendered is the last revision rendered and its output: a revision loaded again (a
	// retried apply) is not rendered again.
	rendered struct {
		revision string
		files    []sources.File
	}
}

// New returns a syncer; call Run.
func New(st *store.Store, opts Options, logger *slog.Logger) *Syncer {
	if opts.Interval <= 0 {
		opts.Interval = time.Minute
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = 15 * time.Second
	}
	log := logger.With("source", opts.Name)
	return &Syncer{opts: opts, store: st, log: log, loader: manifest.NewLoader(), trigger: make(chan struct{}, 1),
		lease: lease.New(st, lease.Options{Name: leaseName(opts.Name), Replica: opts.Replica, TTL: opts.LeaseTTL,
			Live: opts.Live, Label: "source's"}, log)}
}

// Trigger asks for a sync as soon as possible (webhook); bursts coalesce into one. On a
// replica that does not hold the source's lease it also tries to take the lease at once (see
// LeasesFreed): if the holder is gone, this replica takes over and syncs.
func (s *Syncer) Trigger() {
	select {
	case s.trigger <- struct{}{}:
	default:
	}
	if l, _ := s.lease.Held(); l == nil {
		s.LeasesFreed()
	}
}

// Reconsider forgets the revision last rejected and asks for a sync: whether a revision is
// valid also depends on the controller config (a reference grant a reload added), so a
// rejected head is tried again once.
func (s *Syncer) Reconsider() {
	s.mu.Lock()
	s.mem.rejected = ""
	s.mu.Unlock()
	s.Trigger()
}

// TriggerIfHolder triggers a sync toward commit (as TriggerCommit) when this replica holds
// the source's lease, and reports whether it did. A receiver of a webhook that gets false
// asks the holder instead (store.NotifySync): either way exactly one replica syncs.
func (s *Syncer) TriggerIfHolder(commit string) bool {
	if l, _ := s.lease.Held(); l == nil {
		return false
	}
	s.TriggerCommit(commit)
	return true
}

// TriggerCommit asks for a sync that ends with commit (named by a push webhook) or newer
// applied, even when the remote does not serve it yet.
func (s *Syncer) TriggerCommit(commit string) {
	s.mu.Lock()
	s.lastWebhook = time.Now()
	if commit != "" && strings.Trim(commit, "0") != "" {
		s.want = commit
	}
	s.mu.Unlock()
	s.Trigger()
}

// Runtime is what this replica knows of the source beyond its row: published with the
// replica's heartbeat while it holds the source's lease.
type Runtime struct {
	LastPoll    *time.Time `json:"lastPoll,omitempty"`
	LastWebhook *time.Time `json:"lastWebhook,omitempty"`
	Head        string     `json:"head,omitempty"`
	HeadSeen    *time.Time `json:"headSeen,omitempty"`
	// Completed is when the last completed sync began (Syncer.completed): a sync requested
	// before it is done, its outcome in the source's row.
	Completed *time.Time `json:"completed,omitempty"`
}

// Runtime reports the source's poll and webhook times and remote head; ok is false when this
// replica does not hold the source's lease.
func (s *Syncer) Runtime() (r Runtime, ok bool) {
	if l, _ := s.lease.Held(); l == nil {
		return r, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	opt := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	return Runtime{LastPoll: opt(s.lastPoll), LastWebhook: opt(s.lastWebhook), Head: s.head, HeadSeen: opt(s.headSeen),
		Completed: opt(s.completed)}, true
}

// awaitWanted re-reads the head for a while when a webhook named a commit that the remote
// does not serve yet (replication lag between a forge's push and its fetch endpoints).
func (s *Syncer) awaitWanted(ctx context.Context, head string) (string, error) {
	latest := func() string {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.want
	}
	want := latest()
	if want == "" || head == want {
		s.clearWant(want)
		return head, nil
	}
	delay := 100 * time.Millisecond
	deadline := time.Now().Add(10 * time.Second)
	for head != want && time.Now().Before(deadline) {
		if w := latest(); w != want {
			want = w // a newer push arrived: wait for that one instead
			if want == "" || head == want {
				break
			}
		}
		select {
		case <-ctx.Done():
			return head, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
		h, err := s.opts.Source.Head(ctx)
		if err != nil {
			return head, err
		}
		if h != head && h != want {
			return h, nil // moved on past what we waited for: that is newer
		}
		head = h
	}
	if want != "" && head != want {
		s.log.Warn("pushed commit not served by the remote yet; applying its head", "want", clip.Rev(want), "head", clip.Rev(head))
	}
	s.clearWant(want)
	return head, nil
}

// clearWant forgets want unless a newer push replaced it meanwhile.
func (s *Syncer) clearWant(want string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.want == want {
		s.want = ""
	}
}

// Run holds the source's lease (taking it when free) and, while it does, syncs at once, then
// on every poll, trigger or source notification, until ctx ends; then it releases the lease.
func (s *Syncer) Run(ctx context.Context) error {
	if err := s.lease.Start(ctx); err != nil {
		return err
	}
	s.syncLoop(ctx)
	s.lease.Stop()
	return nil
}

// syncLoop syncs while this replica holds the lease; taking the lease syncs at once.
func (s *Syncer) syncLoop(ctx context.Context) {
	var changes <-chan struct{}
	if n, ok := s.opts.Source.(sources.Notifier); ok {
		changes = n.Changes()
	}
	timer := time.NewTimer(jitter(s.opts.Interval))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-s.trigger:
		case <-changes:
		case <-s.lease.Gained():
		}
		// One sync serves every request made so far: it reads the head after them.
		drain(s.trigger)
		drain(s.lease.Gained())
		s.syncIfHolder(ctx)
		timer.Reset(jitter(s.opts.Interval))
	}
}

// syncIfHolder syncs once if this replica holds the lease, under a context that ends when
// ctx does or the lease is lost.
func (s *Syncer) syncIfHolder(ctx context.Context) {
	lease, held := s.lease.Held()
	if lease == nil {
		s.mu.Lock()
		s.want = "" // the holder syncs; a stale wish would only delay a later takeover
		s.mu.Unlock()
		return
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(held, cancel)()
	out, err := s.sync(sctx, lease)
	lctx := trace.ContextWithSpanContext(ctx, out.span) // the lines name the sync's trace
	switch {
	case ctx.Err() != nil:
	case sctx.Err() != nil:
		s.log.InfoContext(lctx, "sync interrupted: the source's lease was lost", "term", lease.Term)
	case err != nil:
		s.log.WarnContext(lctx, "sync failed", "err", s.opts.Redact.Scrub(err.Error()))
	}
}

func drain(c <-chan struct{}) {
	select {
	case <-c:
	default:
	}
}

// writeLease returns the lease to fence a write with, or nil when the lease changed hands
// since the sync began: the write must not happen. Without Run (SyncOnce called directly)
// the lease is renewed first, so that a sync longer than the lease's remaining time still
// commits; under Run the lease loop keeps it renewed.
func (s *Syncer) writeLease(ctx context.Context, l *store.Lease) *store.Lease {
	if !s.lease.Running() {
		s.lease.Attempt(ctx)
	}
	cur, _ := s.lease.Held()
	if cur == nil || cur.Term != l.Term {
		return nil
	}
	return cur
}

// adopt loads, once per holding, what the source's row says was applied: another replica may
// have applied newer revisions, or recorded a failure, while this one did not hold the lease.
func (s *Syncer) adopt(ctx context.Context, l *store.Lease) {
	s.mu.Lock()
	done := s.memTerm == l.Term
	s.mu.Unlock()
	if done {
		return
	}
	src, err := s.store.GetSource(ctx, s.opts.Name)
	if err != nil {
		s.log.Warn("load source state", "err", err)
	}
	var m memory
	if err == nil {
		m.applied = src.Revision
		if c, ok := status.Get(src.Conditions, status.PruneSkipped); ok && c.Status == status.True && !src.Suspended && s.pruneChanged(ctx) {
			// Its deletions were refused under other prune settings: apply it again under
			// this syncer's (a reload that sets allowEmpty or raises maxFraction restarts it).
			// A suspended source applies nothing: it would only hold back (and show as
			// pending) the revision it already applied.
			m.applied = ""
		}
		if src.Suspended {
			m.held = src.PendingRevision
		}
		if c, ok := status.Get(src.Conditions, status.Ready); ok && c.Status == status.False {
			// A failure recorded earlier (perhaps by another replica): the next sync that
			// finds the applied revision at the head records the recovery.
			m.lastFailure = c.Message
		}
	}
	s.mu.Lock()
	s.mem, s.memTerm = m, l.Term
	s.mu.Unlock()
	if err == nil && s.opts.Reporter != nil && src.Revision != "" {
		// Finish what the previous holder may have been reporting.
		s.opts.Reporter.Applied(ctx, src.Revision)
	}
}

// pruneChanged reports whether this syncer's prune settings differ from those the source's
// standing refusal was made under (true when they cannot be read: applying again is safe).
func (s *Syncer) pruneChanged(ctx context.Context) bool {
	under, err := s.store.PruneRefusal(ctx, s.opts.Name)
	if err != nil {
		s.log.Warn("load prune refusal", "err", err)
		return true
	}
	mine := store.ApplyParams{Prune: s.opts.Prune, MaxPruneFraction: s.opts.MaxPruneFraction, AllowEmpty: s.opts.AllowEmpty}.PruneSettings()
	return under == nil || *under != mine
}

// Outcome says what one sync did.
type Outcome struct {
	Revision  string
	Unchanged bool // head already applied (or already rejected): nothing fetched, nothing written
	NotHolder bool // another replica holds the source's lease: nothing done
	Held      bool // the source is suspended: the revision was validated but not applied
	Result    store.ApplyResult
	span      trace.SpanContext // the sync's trace (none when nothing was picked)
}

// SyncOnce checks the head and applies it if it is new. Without Run it takes or renews the
// lease itself first; under Run it syncs only if Run's lease loop holds the lease.
func (s *Syncer) SyncOnce(ctx context.Context) (Outcome, error) {
	if !s.lease.Running() && s.lease.Remaining() <= s.opts.LeaseTTL/2 {
		s.lease.Attempt(ctx)
	}
	lease, _ := s.lease.Held()
	if lease == nil {
		s.mu.Lock()
		s.want = "" // the holder syncs; a stale wish would only delay a later takeover
		s.mu.Unlock()
		return Outcome{NotHolder: true}, nil
	}
	return s.sync(ctx, lease)
}

// sync is one sync by the holder of lease.
func (s *Syncer) sync(ctx context.Context, lease *store.Lease) (out Outcome, err error) {
	s.syncing.Lock()
	defer s.syncing.Unlock()
	began := time.Now()
	defer func() {
		// Published only once the outcome is in the source's row (or nothing was new): a
		// poll alone is no finished sync, and `sync --wait` waits on this.
		var rec *recordedFailure
		if !out.NotHolder && (err == nil || errors.As(err, &rec)) {
			s.mu.Lock()
			s.completed = began
			s.mu.Unlock()
		}
	}()
	// A pin or unpin made while the revision was being validated applies nothing (the
	// apply is fenced by the pin): the sync starts over under the pin in force.
	for range 3 {
		if out, err = s.syncPass(ctx, lease); !errors.Is(err, store.ErrPinChanged) {
			break
		}
		s.log.InfoContext(ctx, "the source's pin changed during the sync: syncing again")
	}
	return out, err
}

// syncPass reads the head and the pin, and applies the revision they call for if it is new.
func (s *Syncer) syncPass(ctx context.Context, lease *store.Lease) (Outcome, error) {
	s.adopt(ctx, lease)
	head, err := s.opts.Source.Head(ctx)
	if err != nil {
		return Outcome{}, s.fail(ctx, lease, store.SyncFailure{Reason: "FetchFailed", Message: "read head: " + err.Error()}, "")
	}
	s.mu.Lock()
	s.lastPoll = time.Now()
	if head != s.head {
		s.head, s.headSeen = head, s.lastPoll
	}
	s.mu.Unlock()
	if head, err = s.awaitWanted(ctx, head); err != nil {
		return Outcome{}, s.fail(ctx, lease, store.SyncFailure{Reason: "FetchFailed", Message: "read head: " + err.Error()}, "")
	}
	target, pinned, err := s.pinned(ctx, lease, head)
	if err != nil {
		return Outcome{}, err
	}
	s.mu.Lock()
	held := s.mem.held
	s.mu.Unlock()
	if held != "" && held == target {
		// Held back while suspended: ask (only now) whether the source was resumed.
		suspended, err := s.store.SourceSuspended(ctx, s.opts.Name)
		if err != nil {
			return Outcome{}, fmt.Errorf("read suspension: %w", err)
		}
		if !suspended {
			s.mu.Lock()
			s.mem.held = ""
			s.mu.Unlock()
		}
	}
	s.mu.Lock()
	p := decide(target, s.mem)
	s.mu.Unlock()
	if p == planRecover {
		// The head is the applied revision again after a failure: the source is healthy.
		if l := s.writeLease(ctx, lease); l != nil {
			if err := s.store.RecordSyncRecovered(ctx, s.opts.Name, l); err != nil {
				return Outcome{}, fmt.Errorf("record recovery: %w", err)
			}
			s.mu.Lock()
			s.mem.lastFailure, s.mem.rejected = "", ""
			s.mu.Unlock()
			s.log.Info("source recovered", "revision", clip.Rev(target))
		}
	}
	if p != planApply {
		s.log.Debug("no new revision", "revision", clip.Rev(target))
		return Outcome{Revision: target, Unchanged: true}, nil
	}
	// A trace per revision applied (or rejected), not per poll: a poll that finds nothing
	// new records nothing.
	ctx, span := tracer.Start(ctx, "sync "+s.opts.Name, trace.WithAttributes(attribute.String("trueup.source", s.opts.Name),
		attribute.String("trueup.revision", target)))
	out, err := s.apply(ctx, lease, target, pinned)
	if err != nil {
		tracing.Fail(span, firstLine(s.opts.Redact.Scrub(err.Error())))
	}
	span.End()
	out.span = span.SpanContext()
	return out, err
}

// pinned returns the revision this sync applies: the head, or the revision the source is
// pinned at (pinned, "" when it is not). While pinned, a head other than the pinned revision
// is recorded as the source's pendingRevision.
func (s *Syncer) pinned(ctx context.Context, lease *store.Lease, head string) (target, pinned string, err error) {
	pin, err := s.store.SourcePin(ctx, s.opts.Name)
	if err != nil {
		return "", "", fmt.Errorf("read pin: %w", err)
	}
	if pin == nil {
		return head, "", nil
	}
	pending := head
	if head == pin.Revision {
		pending = ""
	}
	if l := s.writeLease(ctx, lease); l != nil {
		if err := s.store.RecordPending(ctx, s.opts.Name, pin.Revision, pending, l); err != nil {
			return "", "", fmt.Errorf("record pending revision: %w", err)
		}
	}
	return pin.Revision, pin.Revision, nil
}

// errPinUnsupported rejects a pin of a source that cannot read past revisions.
var errPinUnsupported = errors.New("this kind of source cannot be pinned: it reads only its current content (a folder); unpin it")

// fetch reads the files of rev: the head through Fetch, a pinned revision through
// sources.RevisionFetcher. With partial, a sources.PartialFetcher leaves out the data of the
// files the loader holds (manifest.Loader.Holds), when nothing renders the files.
func (s *Syncer) fetch(ctx context.Context, rev, pinned string, partial bool) (*sources.Snapshot, error) {
	if pinned == "" {
		if pf, ok := s.opts.Source.(sources.PartialFetcher); ok && partial && s.opts.Render == nil {
			return pf.FetchPartial(ctx, rev, s.loader.Holds)
		}
		return s.opts.Source.Fetch(ctx, rev)
	}
	rf, ok := s.opts.Source.(sources.RevisionFetcher)
	if !ok {
		return nil, errPinUnsupported
	}
	return rf.FetchRevision(ctx, rev)
}

// apply fetches, parses, validates and applies head, the revision sync picked (the pinned
// revision when pinned is set); ctx holds the sync's span.
func (s *Syncer) apply(ctx context.Context, lease *store.Lease, head, pinned string) (Outcome, error) {
	root := trace.SpanFromContext(ctx)
	start, startCPU := time.Now(), cputime.Self()
	fctx, step := tracer.Start(ctx, "fetch")
	snap, err := s.fetch(fctx, head, pinned, true)
	if err != nil {
		return Outcome{}, s.fetchFailed(ctx, lease, head, step, err)
	}
	step.SetAttributes(attribute.Int("trueup.files", len(snap.Files)))
	step.End()
	var inputFiles []sources.File // the snapshot as fetched, when a render replaces it
	if s.opts.Render != nil {
		rctx, step := tracer.Start(ctx, "render")
		files, err := s.render(rctx, snap)
		if err != nil {
			tracing.Fail(step, "RenderFailed")
			step.End()
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				// The render ran out of time, or the sync was stopped: the revision is not at
				// fault, the sync is retried.
				return Outcome{}, fmt.Errorf("render: %w", err)
			}
			return Outcome{}, s.reject(ctx, lease, snap.Revision, err)
		}
		step.SetAttributes(attribute.Int("trueup.files", len(files)))
		step.End()
		inputFiles = snap.Files
		snap = &sources.Snapshot{Revision: snap.Revision, Author: snap.Author, Files: files}
	}
	fetched, fetchedCPU := time.Since(start), cputime.Self()
	known, err := s.otherTypes(ctx)
	if err != nil {
		return Outcome{}, fmt.Errorf("load types of other sources: %w", err)
	}
	// parse ends and validate begins once the loader has decoded every document.
	_, step = tracer.Start(ctx, "parse")
	onParsed := func(docs int) {
		step.SetAttributes(attribute.Int("trueup.documents", docs))
		step.End()
		_, step = tracer.Start(ctx, "validate")
	}
	// Transition rules run on the plaintext set, before encrypted fields become markers.
	// The first load gives the files' data up once parsed (manifest.Options.DropData); one
	// that needs it back to locate problems asks for every file again (ErrDataNeeded). Not a
	// rendered revision's: its retry would load the source's files without rendering them,
	// and the renderer's cache holds the bytes anyway.
	load := func(files []sources.File, dropData bool) (*manifest.Set, error) {
		return sealed.Load(s.loader, s.opts.Opener, files, manifest.Options{KnownTypes: known, CheckAction: s.opts.CheckAction, Limits: s.opts.Limits,
			CheckReference: s.opts.CheckReference, Parsed: onParsed, InputFiles: inputFiles, ReuseSet: true, DropData: dropData, Packed: true}, func(set *manifest.Set) error { return s.checkTransitions(ctx, set, lease.Term) })
	}
	set, err := load(snap.Files, s.opts.Render == nil)
	var refetch, refetchCPU time.Duration // the fetches' after manifest.ErrUnread
	for try := 0; try < 2 && errors.Is(err, manifest.ErrUnread); try++ {
		// The revision is not one the loader builds from its last Set (a type changed, a
		// file has problems): it reads every file, and gives the data up again once parsed;
		// or the load gave the files' data up and found problems, which it needs the data
		// to locate (ErrDataNeeded): it reads every file and keeps the data. The load's span
		// ends here, the fetch is a span and a time of its own, and the load begins again.
		dropData := s.opts.Render == nil && !errors.Is(err, manifest.ErrDataNeeded)
		step.SetAttributes(attribute.Bool("trueup.unread", true))
		step.End()
		snap.Files = nil
		rstart, rstartCPU := time.Now(), cputime.Self()
		fctx, fstep := tracer.Start(ctx, "fetch")
		if snap, err = s.fetch(fctx, head, pinned, false); err != nil {
			return Outcome{}, s.fetchFailed(ctx, lease, head, fstep, err)
		}
		fstep.SetAttributes(attribute.Int("trueup.files", len(snap.Files)), attribute.Bool("trueup.refetch", true))
		fstep.End()
		refetch, refetchCPU = refetch+time.Since(rstart), refetchCPU+cputime.Self()-rstartCPU
		_, step = tracer.Start(ctx, "parse")
		set, err = load(snap.Files, dropData)
	}
	noManifests := len(snap.Files) == 0
	snap.Files, inputFiles = nil, nil // parsed: the file bytes need not live through the apply (14 MB at 100k resources)
	if err != nil {
		tracing.Fail(step, s.opts.Redact.Scrub(loadFailure(err)))
	} else {
		step.SetAttributes(attribute.Int("trueup.types", len(set.Types)), attribute.Int("trueup.resources", set.Len()))
	}
	step.End()
	var readErr *appliedReadError
	if errors.As(err, &readErr) {
		return Outcome{}, readErr.err
	}
	if err != nil {
		return Outcome{}, s.reject(ctx, lease, snap.Revision, err)
	}
	loaded, loadedCPU := time.Since(start), cputime.Self()
	// Done with the Set once applied: the next sync's load may write into it.
	defer s.loader.Release(set)
	if lease = s.writeLease(ctx, lease); lease == nil {
		return Outcome{NotHolder: true}, nil
	}
	actx, step := tracer.Start(ctx, "apply")
	res, err := s.store.ApplyRevision(actx, store.ApplyParams{Source: s.opts.Name, Revision: snap.Revision, Author: policy.Author(snap.Author), Set: set, Prune: s.opts.Prune,
		MaxPruneFraction: s.opts.MaxPruneFraction, AllowEmpty: s.opts.AllowEmpty, NoManifests: noManifests, Replica: s.opts.Replica, Lease: lease,
		Pinned: pinned, Files: revisionFiles(set, known)})
	applied, appliedCPU := time.Since(start), cputime.Self()
	if err != nil {
		tracing.Fail(step, s.opts.Redact.Scrub(loadFailure(err)))
	} else {
		step.SetAttributes(attribute.Int("trueup.created", res.Created), attribute.Int("trueup.updated", res.Updated),
			attribute.Int("trueup.deleted", res.Deleted), attribute.Bool("trueup.held", res.Held))
	}
	step.End()
	root.SetAttributes(attribute.String("trueup.revision", snap.Revision), attribute.Int("trueup.types", len(set.Types)),
		attribute.Int("trueup.resources", set.Len()))
	var conflict *store.ConflictError
	if errors.As(err, &conflict) {
		return Outcome{}, s.reject(ctx, lease, snap.Revision, conflict.Errors)
	}
	if errors.Is(err, store.ErrLeaseLost) {
		s.lease.Drop(lease.Term)
		return Outcome{NotHolder: true}, err
	}
	if err != nil {
		return Outcome{}, err
	}
	// Told only past the pin's fence: a revision a pin or unpin stopped (ErrPinChanged) is
	// left with no pending status that nothing would complete.
	if s.opts.Reporter != nil {
		s.opts.Reporter.Picked(ctx, snap.Revision)
	}
	root.SetAttributes(attribute.Int("trueup.created", res.Created), attribute.Int("trueup.updated", res.Updated),
		attribute.Int("trueup.deleted", res.Deleted))
	if res.Held {
		s.mu.Lock()
		s.mem.held = snap.Revision
		s.mu.Unlock()
		s.log.InfoContext(ctx, "source suspended: revision held back", "revision", clip.Rev(snap.Revision), "resources", set.Len())
		return Outcome{Revision: snap.Revision, Held: true}, nil
	}
	if res.PruneSkipped != "" {
		s.log.WarnContext(ctx, "pruning skipped", "reason", res.PruneSkipped, "message", res.PruneMessage)
	}
	if len(res.Refresh) > 0 {
		// What waits for what may have changed with the revision (committed now). A failure
		// is caught up by the maintenance sweep.
		if err := s.store.RefreshDependencies(ctx, res.Refresh); err != nil {
			s.log.WarnContext(ctx, "refresh dependency waits", "count", len(res.Refresh), "err", err)
		}
	}
	if res.Settle {
		// Statistics for the rows just created, before the reads and claims that need them;
		// autovacuum does it later if this fails.
		if err := s.store.SettleAfterBulk(ctx); err != nil {
			s.log.WarnContext(ctx, "analyze after a bulk apply", "err", err)
		}
	}
	s.mu.Lock()
	s.mem = memory{applied: snap.Revision}
	s.transitionsApplied, s.transitionsTerm = nil, 0
	if cands := set.TransitionCandidates(); len(cands) > 0 {
		s.transitionsApplied = make(map[manifest.ResourceKey]string, len(cands))
		for i := range cands {
			s.transitionsApplied[cands[i].Key()] = cands[i].SpecHash
		}
		s.transitionsTerm = lease.Term
	}
	s.mu.Unlock()
	s.opts.Metrics.Synced(s.opts.Name, snap.Revision, true, time.Since(start))
	if s.opts.Reporter != nil {
		s.opts.Reporter.Applied(ctx, snap.Revision)
	}
	level := slog.LevelDebug
	if res.Changed() {
		level = slog.LevelInfo
	}
	// The phases' wall times, and the process's CPU in each (every goroutine's: the
	// reconciler's and the API's too, when they run meanwhile).
	s.log.Log(ctx, level, "applied revision", "revision", clip.Rev(snap.Revision), "types", len(set.Types), "resources", set.Len(),
		"created", res.Created, "updated", res.Updated, "deleted", res.Deleted,
		"fetch_ms", fetched.Milliseconds(), "refetched", refetch > 0, "refetch_ms", refetch.Milliseconds(),
		"load_ms", (loaded - fetched - refetch).Milliseconds(), "apply_ms", (applied - loaded).Milliseconds(),
		"total_ms", time.Since(start).Milliseconds(), "fetch_cpu_ms", (fetchedCPU - startCPU).Milliseconds(),
		"refetch_cpu_ms", refetchCPU.Milliseconds(), "load_cpu_ms", (loadedCPU - fetchedCPU - refetchCPU).Milliseconds(),
		"apply_cpu_ms", (appliedCPU - loadedCPU).Milliseconds(), "cpu_ms", (cputime.Self() - startCPU).Milliseconds())
	return Outcome{Revision: snap.Revision, Result: res}, nil
}

// fetchFailed records err, the failure of the fetch (its span step) of head.
func (s *Syncer) fetchFailed(ctx context.Context, lease *store.Lease, head string, step trace.Span, err error) error {
	reason := "FetchFailed"
	switch {
	case errors.Is(err, sources.ErrPathNotFound):
		reason = "PathNotFound"
	case errors.Is(err, errPinUnsupported):
		reason = "PinUnsupported"
	}
	tracing.Fail(step, reason)
	step.End()
	return s.fail(ctx, lease, store.SyncFailure{Revision: head, Reason: reason, Message: "fetch " + clip.Rev(head) + ": " + err.Error()}, "")
}

// revisionFiles are set's files as the store compares them between applies (ApplyParams.Files):
// with the types of other sources its resources were judged with as their basis (a default
// in such a type's schema is in their specs). nil when set has none.
func revisionFiles(set *manifest.Set, known []manifest.ResourceType) map[string]string {
	if set.Files == nil {
		return nil
	}
	h := sha256.New()
	for _, t := range known {
		fmt.Fprintf(h, "%s\x00%s\x00%s\n", t.Name, t.Group, t.Spec)
	}
	files := make(map[string]string, len(set.Files)+1)
	maps.Copy(files, set.Files)
	files[changeplan.FilesBasis] = hex.EncodeToString(h.Sum(nil))
	return files
}

// checkTransitions runs the transition rules (x-trueup-validations naming oldSelf) of set
// against the specs applied now. The applied specs are read only when some resource's
// schema has such rules, and only for those resources whose spec changed: a revision
// without them costs no query. A violation is a manifest.Errors, rejected like any other.
func (s *Syncer) checkTransitions(ctx context.Context, set *manifest.Set, term int64) error {
	cands := set.TransitionCandidates()
	s.mu.Lock()
	if s.transitionsTerm == term && s.transitionsApplied != nil {
		changed := cands[:0:0]
		for _, r := range cands {
			if s.transitionsApplied[r.Key()] != r.SpecHash {
				changed = append(changed, r)
			}
		}
		cands = changed
	}
	s.mu.Unlock()
	if len(cands) == 0 {
		return nil
	}
	return CheckTransitions(ctx, s.store, s.opts.Name, s.opts.Opener, s.loader, set, cands)
}

// CheckTransitions runs the transition rules of cands (resources of set) against the specs
// source has applied, revealing encrypted fields with opener: oldSelf is the applied value,
// not its marker. A failure to read them is an *appliedReadError (retry, don't reject); a
// violation is a manifest.Errors. Pull-request previews check their revisions with it too.
func CheckTransitions(ctx context.Context, st *store.Store, source string, opener *sealed.Opener, loader *manifest.Loader,
	set *manifest.Set, cands []manifest.Resource) error {
	applied, err := st.AppliedSpecs(ctx, source, cands)
	if err != nil {
		return &appliedReadError{fmt.Errorf("read applied specs for transition rules: %w", err)}
	}
	old := make(map[manifest.ResourceKey]json.RawMessage, len(applied))
	for k, a := range applied {
		spec := a.Spec
		if a.Sealed != "" {
			// Encrypted fields compare as what they are (a key rotation changes every marker
			// and no value).
			op := opener
			if op == nil {
				op = sealed.NewOpener(nil)
			}
			if spec, err = op.Reveal(a.File, k.Kind, k.Namespace, k.Name, a.Sealed, a.Spec); err != nil {
				return &appliedReadError{fmt.Errorf("read applied spec of %s/%s/%s for transition rules: %w", k.Kind, k.Namespace, k.Name, err)}
			}
		}
		old[k] = spec
	}
	return loader.CheckTransitions(set, old)
}

// appliedReadError is a failure to read what transition rules compare with: the sync is
// retried, the revision is not rejected.
type appliedReadError struct{ err error }

func (e *appliedReadError) Error() string { return e.err.Error() }

// reject records a revision whose content is invalid; it is not retried until the head moves.
func (s *Syncer) reject(ctx context.Context, lease *store.Lease, rev string, err error) error {
	var verrs manifest.Errors
	reason := "ValidationFailed"
	if problems, ok := render.Problems(err); ok {
		verrs, err, reason = problems, nil, "RenderFailed"
	}
	if err != nil && !errors.As(err, &verrs) {
		return s.fail(ctx, lease, store.SyncFailure{Revision: rev, Reason: "ValidationFailed", Message: err.Error()}, "")
	}
	errs := make([]store.SourceError, len(verrs))
	lines := make([]string, len(verrs))
	for i, v := range verrs {
		errs[i] = store.SourceError{File: v.File, Line: v.Line, Path: v.Path, Message: s.opts.Redact.Scrub(v.Msg), Origin: s.opts.Redact.Scrub(v.Origin)}
		lines[i] = s.opts.Redact.Scrub(v.Error())
	}
	msg := fmt.Sprintf("revision %s rejected, %s; the last good revision stays applied:\n%s", clip.Rev(rev), plural.Count(len(verrs), "error", "errors"), strings.Join(lines, "\n"))
	s.opts.Metrics.Synced(s.opts.Name, rev, false, 0)
	if s.opts.Reporter != nil {
		s.opts.Reporter.Rejected(ctx, rev, lines)
	}
	return s.fail(ctx, lease, store.SyncFailure{Revision: rev, Reason: reason, Message: msg, Errors: errs}, rev)
}

// render renders snap's files, or returns the output of the revision rendered last.
func (s *Syncer) render(ctx context.Context, snap *sources.Snapshot) ([]sources.File, error) {
	s.mu.Lock()
	last := s.rendered
	s.mu.Unlock()
	// Copies of the cached slice: a load may change its entries (manifest.Options.DropData
	// is not given rendered files, but the cache is no load's to change).
	if last.revision == snap.Revision && last.files != nil {
		return slices.Clone(last.files), nil
	}
	files, err := s.opts.Render(ctx, snap.Files)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.rendered.revision, s.rendered.files = snap.Revision, files
	s.mu.Unlock()
	return slices.Clone(files), nil
}

func (s *Syncer) fail(ctx context.Context, lease *store.Lease, f store.SyncFailure, rejected string) error {
	f.Source = s.opts.Name
	f.Message = s.opts.Redact.Scrub(f.Message)
	s.mu.Lock()
	record := recordFailure(f.Message, s.mem)
	if !record && rejected != "" {
		s.mem.rejected = rejected // already recorded (perhaps by the previous holder)
	}
	s.mu.Unlock()
	if !record {
		return &recordedFailure{f.Message} // the source shows it already
	}
	if f.Lease = s.writeLease(ctx, lease); f.Lease == nil {
		return errors.New(f.Message)
	}
	// Remember the failure only once it is recorded: a failed write is tried again at the
	// next poll instead of hiding a rejected revision behind Ready=True.
	if err := s.store.RecordSyncFailure(ctx, f); err != nil {
		s.log.ErrorContext(ctx, "record sync failure", "err", err)
		return errors.New(f.Message)
	}
	s.mu.Lock()
	s.mem.lastFailure = f.Message
	if rejected != "" {
		s.mem.rejected = rejected
	}
	s.mu.Unlock()
	return &recordedFailure{f.Message}
}

// recordedFailure is a sync's failure that the source's row shows (Ready=False).
type recordedFailure struct{ msg string }

func (e *recordedFailure) Error() string { return e.msg }

// otherTypes returns the ResourceTypes other sources declare, which this source's resources
// may use.
func (s *Syncer) otherTypes(ctx context.Context) ([]manifest.ResourceType, error) {
	return OtherTypes(ctx, s.store, s.opts.Name)
}

// OtherTypes returns the ResourceTypes sources other than source declare: the KnownTypes of
// source's revisions.
func OtherTypes(ctx context.Context, st *store.Store, source string) ([]manifest.ResourceType, error) {
	all, err := st.ListTypes(ctx)
	if err != nil {
		return nil, err
	}
	var out []manifest.ResourceType
	for _, t := range all {
		if t.Source == source {
			continue
		}
		mt, err := manifest.TypeFromSpec(t.Name, t.Group, t.Path, t.Spec)
		if err != nil {
			return nil, err
		}
		out = append(out, mt)
	}
	return out, nil
}

// loadFailure is what a failed step's span says of err: how many problems a rejected revision
// has (their messages may quote spec values), or the error's first line.
func loadFailure(err error) string {
	var verrs manifest.Errors
	if errors.As(err, &verrs) {
		return plural.Count(len(verrs), "error", "errors") + " in the revision"
	}
	var conflict *store.ConflictError
	if errors.As(err, &conflict) {
		return plural.Count(len(conflict.Errors), "conflict", "conflicts") + " with other sources"
	}
	return firstLine(err.Error())
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
