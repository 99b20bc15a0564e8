// Package syncer is the source controller (DESIGN §2): per source it polls (with jitter) or
// reacts to a trigger, asks the source for its head, and when the revision is new fetches it,
// parses and validates every manifest, and applies the revision in one transaction. A
// failing revision changes nothing but the source's status.
package syncer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/metrics"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
)

// Options configure one source's syncer.
type Options struct {
	Name     string
	Source   sources.Source
	Interval time.Duration // poll period; 10% jitter is added
	Prune    bool
	// MaxPruneFraction is prune.maxFraction (0: the default 0.5).
	MaxPruneFraction float64
	Replica          string
	// LeaseTTL is how long the source's singleton lease lasts without renewal (default
	// 15s); it is renewed every TTL/3.
	LeaseTTL time.Duration
	// CheckAction validates a type's action reference at ingest (unknown instance, bad with:).
	CheckAction func(name string, with json.RawMessage) error
	// Scrub removes secrets from messages before they are stored or logged.
	Scrub func(string) string
	// Metrics records syncs (nil: none).
	Metrics *metrics.Metrics
	// Reporter posts commit statuses (nil: none).
	Reporter Reporter
}

// Reporter is told what happens to each revision (commit statuses on the forge).
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
	trigger chan struct{}

	mu          sync.Mutex
	lease       *store.Lease
	leaseUntil  time.Time // when our lease expires unless renewed
	applied     string    // last applied revision
	rejected    string    // last revision rejected for its content (deterministic: not retried)
	lastFailure string    // last failure message written, to write a repeated failure once
	want        string    // a commit a push webhook named, not yet seen at the remote
	lastPoll    time.Time // last time the head was read
	lastWebhook time.Time // last push webhook for this source
	head        string    // the remote head last read
	headSeen    time.Time // when that head was first read
}

// New returns a syncer; call Run.
func New(st *store.Store, opts Options, logger *slog.Logger) *Syncer {
	if opts.Scrub == nil {
		opts.Scrub = func(s string) string { return s }
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Minute
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = 15 * time.Second
	}
	return &Syncer{opts: opts, store: st, log: logger.With("source", opts.Name), loader: manifest.NewLoader(), trigger: make(chan struct{}, 1)}
}

// Trigger asks for a sync as soon as possible (webhook); bursts coalesce into one.
func (s *Syncer) Trigger() {
	select {
	case s.trigger <- struct{}{}:
	default:
	}
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
}

// Runtime reports the source's poll and webhook times and remote head; ok is false when this
// replica does not hold the source's lease.
func (s *Syncer) Runtime() (r Runtime, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lease == nil || time.Now().After(s.leaseUntil) {
		return r, false
	}
	opt := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	return Runtime{LastPoll: opt(s.lastPoll), LastWebhook: opt(s.lastWebhook), Head: s.head, HeadSeen: opt(s.headSeen)}, true
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
		s.log.Warn("pushed commit not served by the remote yet; applying its head", "want", short(want), "head", short(head))
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

// Run syncs at once, then on every poll, trigger or source notification, until ctx ends.
// Only the replica holding the source's lease syncs; the others keep trying to take it.
func (s *Syncer) Run(ctx context.Context) error {
	var changes <-chan struct{}
	if n, ok := s.opts.Source.(sources.Notifier); ok {
		changes = n.Changes()
	}
	renew := time.NewTicker(s.opts.LeaseTTL / 3)
	defer renew.Stop()
	defer s.releaseLease()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-renew.C:
			if held, fresh := s.holdLease(ctx); !held || !fresh {
				continue // renewed (or not ours): nothing to sync now
			}
		case <-timer.C:
		case <-s.trigger:
		case <-changes:
		}
		if _, err := s.SyncOnce(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("sync failed", "err", s.opts.Scrub(err.Error()))
		}
		resetTimer(timer, jitter(s.opts.Interval))
	}
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

// holdLease takes or renews the source's lease. fresh reports that it was just taken over, in
// which case the syncer's memory of what was applied is reloaded (another replica may have
// applied newer revisions meanwhile).
func (s *Syncer) holdLease(ctx context.Context) (held, fresh bool) {
	start := time.Now()
	l, ok, err := s.store.AcquireLease(ctx, "source:"+s.opts.Name, s.opts.Replica, s.opts.LeaseTTL)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		// The database is unreachable: keep syncing only while the old lease is surely valid.
		s.log.Warn("renew source lease failed", "err", err)
		return s.lease != nil && time.Now().Before(s.leaseUntil), false
	}
	if !ok {
		if s.lease != nil {
			s.log.Info("lost the source's lease to another replica")
		}
		s.lease = nil
		return false, false
	}
	fresh = s.lease == nil || s.lease.Term != l.Term
	s.lease, s.leaseUntil = &l, start.Add(s.opts.LeaseTTL)
	if fresh {
		s.log.Info("holding the source's lease", "term", l.Term)
		s.applied, s.rejected, s.lastFailure = "", "", ""
		if src, err := s.store.GetSource(ctx, s.opts.Name); err == nil {
			s.applied = src.Revision
			if c, ok := status.Get(src.Conditions, status.Ready); ok && c.Status == status.False {
				// A failure recorded earlier (perhaps by another replica): the next poll that
				// finds the applied revision at the head records the recovery.
				s.lastFailure = c.Message
			}
			if s.opts.Reporter != nil && src.Revision != "" {
				// Finish what the previous holder may have been reporting.
				s.opts.Reporter.Applied(ctx, src.Revision)
			}
		}
	}
	return true, fresh
}

func (s *Syncer) releaseLease() {
	s.mu.Lock()
	l := s.lease
	s.lease = nil
	s.mu.Unlock()
	if l == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.store.ReleaseLease(ctx, *l)
}

// refreshLease renews the lease right before a write, so that a sync longer than the lease's
// remaining time still commits (renewal by the holder keeps the term). It returns nil when the
// lease changed hands meanwhile: the write must not happen.
func (s *Syncer) refreshLease(ctx context.Context, l *store.Lease) *store.Lease {
	held, _ := s.holdLease(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !held || s.lease == nil || s.lease.Term != l.Term {
		return nil
	}
	return s.lease
}

// currentLease returns the held lease if it is surely still valid, taking it when free.
func (s *Syncer) currentLease(ctx context.Context) *store.Lease {
	s.mu.Lock()
	l, until := s.lease, s.leaseUntil
	s.mu.Unlock()
	if l != nil && time.Until(until) > s.opts.LeaseTTL/2 {
		return l
	}
	if held, _ := s.holdLease(ctx); !held {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lease
}

func jitter(d time.Duration) time.Duration {
	return d + time.Duration(rand.Int64N(int64(d)/10+1))
}

// Outcome says what one sync did.
type Outcome struct {
	Revision  string
	Unchanged bool // head already applied (or already rejected): nothing fetched, nothing written
	NotHolder bool // another replica holds the source's lease: nothing done
	Result    store.ApplyResult
}

// SyncOnce checks the head and applies it if it is new.
func (s *Syncer) SyncOnce(ctx context.Context) (Outcome, error) {
	lease := s.currentLease(ctx)
	if lease == nil {
		s.mu.Lock()
		s.want = "" // the holder syncs; a stale wish would only delay a later takeover
		s.mu.Unlock()
		return Outcome{NotHolder: true}, nil
	}
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
	s.mu.Lock()
	same := head == s.applied || head == s.rejected
	recovered := head == s.applied && s.lastFailure != ""
	s.mu.Unlock()
	if recovered {
		// The head is the applied revision again after a failure: the source is healthy.
		if l := s.refreshLease(ctx, lease); l != nil {
			if err := s.store.RecordSyncRecovered(ctx, s.opts.Name, l); err != nil {
				return Outcome{}, fmt.Errorf("record recovery: %w", err)
			}
			s.mu.Lock()
			s.lastFailure, s.rejected = "", ""
			s.mu.Unlock()
			s.log.Info("source recovered", "revision", short(head))
		}
	}
	if same {
		s.log.Debug("no new revision", "revision", short(head))
		return Outcome{Revision: head, Unchanged: true}, nil
	}
	start := time.Now()
	if s.opts.Reporter != nil {
		s.opts.Reporter.Picked(ctx, head)
	}
	snap, err := s.opts.Source.Fetch(ctx, head)
	if err != nil {
		reason := "FetchFailed"
		if errors.Is(err, sources.ErrPathNotFound) {
			reason = "PathNotFound"
		}
		return Outcome{}, s.fail(ctx, lease, store.SyncFailure{Revision: head, Reason: reason, Message: "fetch " + short(head) + ": " + err.Error()}, "")
	}
	fetched := time.Since(start)
	known, err := s.otherTypes(ctx)
	if err != nil {
		return Outcome{}, fmt.Errorf("load types of other sources: %w", err)
	}
	set, err := s.loader.Load(snap.Files, manifest.Options{KnownTypes: known, CheckAction: s.opts.CheckAction})
	if err != nil {
		return Outcome{}, s.reject(ctx, lease, snap.Revision, err)
	}
	if lease = s.refreshLease(ctx, lease); lease == nil {
		return Outcome{NotHolder: true}, nil
	}
	res, err := s.store.ApplyRevision(ctx, store.ApplyParams{Source: s.opts.Name, Revision: snap.Revision, Set: set, Prune: s.opts.Prune,
		MaxPruneFraction: s.opts.MaxPruneFraction, Replica: s.opts.Replica, Lease: lease})
	var conflict *store.ConflictError
	if errors.As(err, &conflict) {
		return Outcome{}, s.reject(ctx, lease, snap.Revision, conflict.Errors)
	}
	if errors.Is(err, store.ErrLeaseLost) {
		s.mu.Lock()
		s.lease = nil
		s.mu.Unlock()
		return Outcome{NotHolder: true}, err
	}
	if err != nil {
		return Outcome{}, err
	}
	if res.PruneSkipped != "" {
		s.log.Warn("pruning skipped", "reason", res.PruneSkipped, "message", res.PruneMessage)
	}
	s.mu.Lock()
	s.applied, s.rejected, s.lastFailure = snap.Revision, "", ""
	s.mu.Unlock()
	s.opts.Metrics.Synced(s.opts.Name, snap.Revision, true, time.Since(start))
	if s.opts.Reporter != nil {
		s.opts.Reporter.Applied(ctx, snap.Revision)
	}
	level := slog.LevelDebug
	if res.Changed() {
		level = slog.LevelInfo
	}
	s.log.Log(ctx, level, "applied revision", "revision", short(snap.Revision), "types", len(set.Types), "resources", len(set.Resources),
		"created", res.Created, "updated", res.Updated, "deleted", res.Deleted, "fetch_ms", fetched.Milliseconds(),
		"total_ms", time.Since(start).Milliseconds())
	return Outcome{Revision: snap.Revision, Result: res}, nil
}

// reject records a revision whose content is invalid; it is not retried until the head moves.
func (s *Syncer) reject(ctx context.Context, lease *store.Lease, rev string, err error) error {
	var verrs manifest.Errors
	if !errors.As(err, &verrs) {
		return s.fail(ctx, lease, store.SyncFailure{Revision: rev, Reason: "ValidationFailed", Message: err.Error()}, "")
	}
	errs := make([]store.SourceError, len(verrs))
	lines := make([]string, len(verrs))
	for i, v := range verrs {
		errs[i] = store.SourceError{File: v.File, Line: v.Line, Path: v.Path, Message: s.opts.Scrub(v.Msg)}
		lines[i] = s.opts.Scrub(v.Error())
	}
	msg := fmt.Sprintf("revision %s rejected, %d error(s); the last good revision stays applied:\n%s", short(rev), len(verrs), strings.Join(lines, "\n"))
	s.opts.Metrics.Synced(s.opts.Name, rev, false, 0)
	if s.opts.Reporter != nil {
		s.opts.Reporter.Rejected(ctx, rev, lines)
	}
	return s.fail(ctx, lease, store.SyncFailure{Revision: rev, Reason: "ValidationFailed", Message: msg, Errors: errs}, rev)
}

func (s *Syncer) fail(ctx context.Context, lease *store.Lease, f store.SyncFailure, rejected string) error {
	f.Source = s.opts.Name
	f.Message = s.opts.Scrub(f.Message)
	s.mu.Lock()
	repeat := f.Message == s.lastFailure
	if repeat && rejected != "" {
		s.rejected = rejected // already recorded (perhaps by the previous holder)
	}
	s.mu.Unlock()
	if repeat {
		return errors.New(f.Message)
	}
	if f.Lease = s.refreshLease(ctx, lease); f.Lease == nil {
		return errors.New(f.Message)
	}
	// Remember the failure only once it is recorded: a failed write is tried again at the
	// next poll instead of hiding a rejected revision behind Ready=True.
	if err := s.store.RecordSyncFailure(ctx, f); err != nil {
		s.log.Error("record sync failure", "err", err)
		return errors.New(f.Message)
	}
	s.mu.Lock()
	s.lastFailure = f.Message
	if rejected != "" {
		s.rejected = rejected
	}
	s.mu.Unlock()
	return errors.New(f.Message)
}

// otherTypes returns the ResourceTypes other sources declare, which this source's resources
// may use.
func (s *Syncer) otherTypes(ctx context.Context) ([]manifest.ResourceType, error) {
	all, err := s.store.ListTypes(ctx)
	if err != nil {
		return nil, err
	}
	var out []manifest.ResourceType
	for _, t := range all {
		if t.Source == s.opts.Name {
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

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
