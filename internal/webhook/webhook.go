// Package webhook owns the push webhook endpoint (DESIGN §9, §10): it authenticates
// deliveries from GitHub, Gitea/Forgejo, GitLab, container registries (for OCI sources) and
// generic senders, ignores pushes to branches (or tags) a source does not track, answers
// floods with 429, dedupes redeliveries by their delivery id and asks the source's syncer to
// sync at once. For a source that previews pull requests it hands pull-request events
// (opened, new commits, reopened) to the preview runner, signed and deduped the same way.
package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/preview"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// Source is one source's webhook configuration.
type Source struct {
	Name string
	// Secret authenticates deliveries; a source without one refuses every delivery.
	Secret string
	// Branch is the tracked branch ("main"), or "" when the source tracks a tag, a commit or a
	// folder: then any push triggers a sync.
	Branch string
	// Preview: the source previews pull requests; its pull-request events go to
	// Options.Preview. Without it they are ignored (204), as any other event.
	Preview bool
	// Repository is an OCI source's repository in its registry ("acme/config"): its
	// deliveries are registry push notifications (registry.go), and a push of another
	// repository is ignored.
	Repository string
	// Tag is the tag an OCI source follows; "" when any pushed tag may change it (a semver
	// range, a pinned digest).
	Tag string
}

// Options configure the handler.
type Options struct {
	// Sources are keyed by source name, the {source} of POST /hooks/{source}.
	Sources map[string]Source
	// Store dedupes deliveries; nil turns deduplication off.
	Store *store.Store
	// Trigger asks for a sync of source (commit may be ""). It is called on the request's
	// goroutine and must not block: the syncer coalesces bursts. Required.
	Trigger func(source, commit string)
	// Preview hands a pull-request event of a source with Preview set to its preview runner.
	// It is called on the request's goroutine and must not block; an error (the runner's
	// queue is full) is answered 503.
	Preview func(ev preview.Event) error
	// MaxBody bounds a delivery's body (default 25 MiB, GitHub's own cap).
	MaxBody int64
	// Burst and PerSecond shape the per-source token bucket of authenticated deliveries
	// (defaults 20 and 10/s); a delivery finding it empty is answered 429.
	Burst     int
	PerSecond float64
	Logger    *slog.Logger
}

// Defaults.
const (
	DefaultMaxBody   = 25 << 20
	DefaultBurst     = 20
	DefaultPerSecond = 10
)

// storeTimeout bounds the dedupe write; a delivery must be answered within GitHub's 10 s.
const storeTimeout = 3 * time.Second

// Bounds on reading the bodies of signed deliveries before they are authenticated: at most
// unauthReads at a time per source (a forged flood holds unauthReads×MaxBody bytes, not one
// MaxBody per connection), a delivery waits at most slotWait for its turn, and every body
// must arrive within readTimeout.
const (
	unauthReads = 4
	slotWait    = time.Second
	readTimeout = 10 * time.Second
)

// Handler serves POST /hooks/{source}.
type Handler struct {
	opts Options
	log  *slog.Logger
	now  func() time.Time // the bucket's clock; tests freeze it

	// sources are the sources accepting webhooks now (SetSources replaces them).
	sources     atomic.Pointer[sourceSet]
	slotWait    time.Duration
	readTimeout time.Duration

	mu      sync.Mutex
	buckets map[string]*bucket
	warned  map[string]time.Time // last 401 logged per source, so that a flood logs once a minute
}

// New returns the handler. It panics without a Trigger, which is a wiring mistake.
func New(opts Options) *Handler {
	if opts.Trigger == nil {
		panic("webhook: Options.Trigger is required")
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.Burst <= 0 {
		opts.Burst = DefaultBurst
	}
	if opts.PerSecond <= 0 {
		opts.PerSecond = DefaultPerSecond
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{opts: opts, log: logger.With("component", "webhook"), now: time.Now,
		slotWait: slotWait, readTimeout: readTimeout,
		buckets: map[string]*bucket{}, warned: map[string]time.Time{}}
	h.SetSources(opts.Sources)
	return h
}

// sourceSet is the sources accepting webhooks, with, per source, a slot per signed body
// being read.
type sourceSet struct {
	byName  map[string]Source
	reading map[string]chan struct{}
}

// SetSources replaces the sources accepting webhooks (a config reload). Deliveries being
// answered finish with the set they started with; a source kept keeps its read slots.
func (h *Handler) SetSources(sources map[string]Source) {
	prev := h.sources.Load()
	set := &sourceSet{byName: make(map[string]Source, len(sources)), reading: make(map[string]chan struct{}, len(sources))}
	for name, s := range sources {
		if s.Name == "" {
			s.Name = name
		}
		if s.Secret == "" {
			// Config validation refuses this; refuse here too rather than accept unsigned pushes.
			h.log.Error("webhook has no secret: every delivery will be refused", "source", name)
		}
		set.byName[name] = s
		if prev != nil && prev.reading[name] != nil {
			set.reading[name] = prev.reading[name]
		} else {
			set.reading[name] = make(chan struct{}, unauthReads)
		}
	}
	h.sources.Store(set)
}

// ServeHTTP answers one delivery: 404 unknown source, 413 body too large, 401 bad or missing
// signature, 408 body too slow, 429 flooded (too many signed bodies being read, or the
// source's bucket empty), 200 ping, 204 ignored (another branch, another event), 202 accepted
// (and a sync triggered, once per delivery id).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("source")
	src, ok := h.sources.Load().byName[name]
	if !ok {
		// Before reading the body: an unknown source costs nothing.
		wire.WriteError(w, http.StatusNotFound, fmt.Sprintf("no webhook for source %q", name))
		return
	}
	if r.ContentLength > h.opts.MaxBody {
		wire.WriteError(w, http.StatusRequestEntityTooLarge, tooLarge(h.opts.MaxBody))
		return
	}
	body, code, msg := h.authenticate(w, r, name, src.Secret)
	if code != 0 {
		if code == http.StatusUnauthorized {
			h.warnUnauthorized(name)
		}
		if code == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		wire.WriteError(w, code, msg)
		return
	}
	// After authentication: forged floods are refused above without draining the bucket.
	if wait, ok := h.allow(name); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		wire.WriteError(w, http.StatusTooManyRequests, "too many deliveries for this source; retry later")
		return
	}

	d := classify(r.Header)
	log := h.log.With("source", name, "provider", d.provider, "event", clip.Storable(d.event, 64), "delivery", deliveryKey(d.delivery))
	if src.Repository != "" {
		h.registryPush(w, r, name, src, d, body, log)
		return
	}
	switch d.kind {
	case kindPing:
		log.Info("webhook ping")
		wire.WriteJSON(w, http.StatusOK, map[string]string{"status": "ping"})
		return
	case kindPullRequest:
		if src.Preview && h.opts.Preview != nil {
			h.pullRequest(w, r, name, d, body, log)
			return
		}
		log.Debug("webhook event ignored")
		w.WriteHeader(http.StatusNoContent)
		return
	case kindOther:
		log.Debug("webhook event ignored")
		w.WriteHeader(http.StatusNoContent)
		return
	}

	push, err := parsePush(r.Header, body, d.provider)
	if err != nil {
		wire.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !push.tracked(src.Branch) {
		log.Debug("push ignored: not the tracked branch", "ref", push.Ref, "branch", src.Branch)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	commit := push.commit()

	// A sync is idempotent: triggering twice costs an ls-remote, missing a push costs a poll
	// interval. A delivery that cannot be recorded triggers.
	if !h.firstDelivery(r.Context(), name, d, log) {
		log.Info("webhook redelivery ignored", "commit", commit)
		wire.WriteJSON(w, http.StatusAccepted, map[string]string{"status": "duplicate delivery"})
		return
	}
	h.opts.Trigger(name, commit)
	log.Info("webhook accepted: sync triggered", "ref", push.Ref, "commit", commit)
	wire.WriteJSON(w, http.StatusAccepted, map[string]string{"status": "accepted"})
}

// registryPush answers an authenticated delivery to an OCI source: 202 and a check of the
// source's tag for a push of its repository and tag, 204 for any other notification.
func (h *Handler) registryPush(w http.ResponseWriter, r *http.Request, name string, src Source, d delivery, body []byte, log *slog.Logger) {
	p, err := parseRegistryPush(body)
	if err != nil {
		wire.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	tag, ok := p.matches(src.Repository, src.Tag)
	if !ok {
		log.Debug("registry notification ignored: not a push of the followed repository and tag", "repository", src.Repository, "tag", src.Tag)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if !h.firstDelivery(r.Context(), name, d, log) {
		log.Info("webhook redelivery ignored", "tag", clip.Storable(tag, 128))
		wire.WriteJSON(w, http.StatusAccepted, map[string]string{"status": "duplicate delivery"})
		return
	}
	h.opts.Trigger(name, "")
	log.Info("webhook accepted: registry push, sync triggered", "tag", clip.Storable(tag, 128))
	wire.WriteJSON(w, http.StatusAccepted, map[string]string{"status": "accepted"})
}

// pullRequest answers an authenticated pull-request event of a source that previews: 204
// for an action that asks for no preview or a pull request to another branch than the
// source's, 202 once the event is queued (or known already).
func (h *Handler) pullRequest(w http.ResponseWriter, r *http.Request, name string, d delivery, body []byte, log *slog.Logger) {
	ev, ok, err := parsePullRequest(r.Header, body, d.provider)
	if err != nil {
		wire.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !ok {
		log.Debug("pull request event ignored: no new head")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	src := h.sources.Load().byName[name]
	if !targets(ev.Base, src.Branch) {
		log.Debug("pull request ignored: it targets another branch", "number", ev.Number, "base", ev.Base, "branch", src.Branch)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	ev.Source, ev.Delivery = name, deliveryKey(d.delivery)
	if !h.firstDelivery(r.Context(), name, d, log) {
		log.Info("webhook redelivery ignored", "number", ev.Number, "head", ev.HeadSHA)
		wire.WriteJSON(w, http.StatusAccepted, map[string]string{"status": "duplicate delivery"})
		return
	}
	if err := h.opts.Preview(ev); err != nil {
		// Not queued: the forge's redelivery (or its retry of this 503) must be acted on.
		h.forgetDelivery(r.Context(), name, d, log)
		log.Warn("pull request not previewed", "number", ev.Number, "err", err)
		w.Header().Set("Retry-After", "60")
		wire.WriteError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	log.Info("webhook accepted: pull request preview queued", "number", ev.Number, "head", ev.HeadSHA)
	wire.WriteJSON(w, http.StatusAccepted, map[string]string{"status": "preview queued"})
}

// firstDelivery records d's id and reports whether it is new; a delivery without an id, or
// one that cannot be recorded, counts as new (acting twice is cheaper than never).
func (h *Handler) firstDelivery(ctx context.Context, source string, d delivery, log *slog.Logger) bool {
	if d.delivery == "" || h.opts.Store == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	first, err := h.opts.Store.RecordDelivery(ctx, source, deliveryKey(d.delivery))
	if err != nil {
		log.Warn("could not record webhook delivery; acting anyway", "err", err)
		return true
	}
	return first
}

// forgetDelivery undoes firstDelivery's record of d.
func (h *Handler) forgetDelivery(ctx context.Context, source string, d delivery, log *slog.Logger) {
	if d.delivery == "" || h.opts.Store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if err := h.opts.Store.ForgetDelivery(ctx, source, deliveryKey(d.delivery)); err != nil {
		log.Warn("could not forget a webhook delivery that was not acted on; its redelivery will be ignored", "err", err)
	}
}

// authenticate reads the body of an authentic delivery, or says how to refuse it. A delivery
// whose credential is in its headers is decided before its body is read; a signed one is read
// first, at most MaxBody bytes within readTimeout, by at most unauthReads deliveries of a
// source at a time, so that forged deliveries cannot fill the memory.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request, source, secret string) (body []byte, code int, msg string) {
	const unauthorized = "missing or invalid webhook signature"
	if !signed(r.Header) {
		if !authenticateHeader(r.Header, secret) {
			return nil, http.StatusUnauthorized, unauthorized
		}
		return h.readBody(w, r)
	}
	if secret == "" {
		return nil, http.StatusUnauthorized, unauthorized
	}
	slots, ok := h.sources.Load().reading[source]
	if !ok {
		return nil, http.StatusNotFound, fmt.Sprintf("no webhook for source %q", source)
	}
	if !acquire(r.Context(), slots, h.slotWait) {
		return nil, http.StatusTooManyRequests, "too many unauthenticated deliveries in progress for this source; retry later"
	}
	defer func() { <-slots }()
	if body, code, msg = h.readBody(w, r); code != 0 {
		return nil, code, msg
	}
	if !authenticateBody(r.Header, body, secret) {
		return nil, http.StatusUnauthorized, unauthorized
	}
	return body, 0, ""
}

// acquire takes a slot, waiting at most wait for one: a burst of genuine deliveries queues
// for a moment rather than bouncing off a semaphore each holds for microseconds.
func acquire(ctx context.Context, slots chan struct{}, wait time.Duration) bool {
	select {
	case slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case slots <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// readBody reads at most MaxBody bytes of the body within readTimeout.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, int, string) {
	// A sender trickling its body would otherwise hold the connection, and a read slot, for as
	// long as it likes. Only the read deadline is set. A ResponseWriter that cannot set one
	// (a test recorder) answers ErrNotSupported; the server's own timeouts apply then.
	if err := http.NewResponseController(w).SetReadDeadline(time.Now().Add(h.readTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		h.log.Debug("could not set the webhook read deadline", "err", err)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		var netErr net.Error
		switch {
		case errors.As(err, &tooBig):
			return nil, http.StatusRequestEntityTooLarge, tooLarge(h.opts.MaxBody)
		case errors.As(err, &netErr) && netErr.Timeout():
			return nil, http.StatusRequestTimeout, fmt.Sprintf("request body not received within %s", h.readTimeout)
		}
		return nil, http.StatusBadRequest, "could not read the request body"
	}
	return body, 0, ""
}

func tooLarge(n int64) string {
	return fmt.Sprintf("request body larger than %d bytes", n)
}

// deliveryKey bounds what is stored per delivery: ids from forges are short UUIDs, but a
// generic sender's X-Request-Id is whatever it chose.
func deliveryKey(id string) string {
	if len(id) <= 128 {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (h *Handler) warnUnauthorized(source string) {
	h.mu.Lock()
	now := h.now()
	last, seen := h.warned[source]
	quiet := seen && now.Sub(last) < time.Minute
	if !quiet {
		h.warned[source] = now
	}
	h.mu.Unlock()
	if !quiet {
		h.log.Warn("webhook delivery refused: missing or invalid signature (check the secret on both sides)", "source", source)
	}
}

// bucket is one source's token bucket.
type bucket struct {
	tokens float64
	last   time.Time
}

// allow takes a token from source's bucket, or says how long until one is available.
func (h *Handler) allow(source string) (time.Duration, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	burst := float64(h.opts.Burst)
	b, ok := h.buckets[source]
	if !ok {
		b = &bucket{tokens: burst, last: now}
		h.buckets[source] = b
	}
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = min(burst, b.tokens+elapsed.Seconds()*h.opts.PerSecond)
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return 0, true
	}
	return time.Duration((1 - b.tokens) / h.opts.PerSecond * float64(time.Second)), false
}
