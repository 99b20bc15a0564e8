package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trueup-dev/trueup/internal/store"
)

// GET /api/v1/watch streams the changes feed (store.Change) as Server-Sent Events:
//
//	retry: 2000
//
//	id: 41
//	event: position
//	data:
//
//	id: 42
//	event: resource
//	data: {"id":42,"object":"resource","type":"MODIFIED",…}
//
// Every block carries the id of the feed position it stands for, so a client that reconnects
// with Last-Event-ID (browsers do so by themselves) or ?since= receives exactly what it
// missed. A `position` event (empty data) only moves that position: it is sent at the start
// and with heartbeats, so that filtered or idle watchers resume from where they really are.
// It is a named event with a data line, not a bare id block, because widely used clients
// (the npm eventsource package, on eventsource-parser) drop blocks without data and would
// then resume from an older id; browsers' EventSource ignores event names nobody listens to.
// `event: reset` says the client cannot be brought up to date from the feed (its position
// was pruned, is unknown, or it read too slowly): it must re-list, then carry on.

// Watch tuning; the hub copies them into fields that tests may change.
const (
	watchBuffer       = 256   // batches (one per read of the feed) queued per watcher
	watchMaxQueued    = 10000 // changes queued per watcher
	watchPage         = 1000
	watchRetry        = 2000 // ms, the client's reconnect delay
	watchFallback     = 2 * time.Second
	watchGapGrace     = 5 * time.Second
	watchHeartbeat    = 15 * time.Second
	watchWriteTimeout = 10 * time.Second
	watchQueryTimeout = 10 * time.Second
)

// Reasons of `event: reset` and of a subscription's end.
const (
	resetExpired  = "expired"  // changes after the client's position were pruned
	resetUnknown  = "unknown"  // the position is ahead of the feed (another database?)
	resetOverflow = "overflow" // the client read too slowly and was disconnected
	resetBehind   = "behind"   // the client is further behind than a replay serves: re-list
	resetBulk     = "bulk"     // a revision created more resources than the feed sends one by one

	// maxReplay bounds how many changes a resuming client is sent from the store; further
	// behind, re-listing is cheaper than replaying.
	maxReplay = 50_000
	// maxWatchers bounds the watch streams one replica serves.
	maxWatchers = 2000
	endClosed   = "closed" // the server is stopping
)

var errHubClosed = errors.New("watch hub is closed")

// Hub fans the changes feed out to this replica's watchers. One goroutine reads new changes
// (one query per notification, however many watchers there are) and offers what matches to
// every watcher's buffered channel without ever blocking: a watcher with a full buffer is
// dropped, so a slow client cannot slow the hub, other clients or reconciles. The buffer
// holds batches (one per read, shared by the watchers without a filter), so that a sync that
// changes thousands of resources in one transaction does not drop every watcher at once, and
// is bounded by changes too (maxQueued).
//
// Feed ids come from a sequence, so they are taken in one order and committed in another: a
// reader may see id 11 before id 10 commits. The hub therefore publishes ids in order only,
// holding back behind a missing id until it appears or, for a transaction that rolled back,
// until gapGrace has passed. Everything up to the hub's position (last) has been published.
type Hub struct {
	store *store.Store
	log   *slog.Logger

	buffer       int
	maxQueued    int64
	fallback     time.Duration
	gapGrace     time.Duration
	heartbeat    time.Duration
	writeTimeout time.Duration

	wake   chan struct{}
	stop   chan struct{}
	ctx    context.Context // cancelled by Close: ends queries in flight
	cancel context.CancelFunc
	wg     sync.WaitGroup

	startMu sync.Mutex // serialises start, which reads the feed's end without holding mu
	mu      sync.Mutex
	subs    map[*subscription]struct{}
	last    int64
	running bool
	closed  bool

	// Owned by the run goroutine.
	gapAt    int64
	gapSince time.Time

	polls atomic.Int64 // reads of the feed, for tests
}

// NewHub returns a hub on st. It starts reading the feed with its first watcher and stops in
// Close.
func NewHub(st *store.Store, logger *slog.Logger) *Hub {
	ctx, cancel := context.WithCancel(context.Background())
	return &Hub{store: st, log: logger.With("component", "watch"),
		buffer: watchBuffer, maxQueued: watchMaxQueued, fallback: watchFallback, gapGrace: watchGapGrace, heartbeat: watchHeartbeat,
		writeTimeout: watchWriteTimeout,
		wake:         make(chan struct{}, 1), stop: make(chan struct{}), ctx: ctx, cancel: cancel,
		subs: map[*subscription]struct{}{}}
}

// Notify says that new changes may have been committed (a NOTIFY on store.ChangesChannel, or
// a LISTEN reconnect). It never blocks; notifications coalesce.
func (h *Hub) Notify() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Close ends every watcher's stream and the reading goroutine; safe twice.
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	for sub := range h.subs {
		h.drop(sub, endClosed)
	}
	h.mu.Unlock()
	close(h.stop)
	h.cancel()
	h.wg.Wait()
}

// start begins reading the feed from its current end, once. The end is read without h.mu
// (which every watcher's request takes): a slow database delays only the watchers that wait
// for the hub to start, never a publication or another stream's subscription.
func (h *Hub) start(ctx context.Context) error {
	h.startMu.Lock()
	defer h.startMu.Unlock()
	h.mu.Lock()
	closed, running := h.closed, h.running
	h.mu.Unlock()
	if closed {
		return errHubClosed
	}
	if running {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, watchQueryTimeout)
	defer cancel()
	last, err := h.store.LatestChange(ctx)
	if err != nil {
		return fmt.Errorf("read the end of the changes feed: %w", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed { // Close ran meanwhile: its wait must not miss the reader
		return errHubClosed
	}
	h.last, h.running = last, true
	h.wg.Add(1)
	go h.run()
	return nil
}

// position returns the id up to which every change has been published.
func (h *Hub) position() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

// coalesce is the least time between two reads of the feed: under a stream of commits
// (thousands of reconciles a second) watchers get fewer, larger batches, which keeps the
// cost per watcher low, at the price of at most this much latency.
const coalesce = 50 * time.Millisecond

func (h *Hub) run() {
	defer h.wg.Done()
	timer := time.NewTimer(h.fallback)
	defer timer.Stop()
	for {
		read := time.Now()
		timer.Reset(h.poll())
		select {
		case <-h.stop:
			return
		case <-h.wake:
			if d := coalesce - time.Since(read); d > 0 {
				select {
				case <-h.stop:
					return
				case <-time.After(d):
				}
			}
		case <-timer.C:
		}
	}
}

// poll publishes what was committed since the hub's position and returns when to look again
// without a notification.
func (h *Hub) poll() time.Duration {
	defer h.polls.Add(1)
	for {
		ctx, cancel := context.WithTimeout(h.ctx, watchQueryTimeout)
		cs, err := h.store.ChangesSince(ctx, h.last, watchPage) // h.last is written only by this goroutine
		cancel()
		if err != nil {
			if h.ctx.Err() == nil {
				h.log.Warn("read the changes feed", "err", err, "after", h.last)
			}
			return h.fallback
		}
		n, wait := h.inOrder(cs, time.Now())
		h.publish(cs[:n])
		if wait > 0 {
			return min(wait, h.fallback)
		}
		if len(cs) < watchPage {
			return h.fallback
		}
	}
}

// inOrder returns how many of cs (ordered by id) can be published now, and how long to wait
// for a missing id when it stops before the end.
func (h *Hub) inOrder(cs []store.Change, now time.Time) (n int, wait time.Duration) {
	last := h.last
	for i, c := range cs {
		if c.ID != last+1 {
			if h.gapAt != last+1 {
				h.gapAt, h.gapSince = last+1, now
			}
			if waited := now.Sub(h.gapSince); waited < h.gapGrace {
				return i, h.gapGrace - waited
			}
			h.log.Debug("skipping ids missing from the changes feed", "from", last+1, "to", c.ID-1)
		}
		last = c.ID
		h.gapAt = 0
	}
	return len(cs), 0
}

// event is a change with its SSE block, rendered once by the hub and shared by every
// watcher: with many watchers the cost per change stays one encoding, not one per client.
type event struct {
	store.Change
	block []byte
}

func render(c store.Change) []byte {
	if c.Type == store.ChangeRelist {
		// It names no source: a watcher limited to some namespaces may not see it.
		return resetBlock(c.ID, resetBulk)
	}
	data, _ := json.Marshal(changeWire(c))
	return fmt.Appendf(nil, "id: %d\nevent: %s\ndata: %s\n\n", c.ID, c.Object, data)
}

// publish offers cs to every subscription and moves the hub's position past them.
func (h *Hub) publish(changes []store.Change) {
	if len(changes) == 0 {
		return
	}
	cs := make([]event, len(changes))
	for i, c := range changes {
		cs[i] = event{Change: c, block: render(c)}
	}
	end := cs[len(cs)-1].ID
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.subs {
		if b := sub.wanted(cs); len(b) > 0 {
			n := int64(len(b))
			if sub.queued.Add(n) > h.maxQueued {
				h.drop(sub, resetOverflow)
				continue
			}
			select {
			case sub.ch <- b:
			default:
				h.drop(sub, resetOverflow)
				continue
			}
		}
		if end > sub.pos.Load() {
			sub.pos.Store(end)
		}
	}
	h.last = end
}

// subscribe registers a watcher positioned at after, if the hub has published nothing
// beyond it; otherwise it returns the hub's position, which the caller must first catch up
// to from the store (so that a long backlog never goes through the buffer).
func (h *Hub) subscribe(f changeFilter, after int64) (*subscription, int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, 0, errHubClosed
	}
	if h.last > after {
		return nil, h.last, nil
	}
	sub := &subscription{filter: f, after: after, ch: make(chan []event, h.buffer), gone: make(chan struct{})}
	sub.pos.Store(after)
	h.subs[sub] = struct{}{}
	return sub, after, nil
}

func (h *Hub) unsubscribe(sub *subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, sub)
}

// drop ends sub for reason; h.mu is held.
func (h *Hub) drop(sub *subscription, reason string) {
	if _, ok := h.subs[sub]; !ok {
		return
	}
	delete(h.subs, sub)
	sub.reason = reason
	close(sub.gone)
}

// subscription is one watcher's live feed.
type subscription struct {
	filter changeFilter
	after  int64 // where the watcher started: older ids are not offered
	ch     chan []event
	queued atomic.Int64 // changes in ch
	// pos: every change up to pos was offered (the matching ones are in ch or were read).
	pos  atomic.Int64
	gone chan struct{}
	// reason is set, under the hub's lock, before gone is closed.
	reason string
}

// wanted returns the changes of cs (ordered by id) the watcher wants: cs itself, shared and
// read-only, when it wants them all.
func (sub *subscription) wanted(cs []event) []event {
	for len(cs) > 0 && cs[0].ID <= sub.after {
		cs = cs[1:]
	}
	if sub.filter == (changeFilter{}) && !slices.ContainsFunc(cs, func(c event) bool { return c.Type == store.ChangeRelist }) {
		return cs
	}
	var out []event
	for _, c := range cs {
		if sub.filter.match(c.Change) {
			if n := len(out); n > 0 && sameReset(out[n-1].Change, c.Change) {
				out[n-1] = c
				continue
			}
			out = append(out, c)
		}
	}
	return out
}

// sameReset reports whether a watcher sent prev can skip it for c: both are RELIST changes
// (a bulk revision writes one per namespace it created in) with nothing it sees between, and
// one reset at the later id tells it all.
func sameReset(prev, c store.Change) bool {
	return prev.Type == store.ChangeRelist && c.Type == store.ChangeRelist
}

// changeFilter selects changes; empty fields match everything. Changes of sources have no
// kind or namespace, and their source is the source itself.
type changeFilter struct {
	kind, namespace, source string
	// visible limits the changes to what the watcher may see (nil: it sees every namespace).
	visible *watchScope
}

func (f changeFilter) match(c store.Change) bool {
	if c.Type == store.ChangeRelist {
		// It stands for the resources of any kind its source created in one namespace, of
		// which the scope learns the source as it does from each resource's change.
		return (f.visible == nil || f.visible.seesRelist(c)) &&
			(f.namespace == "" || c.Namespace == f.namespace) &&
			(f.source == "" || c.Source == f.source)
	}
	// Scope first: it learns the sources that come into view from every change it sees.
	return (f.visible == nil || f.visible.sees(c)) &&
		(f.kind == "" || strings.EqualFold(c.Kind, f.kind)) &&
		(f.namespace == "" || c.Namespace == f.namespace) &&
		(f.source == "" || c.Source == f.source)
}

// watchScope is what a watcher limited to some namespaces sees of the feed: changes of
// resources in its namespaces, and changes of the sources it sees (store.Scope: those with a
// resource in one of them). The sources are read when the watch starts and grow with the
// changes of resources in scope that name a new one; a source whose last resource in scope
// goes stays visible to the stream until it reconnects. It is used by one goroutine at a
// time: the handler while it catches up, then the hub (under its lock) once subscribed.
type watchScope struct {
	scope   store.Scope
	sources map[string]bool
}

func newWatchScope(sc store.Scope, sources []string) *watchScope {
	v := &watchScope{scope: sc, sources: make(map[string]bool, len(sources))}
	for _, name := range sources {
		v.sources[name] = true
	}
	return v
}

func (v *watchScope) sees(c store.Change) bool {
	if c.Object == "source" {
		return v.sources[c.Source]
	}
	if !v.scope.Contains(c.Namespace) {
		return false
	}
	if c.Source != "" {
		v.sources[c.Source] = true
	}
	return true
}

// seesRelist is sees for a RELIST change: it is seen in its namespace, and its source comes
// into view there as a created resource's would.
func (v *watchScope) seesRelist(c store.Change) bool {
	if !v.scope.Contains(c.Namespace) {
		return false
	}
	v.sources[c.Source] = true
	return true
}

// resumePoint decides where a client resuming after since starts, given the hub's position
// and the oldest and newest retained ids (0, 0 when none are retained); reset is "" when the
// client can be brought up to date from the feed.
func resumePoint(since, hubPos, oldest, latest int64) (pos int64, reset string) {
	newest := max(hubPos, latest)
	switch {
	case since > newest:
		return hubPos, resetUnknown
	case oldest > 0 && since < oldest-1, oldest == 0 && since < newest:
		return hubPos, resetExpired
	case newest-since > maxReplay:
		return hubPos, resetBehind
	}
	return since, ""
}

// parseSince reads the position a client resumes from: Last-Event-ID, which a reconnecting
// EventSource sends and is newer than the URL it reuses, else ?since=.
func parseSince(r *http.Request) (since int64, ok bool, err error) {
	v := r.Header.Get("Last-Event-ID")
	name := "Last-Event-ID"
	if v == "" {
		v, name = r.URL.Query().Get("since"), "since"
	}
	if v == "" {
		return 0, false, nil
	}
	since, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || since < 0 {
		return 0, false, fmt.Errorf("%s must be a change id (a number of 0 or more)", name)
	}
	return since, true, nil
}

func (s *Server) watch(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	f := changeFilter{kind: q.Get("kind"), namespace: q.Get("namespace"), source: q.Get("source")}
	since, resume, err := parseSince(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if sc := scope(r); !sc.All() {
		qctx, cancel := context.WithTimeout(ctx, watchQueryTimeout)
		srcs, err := s.store.VisibleSources(qctx, sc)
		cancel()
		if err != nil {
			s.log.Error("watch: read the visible sources", "err", err)
			writeError(w, http.StatusServiceUnavailable, "database error")
			return
		}
		f.visible = newWatchScope(sc, srcs)
	}
	h := s.hub
	h.mu.Lock()
	full := len(h.subs) >= maxWatchers
	h.mu.Unlock()
	if full {
		w.Header().Set("Retry-After", "10")
		writeError(w, http.StatusServiceUnavailable, "too many watchers on this replica")
		return
	}
	// A stream outlives the server's read timeout, which is for request bodies.
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	if err := h.start(ctx); err != nil {
		if !errors.Is(err, errHubClosed) {
			s.log.Error("watch", "err", err)
		}
		writeError(w, http.StatusServiceUnavailable, "the changes feed is unavailable")
		return
	}
	pos, reset := h.position(), ""
	if resume {
		qctx, cancel := context.WithTimeout(ctx, watchQueryTimeout)
		oldest, err := s.store.OldestChange(qctx)
		var latest int64
		if err == nil {
			latest, err = s.store.LatestChange(qctx)
		}
		cancel()
		if err != nil {
			s.log.Error("watch: read the changes feed", "err", err)
			writeError(w, http.StatusServiceUnavailable, "database error")
			return
		}
		pos, reset = resumePoint(since, pos, oldest, latest)
	}

	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	if r.ProtoMajor == 1 {
		// The write deadlines below stay on the connection: never reuse it.
		hd.Set("Connection", "close")
	}
	w.WriteHeader(http.StatusOK)
	sw := &sseWriter{w: w, rc: http.NewResponseController(w), timeout: h.writeTimeout, id: -1}
	if resume && reset == "" {
		sw.id = since // the client knows its position
	}
	sw.begin()
	fmt.Fprintf(sw, "retry: %d\n\n", watchRetry)
	switch {
	case reset != "":
		sw.reset(pos, reset)
	case !resume:
		sw.position(pos)
	}
	if sw.flush() != nil {
		return
	}

	sub, err := s.catchUp(ctx, sw, f, pos)
	if err != nil {
		if !errors.Is(err, errHubClosed) && ctx.Err() == nil {
			s.log.Warn("watch: catching up failed", "err", err)
		}
		return
	}
	defer h.unsubscribe(sub)
	s.stream(ctx, sw, sub)
}

// catchUp sends what was published after pos from the store, until the hub can take over
// without a gap: it returns the subscription once the hub is at pos or behind it.
func (s *Server) catchUp(ctx context.Context, sw *sseWriter, f changeFilter, pos int64) (*subscription, error) {
	for {
		sub, target, err := s.hub.subscribe(f, pos)
		if err != nil || sub != nil {
			return sub, err
		}
		for pos < target {
			qctx, cancel := context.WithTimeout(ctx, watchQueryTimeout)
			cs, err := s.store.ChangesSince(qctx, pos, watchPage)
			cancel()
			if err != nil {
				return nil, err
			}
			sw.begin()
			var held *store.Change // a RELIST that a following one may stand for (sameReset)
			for _, c := range cs {
				if c.ID > target {
					break
				}
				if f.match(c) {
					if held != nil && !sameReset(*held, c) {
						sw.change(*held)
					}
					held = nil
					if c.Type == store.ChangeRelist {
						held = &c
					} else {
						sw.change(c)
					}
				}
				pos = c.ID
			}
			if held != nil {
				sw.change(*held)
			}
			if len(cs) < watchPage || cs[len(cs)-1].ID > target {
				pos = target // the rest up to target was skipped by the hub (rolled back, or pruned)
			}
			if err := sw.flush(); err != nil {
				return nil, err
			}
		}
	}
}

// stream sends the live feed until the client goes, the server stops, or the client falls
// too far behind.
func (s *Server) stream(ctx context.Context, sw *sseWriter, sub *subscription) {
	heartbeat := time.NewTicker(s.hub.heartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.gone:
			if sub.reason != resetOverflow {
				sw.begin() // room for the response's end
				return     // closed: the client reconnects, to this replica or another
			}
			// Send what was buffered, then say where the client stands.
			sw.begin()
			for range len(sub.ch) {
				sw.changes(<-sub.ch)
			}
			sw.reset(max(sub.pos.Load(), sw.id), resetOverflow)
			_ = sw.flush()
			return
		case b := <-sub.ch:
			sw.begin()
			sw.changes(b)
			sub.queued.Add(-int64(len(b)))
			if sw.flush() != nil {
				return
			}
		case <-heartbeat.C:
			// pos is read before the buffer's length: when the buffer is empty, every
			// matching change up to pos has been written.
			pos := sub.pos.Load()
			sw.begin()
			io.WriteString(sw, ": ping\n\n")
			if len(sub.ch) == 0 && pos > sw.id {
				sw.position(pos)
			}
			if sw.flush() != nil {
				return
			}
		}
	}
}

// sseWriter writes SSE blocks; the first write error sticks and later writes are skipped.
type sseWriter struct {
	w       io.Writer
	rc      *http.ResponseController
	timeout time.Duration
	id      int64 // the last id the client was sent (-1: none)
	err     error
}

// begin bounds the writes that follow: a client that stops reading is cut off rather than
// holding the handler forever.
func (sw *sseWriter) begin() {
	_ = sw.rc.SetWriteDeadline(time.Now().Add(sw.timeout))
}

func (sw *sseWriter) Write(p []byte) (int, error) {
	if sw.err != nil {
		return 0, sw.err
	}
	n, err := sw.w.Write(p)
	sw.err = err
	return n, err
}

func (sw *sseWriter) changes(cs []event) {
	for _, c := range cs {
		if c.ID <= sw.id {
			continue // already sent (a client resuming from a position the hub had not reached)
		}
		_, _ = sw.Write(c.block)
		sw.id = c.ID
	}
}

func (sw *sseWriter) change(c store.Change) {
	if c.ID <= sw.id {
		return // already sent (a client resuming from a position the hub had not reached)
	}
	_, _ = sw.Write(render(c))
	sw.id = c.ID
}

// position moves the client's Last-Event-ID: a `position` event with empty data.
func (sw *sseWriter) position(id int64) {
	fmt.Fprintf(sw, "id: %d\nevent: position\ndata:\n\n", id)
	sw.id = id
}

func (sw *sseWriter) reset(id int64, reason string) {
	_, _ = sw.Write(resetBlock(id, reason))
	sw.id = id
}

func resetBlock(id int64, reason string) []byte {
	msg := map[string]string{
		resetExpired:  "changes after the requested id are no longer retained: list again, then watch on",
		resetUnknown:  "the requested id is not in the changes feed: list again, then watch on",
		resetOverflow: "the client read too slowly and was disconnected: list again, then watch from this id",
		resetBehind:   "the client is further behind than the feed replays: list again, then watch on",
		resetBulk:     "a sync created more resources than the feed sends one by one: list again, then watch on",
	}[reason]
	data, _ := json.Marshal(map[string]string{"reason": reason, "message": msg})
	return fmt.Appendf(nil, "id: %d\nevent: reset\ndata: %s\n\n", id, data)
}

func (sw *sseWriter) flush() error {
	if sw.err != nil {
		return sw.err
	}
	sw.err = sw.rc.Flush()
	return sw.err
}
