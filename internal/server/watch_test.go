package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
)

// watchEnv is a database seeded by setup and a server on it whose hub the test notifies
// itself, as the replica's LISTEN connection would.
type watchEnv struct {
	st   *store.Store
	srv  *Server
	url  string
	n    int // queues declared by source main
	revs int // revisions applied since the seed
}

func newWatchEnv(t *testing.T, n int, tune func(*Hub)) *watchEnv {
	t.Helper()
	return newWatchEnvOn(t, n, tune, nil)
}

// newWatchEnvOn is newWatchEnv with the server's listener wrapped.
func newWatchEnvOn(t *testing.T, n int, tune func(*Hub), wrap func(net.Listener) net.Listener) *watchEnv {
	t.Helper()
	_, st := setup(t, n)
	srv := New(st, Options{Replica: "test"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	// Only notifications deliver promptly: a test that forgets one fails instead of passing
	// on the fallback poll.
	srv.hub.fallback = time.Minute
	if tune != nil {
		tune(srv.hub)
	}
	hs := httptest.NewUnstartedServer(srv.Handler())
	if wrap != nil {
		hs.Listener = wrap(hs.Listener)
	}
	hs.Start()
	// Stop ends the streams, which the httptest server's Close would otherwise wait for.
	t.Cleanup(func() { srv.Stop(); hs.Close() })
	return &watchEnv{st: st, srv: srv, url: hs.URL, n: n}
}

// manifests renders source main's n queues (as setup declares them) with sizes shifted by k.
func manifests(t *testing.T, n, k int, keep func(i int) bool) *manifest.Set {
	t.Helper()
	var b strings.Builder
	b.WriteString(typeDoc)
	for i := 0; i < n; i++ {
		if keep != nil && !keep(i) {
			continue
		}
		ns, team := "alpha", "red"
		if i%2 == 1 {
			ns, team = "beta", "blue"
		}
		fmt.Fprintf(&b, "---\napiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: q%03d, namespace: %s, labels: {team: %s, idx: \"%d\"}}\nspec: {size: %d}\n", i, ns, team, i, i+k*10000)
	}
	set, err := manifest.NewLoader().Load([]sources.File{{Path: "all.yaml", Data: []byte(b.String())}}, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// bump changes every queue's spec in one revision: n resource changes and one source change.
func (e *watchEnv) bump(t *testing.T) {
	t.Helper()
	e.revs++
	if _, err := e.st.ApplyRevision(context.Background(), store.ApplyParams{Source: "main", Revision: fmt.Sprintf("rev%d", e.revs),
		Set: manifests(t, e.n, e.revs, nil), Prune: true}); err != nil {
		t.Fatal(err)
	}
	e.srv.NotifyChanges()
}

// reconcile claims every due resource, starts its call and completes it as a worker would:
// Ready, or gone when it was being deleted.
func (e *watchEnv) reconcile(t *testing.T) int {
	t.Helper()
	ctx := context.Background()
	claimed, err := e.st.Claim(ctx, "worker", 1000, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	starts := make([]store.Start, len(claimed))
	for i, c := range claimed {
		starts[i] = store.Start{ID: c.ID, Token: c.LeaseToken, Generation: c.Generation, Deleting: c.Deleting, Namespace: c.Namespace, Kind: c.Kind, Name: c.Name, Source: c.Source}
	}
	if _, err := e.st.Started(ctx, starts); err != nil {
		t.Fatal(err)
	}
	items := make([]store.Completion, 0, len(claimed))
	for _, c := range claimed {
		items = append(items, store.Completion{ID: c.ID, Token: c.LeaseToken, Namespace: c.Namespace, Kind: c.Kind, Name: c.Name, Source: c.Source,
			Fn: func(cur store.Current) store.Update {
				now := time.Now()
				h := &store.HistoryEntry{UID: c.UID, Namespace: c.Namespace, Kind: c.Kind, Name: c.Name, Generation: cur.Generation,
					Revision: c.Revision, Operation: "reconcile", Trigger: "created", Result: "Succeeded", Replica: "test",
					StartedAt: now.Add(-time.Millisecond), FinishedAt: now, Outputs: json.RawMessage(`{"url":"https://mq.example.com/q"}`)}
				if cur.Deleting {
					h.Operation, h.Trigger, h.Outputs = "delete", "deleted", nil
					return store.Update{Remove: true, History: h}
				}
				phase, conds, observed := status.Apply(cur.Conditions, cur.ObservedGeneration,
					status.Outcome{Generation: cur.Generation, CurrentGeneration: cur.Generation, Done: true}, now)
				return store.Update{Phase: phase, ObservedGeneration: observed, Conditions: conds, History: h,
					Outputs: map[string]any{"url": "https://mq.example.com/" + c.Name}}
			}})
	}
	lost, err := e.st.CompleteBatch(ctx, items)
	if err != nil || len(lost) > 0 {
		t.Fatalf("complete: lost %v, %v", lost, err)
	}
	e.srv.NotifyChanges()
	return len(claimed)
}

// failSync records a failed sync of source: exactly one change.
func (e *watchEnv) failSync(t *testing.T, source string) {
	t.Helper()
	e.revs++
	if err := e.st.RecordSyncFailure(context.Background(), store.SyncFailure{Source: source, Reason: "FetchFailed",
		Message: fmt.Sprintf("fetch failed (%d)", e.revs)}); err != nil {
		t.Fatal(err)
	}
	e.srv.NotifyChanges()
}

func (e *watchEnv) latest(t *testing.T) int64 {
	t.Helper()
	id, err := e.st.LatestChange(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// feed returns every retained change after id.
func (e *watchEnv) feed(t *testing.T, after int64) []store.Change {
	t.Helper()
	var out []store.Change
	for {
		cs, err := e.st.ChangesSince(context.Background(), after, 10000)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) == 0 {
			return out
		}
		out = append(out, cs...)
		after = cs[len(cs)-1].ID
	}
}

func TestWatchDeliversChanges(t *testing.T) {
	t.Parallel()
	e := newWatchEnv(t, 4, nil)
	start := e.latest(t)
	c := e.watch(t, "", nil)
	// A new watcher is told where it stands, so that it can resume from there.
	if b := c.next(t, 5*time.Second, false); b.ID != start || b.Event != "position" || b.Data != "" {
		t.Fatalf("first position %+v, want id %d", b, start)
	}

	e.bump(t)
	got := c.changes(t, 5, 5*time.Second)
	sameIDs(t, "bump", got, e.feed(t, start))
	for i, ch := range got[:4] {
		if ch.Object != "resource" || ch.Type != store.ChangeModified || ch.Kind != "Queue" || ch.Generation != 2 ||
			ch.Phase != "Pending" || ch.Source != "main" || ch.At.IsZero() {
			t.Errorf("change %d: %+v", i, ch)
		}
	}
	if src := got[4]; src.Object != "source" || src.Name != "main" || src.Source != "main" {
		t.Errorf("source change %+v", src)
	}

	// Completions: Reconciling when their calls start, then Ready.
	if n := e.reconcile(t); n != 4 {
		t.Fatalf("reconciled %d", n)
	}
	got = c.changes(t, 8, 5*time.Second)
	for i, ch := range got {
		want := "Reconciling"
		if i >= 4 {
			want = "Ready"
		}
		if ch.Phase != want || ch.Type != store.ChangeModified {
			t.Errorf("completion change %d: %+v, want phase %s", i, ch, want)
		}
	}

	// Removing two manifests marks them for deletion; completing the deletes removes them.
	before := e.latest(t)
	if _, err := e.st.ApplyRevision(context.Background(), store.ApplyParams{Source: "main", Revision: "shrink",
		Set: manifests(t, 4, e.revs, func(i int) bool { return i < 2 }), Prune: true}); err != nil {
		t.Fatal(err)
	}
	e.srv.NotifyChanges()
	got = c.changes(t, 3, 5*time.Second)
	sameIDs(t, "shrink", got, e.feed(t, before))
	for _, ch := range got[:2] {
		if ch.Phase != "Deleting" {
			t.Errorf("deletion %+v", ch)
		}
	}
	e.reconcile(t)
	// Two deletions. The deletion request set phase Deleting with Reconciling=True
	// DeletionRequested (status.DeletionRequested); each start says Deleting (the delete runs),
	// a change in phase Deleting; then each row goes.
	got = c.changes(t, 4, 5*time.Second)
	for i, ch := range got {
		wantType, wantPhase := store.ChangeModified, "Deleting"
		if i >= 2 {
			wantType, wantPhase = store.ChangeDeleted, ""
		}
		if ch.Type != wantType || ch.Phase != wantPhase || (ch.Name != "q002" && ch.Name != "q003") {
			t.Errorf("delete change %d: %+v, want %s in phase %q", i, ch, wantType, wantPhase)
		}
	}
}

func TestWatchResumesWithoutGapsOrDuplicates(t *testing.T) {
	t.Parallel()
	e := newWatchEnv(t, 3, nil)
	start := e.latest(t)
	c1 := e.watch(t, "", nil)
	e.bump(t)
	seen := c1.changes(t, 4, 5*time.Second)
	c1.cancel()
	// The client processed two changes before it lost the connection.
	last := seen[1].ID

	e.bump(t) // missed while away
	e.reconcile(t)
	missed := e.feed(t, last)
	if len(missed) != 2+4+6 {
		t.Fatalf("missed %d changes", len(missed))
	}

	// Both ways to resume; the header, which a reconnecting EventSource sends, wins over the
	// query it reuses.
	c2 := e.watch(t, "", http.Header{"Last-Event-ID": {strconv.FormatInt(last, 10)}})
	c3 := e.watch(t, "since="+strconv.FormatInt(start, 10), http.Header{"Last-Event-ID": {strconv.FormatInt(last, 10)}})
	c4 := e.watch(t, "since="+strconv.FormatInt(last, 10), nil)
	for i, c := range []*sseClient{c2, c3, c4} {
		sameIDs(t, fmt.Sprintf("resumed client %d", i+2), c.changes(t, len(missed), 5*time.Second), missed)
	}

	// Then live changes follow on, with nothing repeated in between.
	end := e.latest(t)
	e.bump(t)
	live := e.feed(t, end)
	for i, c := range []*sseClient{c2, c3, c4} {
		sameIDs(t, fmt.Sprintf("live after resuming, client %d", i+2), c.changes(t, len(live), 5*time.Second), live)
	}
}

// A backlog longer than one page, while changes keep coming: every change once, in order.
func TestWatchResumesLongBacklogWhileChangesFlow(t *testing.T) {
	t.Parallel()
	e := newWatchEnv(t, 1200, nil)
	c := e.watch(t, "since=0", nil)
	// The server is still sending the backlog while these commit.
	e.bump(t)
	e.bump(t)
	want := e.feed(t, 0)
	if len(want) != 3*1201 {
		t.Fatalf("feed has %d changes", len(want))
	}
	sameIDs(t, "since=0", c.changes(t, len(want), 30*time.Second), want)
}

func TestWatchFilters(t *testing.T) {
	t.Parallel()
	e := newWatchEnv(t, 4, func(h *Hub) { h.heartbeat = 20 * time.Millisecond })
	ctx := context.Background()
	if err := e.st.RegisterSource(ctx, store.SourceConfig{Name: "other", URL: "file:///other", Branch: "main"}); err != nil {
		t.Fatal(err)
	}
	applyOther := func(size int) {
		doc := strings.ReplaceAll(typeDoc, "Queue", "Topic") +
			fmt.Sprintf("---\napiVersion: mq.example.com/v1\nkind: Topic\nmetadata: {name: t000, namespace: gamma}\nspec: {size: %d}\n", size)
		set, err := manifest.NewLoader().Load([]sources.File{{Path: "o.yaml", Data: []byte(doc)}}, manifest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.st.ApplyRevision(ctx, store.ApplyParams{Source: "other", Revision: fmt.Sprintf("o%d", size), Set: set, Prune: true}); err != nil {
			t.Fatal(err)
		}
		e.srv.NotifyChanges()
	}
	applyOther(1)

	type watcher struct {
		query string
		c     *sseClient
		want  func(store.Change) bool
	}
	ws := []*watcher{
		{query: "kind=qUEUE", want: func(c store.Change) bool { return c.Kind == "Queue" }},
		{query: "kind=topic", want: func(c store.Change) bool { return c.Kind == "Topic" }},
		{query: "namespace=alpha", want: func(c store.Change) bool { return c.Namespace == "alpha" }},
		{query: "source=main", want: func(c store.Change) bool { return c.Source == "main" }},
		{query: "source=other", want: func(c store.Change) bool { return c.Source == "other" }},
		{query: "namespace=gamma&kind=TOPIC&source=other", want: func(c store.Change) bool { return c.Namespace == "gamma" }},
		{query: "namespace=gamma&kind=queue", want: func(store.Change) bool { return false }},
		{query: "kind=Nope", want: func(store.Change) bool { return false }},
	}
	start := e.latest(t)
	for _, w := range ws {
		w.c = e.watch(t, w.query, nil)
	}
	e.bump(t)
	applyOther(2)
	e.failSync(t, "other")
	all := e.feed(t, start)
	if len(all) != 5+2+1 {
		t.Fatalf("feed has %d changes", len(all))
	}
	end := all[len(all)-1].ID
	for _, w := range ws {
		var want []store.Change
		for _, c := range all {
			if w.want(c) {
				want = append(want, c)
			}
		}
		sameIDs(t, w.query, w.c.changes(t, len(want), 5*time.Second), want)
		// Nothing more, and the heartbeats bring the position to the end of the feed.
		w.c.quietUntil(t, end, 5*time.Second)
	}

	// A filtered watcher that resumes from its position has missed nothing: no reset.
	nope := ws[len(ws)-1].c
	nope.cancel()
	again := e.watch(t, "kind=Nope", http.Header{"Last-Event-ID": {strconv.FormatInt(nope.pos, 10)}})
	e.failSync(t, "main")
	again.quietUntil(t, e.latest(t), 5*time.Second)
}

func TestWatchResetsWhenChangesWerePruned(t *testing.T) {
	t.Parallel()
	e := newWatchEnv(t, 4, nil)
	e.bump(t)
	e.bump(t)
	latest := e.latest(t) // 15
	// Retention deletes by age (1 h); here by id.
	const pruned = 10
	if _, err := e.st.Pool().Exec(context.Background(), "DELETE FROM changes WHERE id <= $1", pruned); err != nil {
		t.Fatal(err)
	}
	resumeFrom := func(id string) *sseClient {
		return e.watch(t, "", http.Header{"Last-Event-ID": {id}})
	}
	for _, tc := range []struct {
		from   string
		reason string
	}{{"5", resetExpired}, {"0", resetExpired}, {"999999", resetUnknown}} {
		c := resumeFrom(tc.from)
		b := c.next(t, 5*time.Second, false)
		var data struct{ Reason, Message string }
		if err := json.Unmarshal([]byte(b.Data), &data); err != nil || b.Event != "reset" || data.Reason != tc.reason || data.Message == "" {
			t.Fatalf("from %s: first block %+v, want a reset (%s)", tc.from, b, tc.reason)
		}
		// The reset says where the stream stands: the client re-lists, then carries on.
		if b.ID != latest {
			t.Errorf("from %s: reset at %d, want %d", tc.from, b.ID, latest)
		}
		c.cancel()
	}

	// Right at the edge of what is retained: no reset, the backlog.
	c := resumeFrom(strconv.Itoa(pruned))
	sameIDs(t, "from the oldest retained", c.changes(t, int(latest-pruned), 5*time.Second), e.feed(t, pruned))

	for _, q := range []string{"since=abc", "since=-1"} {
		var body map[string]string
		if code := get(t, e.url+"/api/v1/watch?"+q, &body); code != http.StatusBadRequest || body["error"] == "" {
			t.Errorf("%s: %d %v", q, code, body)
		}
	}
}

// Ids are taken from a sequence at insert and become visible at commit: the hub publishes in
// id order only, waiting for a missing id, or skipping it once it is clearly rolled back.
func TestWatchOrdersOutOfOrderCommits(t *testing.T) {
	t.Parallel()
	e := newWatchEnv(t, 1, func(h *Hub) { h.gapGrace = 300 * time.Millisecond })
	ctx := context.Background()
	c := e.watch(t, "", nil)
	c.next(t, 5*time.Second, false)

	begin := func() (pgx.Tx, int64) {
		tx, err := e.st.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		if err := tx.QueryRow(ctx, `INSERT INTO changes (object, type, name, source) VALUES ('source', 'MODIFIED', 'main', 'main') RETURNING id`).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return tx, id
	}

	// A transaction that commits after a later id did.
	tx, slow := begin()
	e.failSync(t, "main")
	waitPolls(t, e.srv.hub)
	if pos := e.srv.hub.position(); pos >= slow {
		t.Fatalf("hub moved to %d past uncommitted %d", pos, slow)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	e.srv.NotifyChanges()
	if got := c.changes(t, 2, 5*time.Second); got[0].ID != slow || got[1].ID != slow+1 {
		t.Fatalf("got %v, want %d, %d", ids(got), slow, slow+1)
	}

	// A transaction that rolls back: the gap is skipped after the grace period.
	tx, gone := begin()
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	e.failSync(t, "main")
	if got := c.changes(t, 1, 5*time.Second); got[0].ID != gone+1 {
		t.Fatalf("got %v, want %d", ids(got), gone+1)
	}
	if waited := time.Since(t0); waited < 250*time.Millisecond {
		t.Errorf("published %s after the gap appeared, before its grace period", waited)
	}
}

func waitPolls(t *testing.T, h *Hub) {
	t.Helper()
	p0 := h.polls.Load()
	h.Notify()
	deadline := time.Now().Add(5 * time.Second)
	for h.polls.Load() <= p0 {
		if time.Now().After(deadline) {
			t.Fatal("the hub did not read the feed")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWatchSlowClientsAreCutOffWithoutSlowingOthers(t *testing.T) {
	t.Parallel()
	e := newWatchEnvOn(t, 1000, func(h *Hub) {
		h.maxQueued = 2500
		h.writeTimeout = 500 * time.Millisecond
	}, smallSendBuffers)
	ctx := context.Background()
	normal := e.watch(t, "", nil)
	start := normal.next(t, 5*time.Second, false).ID

	// A client that never reads its socket…
	stuck, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stuck.Close() })
	_ = stuck.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(stuck, "GET /api/v1/watch HTTP/1.1\r\nHost: test\r\n\r\n")
	// …and a subscriber that never takes from its buffer.
	if err := e.srv.hub.start(ctx); err != nil {
		t.Fatal(err)
	}
	lazy, _, err := e.srv.hub.subscribe(changeFilter{}, e.srv.hub.position())
	if err != nil || lazy == nil {
		t.Fatalf("subscribe: %v", err)
	}
	waitSubscribers(t, e.srv.hub, 3)

	for range 3 {
		e.bump(t)
	}
	end := e.latest(t)
	t0 := time.Now()
	got := normal.changes(t, int(end-start), 30*time.Second)
	sameIDs(t, "normal client", got, e.feed(t, start))
	t.Logf("%d changes; the normal client had them all %s after the last commit", len(got), time.Since(t0))

	select {
	case <-lazy.gone:
		if lazy.reason != resetOverflow {
			t.Errorf("lazy subscriber ended: %s", lazy.reason)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the subscriber that never reads is still subscribed")
	}
	// The stuck client is disconnected: its reads end once the server gave up writing.
	_ = stuck.SetReadDeadline(time.Now().Add(20 * time.Second))
	n, err := io.Copy(io.Discard, stuck)
	if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the stuck client is still connected after reading %d bytes", n)
	}
	t.Logf("the stuck client was cut off after %d bytes", n)
	waitSubscribers(t, e.srv.hub, 1)

	// The normal client goes on as before.
	e.failSync(t, "main")
	if got := normal.changes(t, 1, 5*time.Second); got[0].ID != end+1 {
		t.Fatalf("after the flood: %v", ids(got))
	}
}

// smallSendBuffers gives the server's connections small socket buffers, as a slow network
// would: a client that stops reading fills them after kilobytes, not megabytes.
func smallSendBuffers(l net.Listener) net.Listener { return smallBufListener{l} }

type smallBufListener struct{ net.Listener }

func (l smallBufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(8 << 10)
	}
	return c, err
}

func waitSubscribers(t *testing.T, h *Hub, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.mu.Lock()
		got := len(h.subs)
		h.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d subscribers, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWatchManyIdleWatchersAndStop(t *testing.T) {
	t.Parallel()
	e := newWatchEnv(t, 2, nil)
	const n = 200
	e.srv.watchers.max = n // one client (loopback) holds them all
	clients := make([]*sseClient, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, resp, err := e.dial(t, "", nil)
			if err == nil && resp.StatusCode != http.StatusOK {
				err = errors.New(resp.Status)
			}
			if err != nil {
				mu.Lock()
				failed = append(failed, err.Error())
				mu.Unlock()
				return
			}
			go c.read(resp.Body)
			clients[i] = c
		}()
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d watchers refused: %v", len(failed), failed[0])
	}
	waitSubscribers(t, e.srv.hub, n)
	before := e.latest(t)
	polls := e.srv.hub.polls.Load()
	e.failSync(t, "main")
	for i, c := range clients {
		got := c.changes(t, 1, 10*time.Second)
		if got[0].ID != before+1 || got[0].Object != "source" {
			t.Fatalf("watcher %d got %+v", i, got[0])
		}
	}
	if p := e.srv.hub.polls.Load() - polls; p > 3 {
		t.Errorf("%d reads of the feed for one change and %d watchers", p, n)
	}

	// Stop ends every stream at once, and refuses new ones.
	stopped := make(chan struct{})
	go func() { e.srv.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop hangs on open watchers")
	}
	for i, c := range clients {
		select {
		case <-c.ended:
		case <-time.After(5 * time.Second):
			t.Fatalf("watcher %d still open after Stop", i)
		}
	}
	var body map[string]string
	if code := get(t, e.url+"/api/v1/watch", &body); code != http.StatusServiceUnavailable {
		t.Errorf("watch after Stop: %d %v", code, body)
	}
}

func TestResumePoint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		since, hub, oldest, latest int64
		pos                        int64
		reset                      string
	}{
		{since: 10, hub: 20, oldest: 5, latest: 20, pos: 10},
		{since: 4, hub: 20, oldest: 5, latest: 20, pos: 4}, // oldest-1: nothing missing
		{since: 3, hub: 20, oldest: 5, latest: 20, pos: 20, reset: resetExpired},
		{since: 0, hub: 20, oldest: 1, latest: 20, pos: 0},   // everything retained
		{since: 22, hub: 20, oldest: 5, latest: 22, pos: 22}, // ahead of this hub, from another replica
		{since: 23, hub: 20, oldest: 5, latest: 22, pos: 20, reset: resetUnknown},
		{since: 20, hub: 20, oldest: 0, latest: 0, pos: 20}, // all pruned, but the hub saw 20: nothing missing
		{since: 12, hub: 20, oldest: 0, latest: 0, pos: 20, reset: resetExpired},
		{since: 0, hub: 0, oldest: 0, latest: 0, pos: 0}, // a new database
		{since: 7, hub: 0, oldest: 0, latest: 0, pos: 0, reset: resetUnknown},
	} {
		pos, reset := resumePoint(tc.since, tc.hub, tc.oldest, tc.latest)
		if pos != tc.pos || reset != tc.reset {
			t.Errorf("%+v: got %d %q", tc, pos, reset)
		}
	}
}

func TestHubPublishesInIDOrder(t *testing.T) {
	t.Parallel()
	h := NewHub(nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	h.last = 10
	cs := func(ids ...int64) []store.Change {
		out := make([]store.Change, len(ids))
		for i, id := range ids {
			out[i] = store.Change{ID: id}
		}
		return out
	}
	t0 := time.Now()
	for _, tc := range []struct {
		batch []store.Change
		at    time.Duration
		n     int
		wait  bool
	}{
		{cs(11, 12, 14, 15), 0, 2, true},   // 13 missing: hold back
		{cs(14, 15), time.Second, 0, true}, // still missing, within the grace period
		{cs(13, 14, 15), 2 * time.Second, 3, false},
		{cs(17), 3 * time.Second, 0, true},      // 16 missing
		{cs(17, 18), 9 * time.Second, 2, false}, // given up on 16 (rolled back)
	} {
		n, wait := h.inOrder(tc.batch, t0.Add(tc.at))
		if n != tc.n || (wait > 0) != tc.wait {
			t.Fatalf("batch %v at +%s: %d publishable, wait %s", ids(tc.batch), tc.at, n, wait)
		}
		if n > 0 {
			h.last = tc.batch[n-1].ID
		}
	}
}

// TestHubStartHoldsNoLockAcrossItsQuery: while the hub's first read of the feed waits on the
// database (the changes table locked), the hub's lock stays free: a watcher of a started hub
// subscribes, and the watcher count of the request path is read, without waiting for it.
func TestHubStartHoldsNoLockAcrossItsQuery(t *testing.T) {
	t.Parallel()
	_, st := setup(t, 1)
	ctx := context.Background()
	h := NewHub(st, slog.New(slog.DiscardHandler))
	t.Cleanup(h.Close)
	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "LOCK TABLE changes IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() { started <- h.start(ctx) }()
	// The start is waiting on the lock once PostgreSQL shows its query blocked.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var waiting int
		if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FROM changes%'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hub's start never waited on the locked table")
		}
	}
	free := make(chan struct{})
	go func() {
		h.mu.Lock()
		_ = len(h.subs)
		h.mu.Unlock()
		close(free)
	}()
	select {
	case <-free:
	case <-time.After(10 * time.Second):
		t.Fatal("the hub's lock is held while its start waits on the database")
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-started; err != nil {
		t.Fatalf("start after the table was unlocked: %v", err)
	}
}

// A revision that creates more resources than ApplyParams.BulkCreate reaches watchers as one
// reset (reason bulk) at its change's id instead of a change per resource, whatever their
// kind filter, live or catching up from the store; the reset names no source, and a watcher
// of another source or namespace sees nothing of it (scoped watchers:
// TestAuthorizationWatchBulkCreation).
func TestWatchBulkCreationResets(t *testing.T) {
	t.Parallel()
	e := newWatchEnv(t, 2, func(h *Hub) { h.heartbeat = 20 * time.Millisecond })
	ctx := context.Background()
	if err := e.st.RegisterSource(ctx, store.SourceConfig{Name: "big", URL: "file:///big", Branch: "main"}); err != nil {
		t.Fatal(err)
	}
	start := e.latest(t)
	queries := []string{"", "kind=topic", "namespace=gamma", "source=big"}
	var live []*sseClient
	for _, q := range queries {
		live = append(live, e.watch(t, q, nil))
	}
	other := e.watch(t, "source=main", nil)
	otherNS := e.watch(t, "namespace=epsilon", nil)
	delta := e.watch(t, "namespace=delta", nil)

	doc := strings.ReplaceAll(typeDoc, "Queue", "Topic")
	for i := range 3 {
		doc += fmt.Sprintf("---\napiVersion: mq.example.com/v1\nkind: Topic\nmetadata: {name: t%03d, namespace: gamma}\nspec: {size: %d}\n", i, i)
	}
	doc += "---\napiVersion: mq.example.com/v1\nkind: Topic\nmetadata: {name: d000, namespace: delta}\nspec: {size: 1}\n"
	set, err := manifest.NewLoader().Load([]sources.File{{Path: "t.yaml", Data: []byte(doc)}}, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.st.ApplyRevision(ctx, store.ApplyParams{Source: "big", Revision: "b1", Set: set, Prune: true, BulkCreate: 2})
	if err != nil || res.Created != 4 {
		t.Fatalf("apply: %+v, %v", res, err)
	}
	e.srv.NotifyChanges()
	feed := e.feed(t, start)
	// One RELIST per namespace, delta's first; a watcher that sees both gets one reset, at
	// gamma's (the later) id.
	var relist, relistDelta int64
	for _, c := range feed {
		if c.Object == "resource" {
			t.Errorf("a change per resource: %+v", c)
		}
		if c.Type == store.ChangeRelist && c.Source == "big" {
			relist = c.ID
			if c.Namespace == "delta" {
				relistDelta = c.ID
			}
		}
	}
	if relist == 0 || relistDelta == 0 || relistDelta >= relist {
		t.Fatalf("no RELIST change in %+v", feed)
	}
	isResetAt := func(name string, c *sseClient, relist int64) {
		t.Helper()
		b := c.next(t, 5*time.Second, true)
		var data struct{ Reason, Message string }
		if err := json.Unmarshal([]byte(b.Data), &data); err != nil || b.Event != "reset" || b.ID != relist ||
			data.Reason != resetBulk || data.Message == "" || strings.Contains(b.Data, "big") {
			t.Errorf("%s: first event %+v, want a bulk reset at %d naming no source", name, b, relist)
		}
	}
	isReset := func(name string, c *sseClient) { t.Helper(); isResetAt(name, c, relist) }
	isResetAt("live namespace=delta", delta, relistDelta)
	isResetAt("resumed namespace=delta", e.watch(t, "namespace=delta", http.Header{"Last-Event-ID": {strconv.FormatInt(start, 10)}}), relistDelta)
	for i, c := range live {
		isReset("live "+queries[i], c)
	}
	other.quietUntil(t, feed[len(feed)-1].ID, 5*time.Second)
	otherNS.quietUntil(t, feed[len(feed)-1].ID, 5*time.Second)
	for _, q := range queries {
		isReset("resumed "+q, e.watch(t, q, http.Header{"Last-Event-ID": {strconv.FormatInt(start, 10)}}))
	}
}
