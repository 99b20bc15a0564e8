// Package commitstatus owns the commit status trueup shows on the forge (DESIGN §2): pending
// when a revision is picked up, failure when it is rejected, and, once the resources whose
// desired state it changed have reconciled, success or failure naming what failed. Posting
// happens on the Reporter's own goroutine so a slow or broken forge never holds up a sync.
package commitstatus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/forge/ratelimit"
	"github.com/trueup-dev/trueup/internal/plaintext"
	"github.com/trueup-dev/trueup/internal/plural"
	"github.com/trueup-dev/trueup/internal/store"
)

// Config says where statuses go; it lives in the controller config (credentials included).
type Config struct {
	Provider string // "github" | "gitlab" | "gitea"
	Token    string
	// BaseURL of the API: https://api.github.com/ (GitHub Enterprise: https://host/api/v3/),
	// the GitLab instance, https://gitlab.com/, or Gitea's API, https://host/api/v1/ (required
	// for Gitea). Empty: the public service.
	BaseURL string
	// Insecure allows an http:// BaseURL on another machine, the token crossing the network
	// in clear (internal/plaintext).
	Insecure bool
	// Repo is owner/repo on GitHub; the project path (group/project) or numeric id on GitLab.
	Repo string
	// TargetURL is the link shown beside the status (the dashboard); optional.
	TargetURL string
	// Pauses holds the rate-limit pause of the token at the forge; nil: ratelimit.Shared(),
	// the process's, which the actions of the same token at the same host share.
	Pauses *ratelimit.Registry
}

// Providers.
const (
	ProviderGitHub = "github"
	ProviderGitLab = "gitlab"
	// ProviderGitea speaks Gitea's (and Forgejo's) API, whose statuses and issue comments
	// have GitHub's shape under /api/v1.
	ProviderGitea = "gitea"
)

// Validate checks the config without side effects.
func (c Config) Validate() error {
	switch c.Provider {
	case ProviderGitHub, ProviderGitea:
		if c.Provider == ProviderGitea && c.BaseURL == "" {
			return errors.New("commit status: baseURL (https://host/api/v1/) is required for gitea")
		}
		owner, repo, ok := strings.Cut(c.Repo, "/")
		if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
			return fmt.Errorf("commit status: repo %q must be owner/repo", c.Repo)
		}
	case ProviderGitLab:
		if c.Repo == "" || strings.HasPrefix(c.Repo, "/") || strings.HasSuffix(c.Repo, "/") {
			return fmt.Errorf("commit status: repo %q must be a project path (group/project) or id", c.Repo)
		}
	default:
		return fmt.Errorf("commit status: provider %q must be %s, %s or %s", c.Provider, ProviderGitHub, ProviderGitLab, ProviderGitea)
	}
	if c.Token == "" {
		return errors.New("commit status: token is required")
	}
	if c.BaseURL != "" {
		if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errors.New("commit status: baseURL must be an http(s) URL")
		} else if err := plaintext.Check("baseURL", u.Scheme, u.Hostname(), "the token", true, c.Insecure); err != nil {
			return fmt.Errorf("commit status: %w", err)
		}
	}
	if c.TargetURL != "" {
		if u, err := url.Parse(c.TargetURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errors.New("commit status: targetURL must be an http(s) URL")
		}
	}
	return nil
}

// Check says what New and NewPreviewer refuse of cfg, without a store and without side
// effects: its fields and the forge client's base URL.
func Check(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	_, err := newForge(cfg, "trueup/check")
	return err
}

// Tuning defaults.
const (
	defaultPoll       = 2 * time.Second  // while resources are on their way
	defaultRecheck    = 30 * time.Second // after a failure some of whose resources still retry
	defaultRecheckFor = time.Hour        // how long a failure may still turn into success
	requestTimeout    = 10 * time.Second
	maxDescription    = 140 // GitHub refuses longer descriptions
	// maxRateLimitWait bounds the wait before another attempt that a rate limit asks for (a
	// 429 naming no reset pauses the token a minute): a status is tried again within it,
	// and refused unsent while the pause lasts.
	maxRateLimitWait = 30 * time.Second
)

// Reporter posts the statuses of one source's revisions.
type Reporter struct {
	source string
	forge  forge
	st     *store.Store
	log    *slog.Logger

	poll, recheck, recheckFor time.Duration
	retryDelays               []time.Duration // between attempts of one post
	maxWait                   time.Duration   // the longest wait a rate limit imposes on a retry

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{}

	mu      sync.Mutex
	queue   []event
	started bool
	closed  bool

	// Owned by the run goroutine: the last status posted per recent revision, so nothing is
	// posted twice (GitLab refuses a transition to the state a status already has), and the
	// revisions whose outcome is decided, which a newer revision never marks superseded.
	sent  map[string]string
	final map[string]bool
}

type eventKind int

const (
	evPicked eventKind = iota
	evRejected
	evApplied
)

type event struct {
	kind     eventKind
	revision string
	errors   []string
}

// New returns a reporter for source; its context on the forge is "trueup/<source>". Its
// goroutine starts with the first call and ends with Close.
func New(cfg Config, source string, st *store.Store, logger *slog.Logger) (*Reporter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if st == nil {
		return nil, errors.New("commit status: a store is required")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f, err := newForge(cfg, "trueup/"+source)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Reporter{
		source:      source,
		forge:       f,
		st:          st,
		log:         logger.With("component", "commitstatus", "source", source, "provider", cfg.Provider),
		poll:        defaultPoll,
		recheck:     defaultRecheck,
		recheckFor:  defaultRecheckFor,
		retryDelays: []time.Duration{time.Second, 4 * time.Second},
		maxWait:     maxRateLimitWait,
		ctx:         ctx,
		cancel:      cancel,
		done:        make(chan struct{}),
		wake:        make(chan struct{}, 1),
		sent:        map[string]string{},
		final:       map[string]bool{},
	}, nil
}

// Picked posts pending ("applying revision") when the syncer has written a revision. Like every
// method it returns at once: posting happens in the background.
func (r *Reporter) Picked(_ context.Context, revision string) {
	r.enqueue(event{kind: evPicked, revision: revision})
}

// Rejected posts failure with the first of errors (validation errors read file:line: …).
func (r *Reporter) Rejected(_ context.Context, revision string, errors []string) {
	r.enqueue(event{kind: evRejected, revision: revision, errors: append([]string(nil), errors...)})
}

// Applied starts watching the resources whose desired state revision changed; once each is
// Ready (success) or Failed/Stalled (failure naming the first ones), the final status is
// posted. A newer Applied revision ends the watch of an older one.
func (r *Reporter) Applied(_ context.Context, revision string) {
	r.enqueue(event{kind: evApplied, revision: revision})
}

// Close stops the reporter's goroutine (statuses not yet posted are dropped); safe twice.
func (r *Reporter) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	started := r.started
	r.mu.Unlock()
	r.cancel()
	if started {
		<-r.done
	}
	return nil
}

func (r *Reporter) enqueue(ev event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.queue = append(r.queue, ev)
	if !r.started {
		r.started = true
		go r.run()
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *Reporter) take() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.queue
	r.queue = nil
	return q
}

// watch is the revision being waited for.
type watch struct {
	revision string
	next     time.Time // next check
	failedAt time.Time // when a failure was posted; rechecked for a while after
}

// run handles events in order and checks the watched revision; it owns every post.
func (r *Reporter) run() {
	defer close(r.done)
	var w *watch
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-r.ctx.Done():
			timer.Stop()
			return
		case <-r.wake:
			for _, ev := range r.take() {
				w = r.handle(ev, w)
			}
		case <-timer.C:
		}
		if w != nil && !time.Now().Before(w.next) {
			w = r.check(w)
		}
		if w != nil {
			timer.Reset(time.Until(w.next))
		}
		if len(r.sent) > 64 {
			clear(r.sent) // only recent revisions matter
			clear(r.final)
		}
	}
}

func (r *Reporter) handle(ev event, w *watch) *watch {
	if !isCommit(ev.revision) {
		r.log.Debug("not a commit: no status posted", "revision", ev.revision)
		return w
	}
	switch ev.kind {
	case evPicked:
		if w == nil || w.revision != ev.revision {
			delete(r.final, ev.revision) // a new attempt at it: its outcome is open again
			r.post(ev.revision, statePending, "applying revision")
		}
	case evRejected:
		r.final[ev.revision] = true
		r.post(ev.revision, stateFailure, rejectedDescription(ev.errors))
		if w != nil && w.revision == ev.revision {
			return nil
		}
	case evApplied:
		if r.final[ev.revision] || (w != nil && w.revision == ev.revision) {
			return w // applied again (a replica retrying): nothing new to say
		}
		if w != nil && !r.final[w.revision] {
			r.post(w.revision, stateSuperseded, supersededDescription(ev.revision))
		}
		// Checked at once, so that an event queued behind this one sees its outcome.
		return r.check(&watch{revision: ev.revision})
	}
	return w
}

// check looks at the watched revision's resources and posts what changed; it returns nil
// when nothing is left to watch.
func (r *Reporter) check(w *watch) *watch {
	ctx, cancel := context.WithTimeout(r.ctx, requestTimeout)
	p, err := r.st.RevisionProgress(ctx, r.source, w.revision)
	cancel()
	if err != nil {
		if r.ctx.Err() == nil {
			r.log.Warn("read revision progress", "revision", clip.Rev(w.revision), "err", err)
		}
		w.next = time.Now().Add(r.poll)
		return w
	}
	r.log.Debug("revision progress", "revision", clip.Rev(w.revision), "total", p.Total, "ready", p.Ready, "failed", p.Failed, "pending", p.Pending)
	if p.SourceRevision != w.revision {
		// A newer revision is applied; its Applied call is on its way.
		if !r.final[w.revision] {
			r.post(w.revision, stateSuperseded, supersededDescription(p.SourceRevision))
		}
		return nil
	}
	switch {
	case p.Total == 0:
		r.final[w.revision] = true
		r.post(w.revision, stateSuccess, "applied; the revision changed no resources")
		return nil
	case p.Pending > 0:
		r.post(w.revision, stateRunning, "reconciling "+plural.Count(p.Total, "resource", "resources"))
		w.next = time.Now().Add(r.poll)
		return w
	case p.Failed == 0:
		r.final[w.revision] = true
		r.post(w.revision, stateSuccess, plural.Count(p.Ready, "resource", "resources")+" Ready")
		return nil
	}
	r.final[w.revision] = true
	r.post(w.revision, stateFailure, failureDescription(p))
	if w.failedAt.IsZero() {
		w.failedAt = time.Now()
	}
	// Failures that are retried may still heal; Stalled ones wait for a new spec.
	if p.Failed > p.Stalled && time.Since(w.failedAt) < r.recheckFor {
		w.next = time.Now().Add(r.recheck)
		return w
	}
	return nil
}

// post sends one status unless it is the one last sent for revision. Failures are logged,
// never returned: a forge outage must not hold up syncing.
func (r *Reporter) post(revision string, s state, desc string) {
	desc = clip.Runes(desc, maxDescription)
	key := r.forge.key(s, desc)
	if r.sent[revision] == key {
		return
	}
	if err := r.send(revision, s, desc); err != nil {
		if r.ctx.Err() == nil {
			r.log.Warn("could not post commit status", "revision", clip.Rev(revision), "state", string(s), "err", err)
		}
		return
	}
	r.sent[revision] = key
	r.log.Debug("commit status posted", "revision", clip.Rev(revision), "state", string(s))
}

// send posts with a couple of retries on network errors, 5xx and rate limits.
func (r *Reporter) send(revision string, s state, desc string) error {
	for attempt := 0; ; attempt++ {
		retry, wait, err := r.sendOnce(revision, s, desc)
		if err == nil {
			return nil
		}
		if !retry || attempt >= len(r.retryDelays) || r.ctx.Err() != nil {
			return err
		}
		delay := max(r.retryDelays[attempt], min(wait, r.maxWait))
		r.log.Warn("commit status post failed; retrying", "revision", clip.Rev(revision), "attempt", attempt+1, "in", delay, "err", err)
		t := time.NewTimer(delay)
		select {
		case <-r.ctx.Done():
			t.Stop()
			return r.ctx.Err()
		case <-t.C:
		}
	}
}

func (r *Reporter) sendOnce(revision string, s state, desc string) (retry bool, wait time.Duration, err error) {
	ctx, cancel := context.WithTimeout(r.ctx, requestTimeout)
	defer cancel()
	retry, wait, err = r.forge.post(ctx, revision, s, desc)
	if err != nil {
		err = fmt.Errorf("post commit status: %w", err)
	}
	return retry, wait, err
}

func isCommit(rev string) bool {
	if len(rev) != 40 && len(rev) != 64 {
		return false
	}
	for _, c := range rev {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func rejectedDescription(errs []string) string {
	if len(errs) == 0 {
		return "revision rejected: invalid manifests"
	}
	more := ""
	if len(errs) > 1 {
		more = fmt.Sprintf(" (+%d more)", len(errs)-1)
	}
	return clip.Runes("rejected: "+oneLine(errs[0]), maxDescription-utf8.RuneCountInString(more)) + more
}

func supersededDescription(newer string) string {
	if newer == "" {
		return "superseded before its resources were Ready"
	}
	return "superseded by " + clip.Rev(newer) + " before its resources were Ready"
}

func failureDescription(p store.RevisionProgress) string {
	head := fmt.Sprintf("%d of %d failed: ", p.Failed, p.Total)
	return head + oneLine(strings.Join(p.Failures, "; "))
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
