// Package notifier delivers the notifications outbox: on the replica that holds the
// "notifications" lease it reads due entries, plans messages with internal/notify (rules,
// grouping), sends them through the providers one at a time, records each message the
// provider accepted as soon as it answers, and then each entry's outcome (sent, retried
// with backoff, or dead after maxAttempts). Every message carries its delivery id, recorded
// on its entries before its first send, so that every retry is the same message under the
// same id. A run that cannot write the outbox stops sending.
package notifier

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"text/template"
	"time"

	"golang.org/x/time/rate"

	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/labelsel"
	"github.com/trueup-dev/trueup/internal/lease"
	"github.com/trueup-dev/trueup/internal/metrics"
	"github.com/trueup-dev/trueup/internal/notify"
	"github.com/trueup-dev/trueup/internal/store"
)

// LeaseName is the singleton lease whose holder sends.
const LeaseName = "notifications"

// Options configure a Sender.
type Options struct {
	Replica  string
	LeaseTTL time.Duration // default 15s
	Poll     time.Duration // how often the outbox is read (default 1s)
	// KeepSent and KeepDead: how long finished entries stay (defaults 7 and 30 days).
	KeepSent, KeepDead time.Duration
	ExternalURL        string
	Metrics            *metrics.Metrics
	// Client is used by the HTTP providers (default: a client with no redirects).
	Client *http.Client
	// Live reports whether the replica holds its liveness session (liveness.Liveness.Held);
	// while it does not, the lease is neither taken nor renewed (nil: always live).
	Live func() bool
}

// Sender delivers the outbox.
type Sender struct {
	st        *store.Store
	opts      Options
	cfg       config.Notifications
	rules     []notify.Rule
	providers map[string]Provider
	log       *slog.Logger

	lease   *lease.Holder // the notifications lease: only its holder sends
	limitMu sync.Mutex    // only the send loop takes it
	limits  map[string]*rate.Limiter

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New builds a sender from the notifications config (already validated).
func New(st *store.Store, cfg config.Notifications, opts Options, log *slog.Logger) (*Sender, error) {
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = 15 * time.Second
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.KeepSent <= 0 {
		opts.KeepSent = config.DefaultOutboxSent
	}
	if opts.KeepDead <= 0 {
		opts.KeepDead = config.DefaultOutboxDead
	}
	if opts.Client == nil {
		opts.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	s := &Sender{st: st, opts: opts, cfg: cfg, providers: map[string]Provider{}, log: log.With("component", "notifier"),
		limits: map[string]*rate.Limiter{}}
	for _, p := range cfg.Providers {
		pr, err := NewProvider(p, opts.Client)
		if err != nil {
			return nil, err
		}
		s.providers[p.Name] = pr
	}
	names := make([]string, 0, len(cfg.Providers))
	for _, p := range cfg.Providers {
		names = append(names, p.Name)
	}
	opts.Metrics.NotificationProviders(names)
	for _, r := range cfg.Rules {
		nr := notify.Rule{Name: r.Name, Providers: r.Providers, Events: r.Events, Sources: r.Sources, Namespaces: r.Namespaces, Kinds: r.Kinds}
		if r.Selector != "" {
			sel, err := labelsel.Parse(r.Selector)
			if err != nil {
				return nil, fmt.Errorf("rule %s: selector: %w", r.Name, err)
			}
			nr.Selector = sel
		}
		if r.Template != "" {
			t, err := template.New(r.Name).Parse(r.Template)
			if err != nil {
				return nil, fmt.Errorf("rule %s: template: %w", r.Name, err)
			}
			nr.Template = t
		}
		s.rules = append(s.rules, nr)
	}
	return s, nil
}

// Start runs the lease holder (built from the options as they are now) and the send loop
// until Stop or ctx ends.
func (s *Sender) Start(ctx context.Context) error {
	ctx, s.cancel = context.WithCancel(ctx)
	if s.lease == nil {
		s.lease = lease.New(s.st, lease.Options{Name: LeaseName, Replica: s.opts.Replica, TTL: s.opts.LeaseTTL,
			Live: s.opts.Live, Label: "notifications"}, s.log)
	}
	if err := s.lease.Start(ctx); err != nil {
		return err
	}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.sendLoop(ctx) }()
	return nil
}

// Stop ends the send loop, waits for it, and gives the lease up; safe twice and before Start.
func (s *Sender) Stop() {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	if s.lease != nil {
		s.lease.Stop()
	}
}

// LeasesFreed asks the lease holder to try to take the lease now (a peer released its leases
// or was found dead) rather than at its next tick.
func (s *Sender) LeasesFreed() {
	if s.lease != nil {
		s.lease.TryNow()
	}
}

// term is the term of the lease held (0: none).
func (s *Sender) term() int64 {
	if s.lease == nil {
		return 0
	}
	if l, _ := s.lease.Held(); l != nil {
		return l.Term
	}
	return 0
}

// Finished outbox entries past their retention (Options.KeepSent, KeepDead) are trimmed by
// the lease holder every trimEvery.
const (
	trimEvery = 10 * time.Minute
	trimBatch = 10000
)

func (s *Sender) sendLoop(ctx context.Context) {
	t := time.NewTicker(s.opts.Poll)
	defer t.Stop()
	var lastTrim time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s.term() == 0 {
			continue
		}
		if err := s.Once(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("deliver notifications", "err", err)
		}
		if time.Since(lastTrim) >= trimEvery {
			lastTrim = time.Now()
			s.trim(ctx)
		}
	}
}

// trim deletes finished entries past their retention, a batch at a time, and forgets the
// rate limiters that are full again (nothing told within the interval).
func (s *Sender) trim(ctx context.Context) {
	now := time.Now()
	s.limitMu.Lock()
	for k, l := range s.limits {
		if l.TokensAt(now) >= 1 {
			delete(s.limits, k)
		}
	}
	s.limitMu.Unlock()
	total := 0
	for ctx.Err() == nil {
		n, err := s.st.TrimOutbox(ctx, s.opts.KeepSent, s.opts.KeepDead, trimBatch)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("trim the notifications outbox", "err", err)
			}
			return
		}
		total += n
		if n < trimBatch {
			break
		}
	}
	if total > 0 {
		s.log.Info("trimmed the notifications outbox", "deleted", total)
	}
}

// Once delivers what is due now (tests call it directly).
func (s *Sender) Once(ctx context.Context) error {
	due, err := s.st.DueOutbox(ctx, 2000)
	if err != nil || len(due) == 0 {
		return err
	}
	items := make([]notify.Item, len(due))
	for i, e := range due {
		items[i] = notify.Item{ID: e.ID, Event: e.Event, Namespace: e.Namespace, Kind: e.Kind, Name: e.Name, Source: e.Source,
			Revision: e.Revision, Labels: e.Labels, Phase: e.Phase, Message: e.Message, CreatedAt: e.CreatedAt, Attempts: e.Attempts,
			Done: slices.Clone(e.Done), Deliveries: e.Deliveries}
	}
	now := time.Now()
	batches, held := notify.Plan(items, s.rules, now, s.cfg.GroupWindow)
	byID := make(map[int64]*notify.Item, len(items))
	for i := range items {
		byID[items[i].ID] = &items[i]
	}
	failed := map[int64]bool{}
	wait := map[int64]time.Duration{}
	lastErr := map[int64]string{}
	failedProv := map[int64]string{}
	// A holder that lost the lease stops between messages (the new holder sends the rest);
	// Once called directly (term 0) runs to the end.
	term := s.term()
	unsent := map[int64]bool{}
	var stopErr error
	stop := func(rest []notify.Batch) {
		for _, b := range rest {
			for _, it := range b.Items {
				unsent[it.ID] = true
			}
		}
	}
	for bi, b := range batches {
		if term != 0 && s.term() != term {
			stop(batches[bi:])
			s.log.Info("lost the notifications lease while sending; the new holder sends the rest", "left", len(batches)-bi)
			break
		}
		t := b.Target()
		if b.ID == "" && len(b.Items) == 1 && !s.allow(t, b.Items[0], now) {
			s.opts.Metrics.Notification(b.Provider, "suppressed")
			s.log.Info("notification rate-limited", "rule", b.Rule.Name, "provider", b.Provider, "event", b.Event, "resource", b.Items[0].Name)
			byID[b.Items[0].ID].Done = append(byID[b.Items[0].ID].Done, t)
			continue
		}
		if b.ID == "" {
			// Its id is recorded before the first send: a retry is this message again.
			b.ID = b.DeliveryID()
			if err := s.st.StartOutboxDelivery(ctx, itemIDs(b), t, b.ID); err != nil {
				stop(batches[bi:])
				stopErr = err
				break
			}
		}
		err := s.send(ctx, b)
		if err == nil {
			if werr := s.delivered(ctx, b); werr != nil {
				// Marks kept only in memory would be lost with this replica: send no more
				// (the final write below records what it can).
				stop(batches[bi+1:])
				stopErr = werr
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for _, it := range b.Items {
			if err == nil {
				byID[it.ID].Done = append(byID[it.ID].Done, t)
				continue
			}
			failed[it.ID] = true
			wait[it.ID] = max(wait[it.ID], retryAfterOf(err))
			lastErr[it.ID] = fmt.Sprintf("%s: %v", t, err)
			failedProv[it.ID] = b.Provider
		}
		if stopErr != nil {
			break
		}
	}
	var results []store.OutboxResult
	for i, it := range items {
		if slices.Contains(held, it.ID) || unsent[it.ID] {
			if len(it.Done) > len(due[i].Done) {
				// Delivered to some targets while held for others: keep what went out.
				results = append(results, store.OutboxResult{ID: it.ID, State: store.OutboxPending, Done: it.Done, Attempts: it.Attempts, NextAttempt: now})
			}
			continue
		}
		attempts := it.Attempts
		if failed[it.ID] {
			attempts++
		}
		v := notify.Decide(failed[it.ID], attempts, s.cfg.MaxAttempts, wait[it.ID])
		switch v.State {
		case store.OutboxDead:
			s.opts.Metrics.Notification(failedProv[it.ID], "dead")
			s.log.Error("notification given up", "id", it.ID, "event", it.Event, "attempts", attempts, "err", lastErr[it.ID])
		case store.OutboxPending:
			s.opts.Metrics.Notification(failedProv[it.ID], "failed")
			s.log.Warn("notification failed; retrying", "id", it.ID, "event", it.Event, "attempt", attempts, "in", v.Wait, "err", lastErr[it.ID])
		}
		results = append(results, store.OutboxResult{ID: it.ID, State: v.State, Done: byID[it.ID].Done, Attempts: attempts,
			NextAttempt: now.Add(v.Wait), Error: lastErr[it.ID]})
	}
	if err := s.st.FinishOutbox(ctx, results); err != nil {
		return errors.Join(stopErr, err)
	}
	if stopErr != nil {
		s.log.Warn("notifications run stopped: the outbox could not be written; the rest is sent by the next run", "err", stopErr)
	}
	return stopErr
}

func itemIDs(b notify.Batch) []int64 {
	ids := make([]int64, len(b.Items))
	for i, it := range b.Items {
		ids[i] = it.ID
	}
	return ids
}

// delivered records a message the provider accepted before the next one is sent, even when
// ctx ends meanwhile: a run that is interrupted (lease lost, shutdown, a crash a moment
// later) must not leave it to be sent again. When the write fails the run stops (Once).
func (s *Sender) delivered(ctx context.Context, b notify.Batch) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return s.st.MarkOutboxDelivered(ctx, itemIDs(b), b.Target())
}

func (s *Sender) send(ctx context.Context, b notify.Batch) error {
	p, ok := s.providers[b.Provider]
	if !ok {
		return fmt.Errorf("no provider %s", b.Provider)
	}
	m, err := notify.Compose(b, s.opts.ExternalURL)
	if err != nil {
		s.log.Warn("notification template failed; the default text is sent", "rule", b.Rule.Name, "err", err)
		r := *b.Rule
		r.Template = nil
		b.Rule = &r
		m, _ = notify.Compose(b, s.opts.ExternalURL)
	}
	if err := p.Send(ctx, m); err != nil {
		return err
	}
	s.opts.Metrics.Notification(b.Provider, "sent")
	s.log.Info("notification sent", "rule", b.Rule.Name, "provider", b.Provider, "event", b.Event, "count", len(b.Items), "delivery", m.ID)
	return nil
}

// allow applies the per-resource rate limit: one message per target, resource and event per
// cfg.RateLimit (a flapping resource is told once, then quietly until the interval passes).
// ApprovalRequired is limited per message too: a new plan to approve (its message names the
// plan) is told within the interval; the same request is not told twice.
func (s *Sender) allow(target string, it notify.Item, now time.Time) bool {
	if s.cfg.RateLimit <= 0 {
		return true
	}
	s.limitMu.Lock()
	defer s.limitMu.Unlock()
	key := target + "|" + it.Namespace + "/" + it.Kind + "/" + it.Name + "|" + it.Source + "|" + it.Event
	if it.Event == notify.ApprovalRequired {
		key += "|" + it.Message
	}
	l, ok := s.limits[key]
	if !ok {
		l = rate.NewLimiter(rate.Every(s.cfg.RateLimit), 1)
		s.limits[key] = l
	}
	return l.AllowN(now, 1)
}
