package notifier

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/lease"
	"github.com/trueup-dev/trueup/internal/metrics"
	"github.com/trueup-dev/trueup/internal/notify"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// fakeSlack records the bodies it accepts; fail answers 500 to the first fail posts.
type fakeSlack struct {
	mu     sync.Mutex
	fail   int
	posts  int
	bodies []map[string]any
	header http.Header
	onPost func() // called with each accepted post
}

func (f *fakeSlack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.posts++
	body, _ := io.ReadAll(r.Body)
	if f.posts <= f.fail {
		w.Header().Set("Retry-After", "0")
		http.Error(w, "no", http.StatusInternalServerError)
		return
	}
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	m["_raw"] = string(body)
	f.bodies = append(f.bodies, m)
	f.header = r.Header.Clone()
	if f.onPost != nil {
		f.onPost()
	}
}

func (f *fakeSlack) got() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.bodies...)
}

type bundle struct {
	st    *store.Store
	slack *fakeSlack
	srv   *httptest.Server
	m     *metrics.Metrics
}

func setup(t *testing.T) bundle {
	t.Helper()
	st, err := store.Open(context.Background(), pgtest.NewDatabase(t, store.MigrateURL), store.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	f := &fakeSlack{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return bundle{st: st, slack: f, srv: srv, m: metrics.New(metrics.Options{})}
}

func (b bundle) sender(t *testing.T, typ, secret string, mut func(*config.Notifications)) *Sender {
	t.Helper()
	cfg := config.Notifications{
		Providers:   []config.NotifyProvider{{Name: "ops", Type: typ, URL: b.srv.URL, Secret: secret, Timeout: 5 * time.Second}},
		Rules:       []config.NotifyRule{{Name: "all", Providers: []string{"ops"}}},
		MaxAttempts: 5, GroupWindow: -1, RateLimit: -1,
	}
	if mut != nil {
		mut(&cfg)
	}
	s, err := New(b.st, cfg, Options{Replica: "r1", ExternalURL: "https://trueup.example.com", Metrics: b.m}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (b bundle) add(t *testing.T, entries ...store.OutboxEntry) {
	t.Helper()
	if err := b.st.AddOutbox(context.Background(), entries); err != nil {
		t.Fatal(err)
	}
}

// due makes every pending entry due now (instead of waiting out the backoff).
func (b bundle) due(t *testing.T) {
	t.Helper()
	if _, err := b.st.Pool().Exec(context.Background(), "UPDATE notification_outbox SET next_attempt_at = now(), created_at = created_at - interval '1 hour'"); err != nil {
		t.Fatal(err)
	}
}

func (b bundle) scrape(t *testing.T) string {
	t.Helper()
	rec := httptest.NewRecorder()
	b.m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

func failed(name string) store.OutboxEntry {
	return store.OutboxEntry{Event: "Failed", Namespace: "production", Kind: "DatabaseCluster", Name: name, Source: "infra",
		Revision: "abc123", Phase: "Failed", Message: "disk full"}
}

func TestRetriesThenDelivers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.slack.fail = 3
	s := b.sender(t, "slack", "", nil)
	b.add(t, failed("main"))
	ctx := context.Background()
	for range 5 {
		if err := s.Once(ctx); err != nil {
			t.Fatal(err)
		}
		b.due(t)
	}
	got := b.slack.got()
	if len(got) != 1 || !strings.Contains(got[0]["text"].(string), "Failed: production/DatabaseCluster/main") {
		t.Fatalf("delivered %v", got)
	}
	sent, err := b.st.ListOutbox(ctx, store.OutboxSent, 0)
	if err != nil || len(sent) != 1 || sent[0].Attempts != 3 {
		t.Fatalf("sent: %+v, %v", sent, err)
	}
	m := b.scrape(t)
	for _, want := range []string{`trueup_notification_retries_total{provider="ops"} 3`, `trueup_notifications_total{provider="ops",result="sent"} 1`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestDeadLetter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.slack.fail = 100
	s := b.sender(t, "slack", "", func(c *config.Notifications) { c.MaxAttempts = 2 })
	b.add(t, failed("main"))
	ctx := context.Background()
	for range 4 {
		if err := s.Once(ctx); err != nil {
			t.Fatal(err)
		}
		b.due(t)
	}
	dead, err := b.st.ListOutbox(ctx, store.OutboxDead, 0)
	if err != nil || len(dead) != 1 || dead[0].Attempts != 2 || !strings.Contains(dead[0].LastError, "500") {
		t.Fatalf("dead: %+v, %v", dead, err)
	}
	if b.slack.posts != 2 {
		t.Errorf("posts = %d, want 2", b.slack.posts)
	}
}

// TestProviderSeriesAtZero: a configured provider's delivery series exist at 0 before its
// first delivery, so that an alert on increase() sees the first dead letter.
func TestProviderSeriesAtZero(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.sender(t, "slack", "", nil)
	got := b.scrape(t)
	for _, result := range []string{"sent", "failed", "dead", "suppressed"} {
		if want := `trueup_notifications_total{provider="ops",result="` + result + `"} 0`; !strings.Contains(got, want) {
			t.Errorf("no %s in\n%s", want, got)
		}
	}
	if want := `trueup_notification_retries_total{provider="ops"} 0`; !strings.Contains(got, want) {
		t.Errorf("no %s", want)
	}
}

func TestBurstGrouped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.sender(t, "slack", "", func(c *config.Notifications) { c.GroupWindow = time.Second })
	var burst []store.OutboxEntry
	for i := range 300 {
		burst = append(burst, failed("db-"+strings.Repeat("x", i%7)+string(rune('a'+i%26))))
	}
	b.add(t, burst...)
	ctx := context.Background()
	// Young entries wait for the window: nothing goes out yet.
	if err := s.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(b.slack.got()); n != 0 {
		t.Fatalf("%d messages sent inside the window", n)
	}
	b.due(t)
	if err := s.Once(ctx); err != nil {
		t.Fatal(err)
	}
	got := b.slack.got()
	if len(got) != 1 || !strings.Contains(got[0]["text"].(string), "300 resources failed on revision abc123") {
		t.Fatalf("messages: %v", got)
	}
}

func TestFlappingRateLimited(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.sender(t, "slack", "", func(c *config.Notifications) { c.RateLimit = time.Hour })
	ctx := context.Background()
	for range 3 {
		b.add(t, failed("flappy"))
		if err := s.Once(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(b.slack.got()); n != 1 {
		t.Fatalf("%d messages, want 1", n)
	}
	s.trim(ctx)
	if len(s.limits) != 1 {
		t.Errorf("trim forgot a limiter still in its interval (%d left)", len(s.limits))
	}
	if m := b.scrape(t); !strings.Contains(m, `trueup_notifications_total{provider="ops",result="suppressed"} 2`) {
		t.Errorf("suppressed not counted:\n%s", m)
	}
}

// A new plan waiting for approval is told within the rate limit's interval (the message names
// the plan); the same request twice is told once.
func TestApprovalRequiredOfANewPlanNotRateLimited(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.sender(t, "slack", "", func(c *config.Notifications) { c.RateLimit = time.Hour })
	ctx := context.Background()
	for _, plan := range []string{"aaaaaaaaaaaa", "aaaaaaaaaaaa", "bbbbbbbbbbbb"} {
		b.add(t, store.OutboxEntry{Event: "ApprovalRequired", Namespace: "production", Kind: "DatabaseCluster", Name: "main", Source: "infra",
			Revision: "abc123", Phase: "Pending", Message: "needs a DBA — plan " + plan + ": 1 to replace"})
		if err := s.Once(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := b.slack.got()
	if len(got) != 2 || !strings.Contains(got[1]["text"].(string), "bbbbbbbbbbbb") {
		t.Fatalf("messages: %v", got)
	}
}

func TestWebhookSignedPayload(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.sender(t, "webhook", "hook-secret", nil)
	b.add(t, failed("main"))
	if err := s.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := b.slack.got()
	if len(got) != 1 {
		t.Fatalf("messages: %v", got)
	}
	p := got[0]
	res, _ := p["resource"].(map[string]any)
	if p["event"] != "Failed" || p["phase"] != "Failed" || p["message"] != "disk full" || p["revision"] != "abc123" ||
		p["url"] != "https://trueup.example.com/resources/production/DatabaseCluster/main" || res["name"] != "main" {
		t.Errorf("payload %v", p)
	}
	if sig := b.slack.header.Get("X-Trueup-Signature-256"); sig != Sign([]byte("hook-secret"), []byte(p["_raw"].(string))) {
		t.Errorf("signature %q does not match the body", sig)
	}
}

func TestTeamsCard(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.sender(t, "msteams", "", nil)
	b.add(t, failed("main"))
	if err := s.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := b.slack.got()
	if len(got) != 1 || got[0]["@type"] != "MessageCard" || got[0]["title"] != "Failed: production/DatabaseCluster/main" {
		t.Fatalf("card %v", got)
	}
}

// TestApprovalCards: the events of the gate of policies get their colour, and a wait says
// how to approve.
func TestApprovalCards(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.sender(t, "msteams", "", nil)
	msg := "needs a DBA — plan 0123456789ab: 1 to replace; needs 1 approval from group dba"
	for _, ev := range []string{notify.ApprovalRequired, notify.Approved, notify.Rejected, notify.PolicyDenied} {
		b.add(t, store.OutboxEntry{Event: ev, Namespace: "production", Kind: "Database", Name: "orders", Source: "infra",
			Revision: "abc123", Phase: "Pending", Message: msg})
	}
	if err := s.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	colours := map[string]string{}
	for _, card := range b.slack.got() {
		title, _ := card["title"].(string)
		colours[strings.TrimSuffix(title, ": production/Database/orders")], _ = card["themeColor"].(string)
		if text, _ := card["text"].(string); !strings.Contains(text, msg) ||
			strings.HasPrefix(title, notify.ApprovalRequired) != strings.Contains(text, "trueup approve production/Database/orders") {
			t.Errorf("%s: text %q", title, text)
		}
	}
	want := map[string]string{notify.ApprovalRequired: "DAA038", notify.Approved: "2EB886", notify.Rejected: "A30200", notify.PolicyDenied: "A30200"}
	if !reflect.DeepEqual(colours, want) {
		t.Errorf("colours %v, want %v", colours, want)
	}
}

func TestRuleSelects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.sender(t, "slack", "", func(c *config.Notifications) {
		c.Rules[0].Events = []string{"Recovered"}
		c.Rules[0].Selector = "tier=critical"
	})
	e := failed("main")
	e.Event = "Recovered"
	other := e
	other.Name = "other"
	e.Labels = map[string]string{"tier": "critical"}
	b.add(t, failed("nope"), e, other)
	ctx := context.Background()
	if err := s.Once(ctx); err != nil {
		t.Fatal(err)
	}
	got := b.slack.got()
	if len(got) != 1 || !strings.Contains(got[0]["text"].(string), "Recovered: production/DatabaseCluster/main") {
		t.Fatalf("messages %v", got)
	}
	// Entries no rule selects are finished, not retried.
	if due, err := b.st.DueOutbox(ctx, 10); err != nil || len(due) != 0 {
		t.Fatalf("left due: %v, %v", due, err)
	}
}

// TestOneReplicaSends: two senders share the outbox; only the lease holder sends, each entry
// once; Stop is safe twice.
func TestOneReplicaSends(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var senders []*Sender
	for _, name := range []string{"r1", "r2"} {
		s := b.sender(t, "slack", "", nil)
		s.opts.Replica, s.opts.Poll, s.opts.LeaseTTL = name, 20*time.Millisecond, 3*time.Second
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		senders = append(senders, s)
	}
	for i := range 20 {
		b.add(t, failed("db"+strconv.Itoa(i)))
	}
	deadline := time.Now().Add(15 * time.Second)
	for len(b.slack.got()) < 20 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	for _, s := range senders {
		s.Stop()
		s.Stop()
	}
	if n := len(b.slack.got()); n != 20 {
		t.Fatalf("%d messages for 20 entries", n)
	}
	if held := senders[0].term() + senders[1].term(); held != 0 {
		t.Errorf("a stopped sender still says it holds the lease")
	}
}

// TestLeaseLostMidway: a holder that loses the lease after its first message stops there; what
// it sent is recorded, the rest stays pending for the next holder.
func TestLeaseLostMidway(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.sender(t, "slack", "", nil)
	s.lease = lease.New(b.st, lease.Options{Name: LeaseName, Replica: "r1"}, slog.New(slog.DiscardHandler))
	if c := s.lease.Attempt(context.Background()); c != lease.Taken {
		t.Fatalf("taking the lease: %s", c)
	}
	term := s.term()
	b.slack.onPost = func() { s.lease.Drop(term) } // a fenced write found the lease moved on
	b.add(t, failed("a"), failed("b"), failed("c"))
	ctx := context.Background()
	if err := s.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(b.slack.got()); n != 1 {
		t.Fatalf("%d messages after losing the lease, want 1", n)
	}
	sent, err := b.st.ListOutbox(ctx, store.OutboxSent, 0)
	if err != nil || len(sent) != 1 || sent[0].Name != "a" {
		t.Fatalf("sent: %+v, %v", sent, err)
	}
	pending, err := b.st.ListOutbox(ctx, store.OutboxPending, 0)
	if err != nil || len(pending) != 2 || pending[0].Attempts != 0 {
		t.Fatalf("pending: %+v, %v", pending, err)
	}
}

// TestNoConfigFinishes: without a notifications block (serve runs the sender anyway) the
// outbox's entries are finished unsent, so that retention trims them.
func TestNoConfigFinishes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s, err := New(b.st, config.Notifications{MaxAttempts: 1}, Options{Replica: "r1"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	b.add(t, failed("a"), failed("b"))
	ctx := context.Background()
	if err := s.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if due, err := b.st.DueOutbox(ctx, 10); err != nil || len(due) != 0 {
		t.Fatalf("left due: %v, %v", due, err)
	}
	if n := len(b.slack.got()); n != 0 {
		t.Fatalf("%d messages without providers", n)
	}
}

// post is one request a recordingHook received.
type post struct {
	delivery string // the X-Trueup-Delivery header
	body     map[string]any
}

// recordingHook records every post with its delivery header, answers fail with 503 first,
// and calls onPost (outside its lock) before answering.
type recordingHook struct {
	mu     sync.Mutex
	fail   int
	posts  []post
	onPost func(n int)
}

func (h *recordingHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	h.mu.Lock()
	h.posts = append(h.posts, post{delivery: r.Header.Get(DeliveryHeader), body: body})
	n, fail, onPost := len(h.posts), h.fail, h.onPost
	h.mu.Unlock()
	if onPost != nil {
		onPost(n)
	}
	if n <= fail {
		w.Header().Set("Retry-After", "0")
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}
}

func (h *recordingHook) got() []post {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]post(nil), h.posts...)
}

// deliveriesByName is the delivery ids of the posts received, by the name of their resource.
func (h *recordingHook) deliveriesByName() map[string][]string {
	byName := map[string][]string{}
	for _, p := range h.got() {
		res, _ := p.body["resource"].(map[string]any)
		name, _ := res["name"].(string)
		byName[name] = append(byName[name], p.delivery)
	}
	return byName
}

func hookSender(t *testing.T, b bundle, url string) *Sender {
	t.Helper()
	s, err := New(b.st, config.Notifications{
		Providers:   []config.NotifyProvider{{Name: "hook", Type: "webhook", URL: url, Timeout: 5 * time.Second}},
		Rules:       []config.NotifyRule{{Name: "all", Providers: []string{"hook"}}},
		MaxAttempts: 5, GroupWindow: -1, RateLimit: -1,
	}, Options{Replica: "r1", Metrics: b.m}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDeliveryIDStableOnRetry: a webhook message carries its delivery id in the header and
// in the body's id, and a retry carries the same one; two messages have two ids.
func TestDeliveryIDStableOnRetry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := &recordingHook{fail: 1}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s := hookSender(t, b, srv.URL)
	b.add(t, failed("main"))
	ctx := context.Background()
	if err := s.Once(ctx); err != nil {
		t.Fatal(err)
	}
	// Due again now (b.due would move created_at, which the id is made of).
	if _, err := b.st.Pool().Exec(ctx, "UPDATE notification_outbox SET next_attempt_at = now()"); err != nil {
		t.Fatal(err)
	}
	if err := s.Once(ctx); err != nil {
		t.Fatal(err)
	}
	b.add(t, failed("other"))
	if err := s.Once(ctx); err != nil {
		t.Fatal(err)
	}
	got := h.got()
	if len(got) != 3 {
		t.Fatalf("%d posts, want 3 (refused, retried, the other)", len(got))
	}
	for i, p := range got {
		if len(p.delivery) != 32 || p.body["id"] != p.delivery {
			t.Errorf("post %d: header %q, body id %v: want the same 32-digit id", i, p.delivery, p.body["id"])
		}
	}
	if got[0].delivery != got[1].delivery {
		t.Errorf("the retry has id %s, the first attempt %s", got[1].delivery, got[0].delivery)
	}
	if got[2].delivery == got[0].delivery {
		t.Errorf("another message has the same id %s", got[2].delivery)
	}
}

// TestDeliveredRecordedPerMessage: a run interrupted while its fourth message is in flight
// (the replica stops or dies) has recorded the three its provider accepted, so the next run
// sends them no more: at most the message in flight goes twice, with the same id.
func TestDeliveredRecordedPerMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := &recordingHook{}
	h.onPost = func(n int) {
		if n == 4 {
			cancel() // the run ends while the provider has the message
		}
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b.add(t, failed("a"), failed("b"), failed("c"), failed("d"), failed("e"), failed("f"))
	if err := hookSender(t, b, srv.URL).Once(ctx); err == nil {
		t.Fatal("the interrupted run returned no error")
	}
	h.onPost = nil
	if err := hookSender(t, b, srv.URL).Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	byName := h.deliveriesByName()
	dups := 0
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		ids := byName[name]
		switch {
		case len(ids) == 0:
			t.Errorf("%s never delivered", name)
		case len(ids) > 1:
			dups += len(ids) - 1
			for _, id := range ids[1:] {
				if id != ids[0] {
					t.Errorf("%s: a repeat has id %s, the first %s", name, id, ids[0])
				}
			}
		}
	}
	if dups > 1 {
		t.Errorf("%d repeats, want at most the message in flight: %v", dups, byName)
	}
	sent, err := b.st.CountOutbox(context.Background(), store.OutboxSent)
	if err != nil || sent != 6 {
		t.Errorf("sent entries %d (%v), want 6", sent, err)
	}
}

// TestGroupedRetryKeepsID: a grouped message refused by its receiver is sent again about the
// same entries under the same id, although an entry of its group arrived meanwhile: that
// one goes in a message of its own (the reviewer's reproduction, through the store).
func TestGroupedRetryKeepsID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := &recordingHook{fail: 1}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s, err := New(b.st, config.Notifications{
		Providers:   []config.NotifyProvider{{Name: "hook", Type: "webhook", URL: srv.URL, Timeout: 5 * time.Second}},
		Rules:       []config.NotifyRule{{Name: "all", Providers: []string{"hook"}}},
		MaxAttempts: 5, GroupWindow: time.Second, RateLimit: -1,
	}, Options{Replica: "r1", Metrics: b.m}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Entries older than the window are sent at once, as one message.
	age := func() {
		t.Helper()
		if _, err := b.st.Pool().Exec(ctx, "UPDATE notification_outbox SET next_attempt_at = now(), created_at = now() - interval '1 minute' WHERE state = 'pending'"); err != nil {
			t.Fatal(err)
		}
	}
	b.add(t, failed("a"), failed("b"))
	age()
	if err := s.Once(ctx); err != nil {
		t.Fatal(err)
	}
	b.add(t, failed("c"))
	age() // c would join the group of a and b, but for the recorded message
	if err := s.Once(ctx); err != nil {
		t.Fatal(err)
	}
	got := h.got()
	if len(got) != 3 {
		t.Fatalf("%d posts, want 3 (a+b refused, a+b again, c)", len(got))
	}
	names := func(p post) string {
		var out []string
		for _, r := range p.body["resources"].([]any) {
			out = append(out, r.(string))
		}
		return strings.Join(out, ",")
	}
	if n0, n1 := names(got[0]), names(got[1]); n0 != n1 || got[0].delivery != got[1].delivery {
		t.Errorf("retry about %s with id %s; first attempt about %s with id %s: want the same message", n1, got[1].delivery, n0, got[0].delivery)
	}
	if names(got[2]) != "production/DatabaseCluster/c" || got[2].delivery == got[0].delivery {
		t.Errorf("third post about %s with id %s, want c alone under another id", names(got[2]), got[2].delivery)
	}
	if sent, err := b.st.CountOutbox(ctx, store.OutboxSent); err != nil || sent != 3 {
		t.Errorf("sent entries %d (%v), want 3", sent, err)
	}
}

// TestDeliveredWriteFailureStopsRun: when the record of an accepted message cannot be
// written (the database is gone), the run sends nothing more; the next run sends the rest,
// and the message whose record was lost again under its id.
func TestDeliveredWriteFailureStopsRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// The failing sender has its own store, closed while its first message is in flight.
	lost, err := store.Open(ctx, b.st.Pool().Config().ConnConfig.ConnString(), store.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lost.Close)
	h := &recordingHook{}
	h.onPost = func(n int) {
		if n == 1 {
			lost.Close()
		}
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b.add(t, failed("a"), failed("b"), failed("c"))
	s := hookSender(t, bundle{st: lost, m: b.m}, srv.URL)
	if err := s.Once(ctx); err == nil {
		t.Fatal("the run whose record failed returned no error")
	}
	if n := len(h.got()); n != 1 {
		t.Fatalf("%d posts after the record failed, want 1 (the run stops)", n)
	}
	h.onPost = nil
	if err := hookSender(t, b, srv.URL).Once(ctx); err != nil {
		t.Fatal(err)
	}
	byName := h.deliveriesByName()
	if a := byName["a"]; len(a) != 2 || a[0] != a[1] {
		t.Errorf("a delivered with ids %v, want twice with one id", a)
	}
	if len(byName["b"]) != 1 || len(byName["c"]) != 1 {
		t.Errorf("deliveries %v, want b and c once each", byName)
	}
	if sent, err := b.st.CountOutbox(ctx, store.OutboxSent); err != nil || sent != 3 {
		t.Errorf("sent entries %d (%v), want 3", sent, err)
	}
}
