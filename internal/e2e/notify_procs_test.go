//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/notifier/smtptest"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

// procSlack is a fake Slack incoming webhook on loopback: it answers 500 to the first fail
// posts (and to every post while down), and records the texts it accepted.
type procSlack struct {
	mu    sync.Mutex
	fail  int
	down  bool
	posts int
	texts []string
}

func (f *procSlack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.posts++
	body, _ := io.ReadAll(r.Body)
	if f.down || f.posts <= f.fail {
		http.Error(w, "unavailable", http.StatusInternalServerError)
		return
	}
	var m struct{ Text string }
	_ = json.Unmarshal(body, &m)
	f.texts = append(f.texts, m.Text)
	_, _ = io.WriteString(w, "ok")
}

func (f *procSlack) titles() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, t := range f.texts {
		out = append(out, strings.SplitN(t, "\n", 2)[0])
	}
	return out
}

func (f *procSlack) setDown(v bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = v
}

func count(titles []string, prefix string) int {
	n := 0
	for _, t := range titles {
		if strings.HasPrefix(t, prefix) {
			n++
		}
	}
	return n
}

// TestProcsNotifications: with the real binary, a fake Slack and a fake SMTP server on
// loopback,
//   - a failing resource is told once, although the provider answers 500 three times first
//     (the retries show in the metrics);
//   - the replica is killed (-9) right after the recovery committed, while Slack is down: the
//     replica started next delivers the Recovered message, exactly once;
//   - 300 resources failing on one revision are one message.
func TestProcsNotifications(t *testing.T) {
	url := pgtest.NewDatabase(t, store.MigrateURL)
	w := procSetup(t, url, "0.01")
	slack := &procSlack{fail: 3}
	srv := httptest.NewServer(slack)
	t.Cleanup(srv.Close)
	mail := smtptest.Start(t)
	host, portText, _ := net.SplitHostPort(mail.Addr())
	port, _ := strconv.Atoi(portText)
	flag := filepath.Join(w.dir, "fail")
	w.env = map[string]string{"FAIL_FLAG": flag}
	w.config = map[string]any{
		"notifications": map[string]any{
			"providers": []any{map[string]any{"name": "ops", "type": "slack", "url": srv.URL},
				map[string]any{"name": "mail", "type": "email", "smtp": map[string]any{"host": host, "port": port, "insecure": true},
					"from": "trueup@example.com", "to": []string{"oncall@example.com"}}},
			"rules":       []any{map[string]any{"name": "all", "providers": []string{"ops", "mail"}}},
			"groupWindow": "3s",
			"rateLimit":   "-1s",
		},
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"manifests/types/database.yaml": dbType, "manifests/flappy.yaml": dbResource("prod", "flappy", 1)}
	w.commit(files, "one database")
	r1 := w.startOne()

	w.eventually(60*time.Second, "the Failed message", func() (bool, string) {
		got := slack.titles()
		return count(got, "Failed: prod/Database/flappy") == 1, fmt.Sprint(got)
	})
	resp, err := w.client.Get("http://" + r1.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if m := regexp.MustCompile(`trueup_notification_retries_total\{provider="ops"\} (\d+)`).FindSubmatch(metrics); m == nil {
		t.Errorf("no retries in the metrics")
	} else if n, _ := strconv.Atoi(string(m[1])); n < 3 {
		t.Errorf("retries = %d, want 3", n)
	}

	// Slack goes down; the resource recovers; the replica dies right after the transition
	// commits.
	db := procDB(t, url)
	slack.setDown(true)
	if err := os.Remove(flag); err != nil {
		t.Fatal(err)
	}
	w.eventually(30*time.Second, "the Recovered transition committed", func() (bool, string) {
		got := procStrings(t, db, `SELECT event FROM notification_outbox WHERE event = 'Recovered'`)
		return len(got) == 1, fmt.Sprint(got)
	})
	w.crash(r1)
	slack.setDown(false)
	w.startOne()
	w.eventually(60*time.Second, "the Recovered message after the restart", func() (bool, string) {
		got := slack.titles()
		return count(got, "Recovered: prod/Database/flappy") >= 1, fmt.Sprint(got)
	})

	// 300 failing on one revision.
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	many, _ := procManifests(300, 6, func(i int) int { return 1 + i%100 })
	delete(many, "manifests/types/database.yaml")
	head := w.commit(many, "300 databases")
	want := "300 resources failed on revision " + head[:12]
	w.eventually(120*time.Second, "one grouped message", func() (bool, string) {
		got := slack.titles()
		return count(got, want) == 1, fmt.Sprint(got)
	})
	// Once nothing is pending, count everything that was sent.
	w.eventually(30*time.Second, "an empty outbox", func() (bool, string) {
		left := procStrings(t, db, `SELECT event FROM notification_outbox WHERE state <> 'sent'`)
		return len(left) == 0, fmt.Sprint(left)
	})
	got := slack.titles()
	if count(got, "Failed: prod/Database/flappy") != 1 || count(got, "Recovered: prod/Database/flappy") != 1 || count(got, want) != 1 || len(got) != 3 {
		t.Errorf("messages: %q, want one Failed, one Recovered and one grouped", got)
	}
	// The email provider got the same three (delivered at the first attempt while Slack
	// failed: a retry sends only what is missing).
	var subjects []string
	for _, m := range mail.Messages() {
		if _, rest, ok := strings.Cut(m, "Subject: [trueup] "); ok {
			subjects = append(subjects, strings.SplitN(rest, "\r\n", 2)[0])
		}
	}
	if count(subjects, "Failed: prod/Database/flappy") != 1 || count(subjects, "Recovered: prod/Database/flappy") != 1 || count(subjects, want) != 1 || len(subjects) != 3 {
		t.Errorf("emails: %q, want one Failed, one Recovered and one grouped", subjects)
	}
}

// procHook is a slow webhook receiver on loopback: every post takes delay to answer; the
// post number blockAt is recorded and then held until release is closed (the sender has no
// answer while the test kills it). It records every post with its delivery header.
type procHook struct {
	delay   time.Duration
	blockAt int
	blocked chan struct{} // closed when post blockAt arrived
	release chan struct{}

	mu    sync.Mutex
	posts []procHookPost
}

type procHookPost struct {
	delivery, id, event, resource string
	count                         int
}

func (h *procHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var p struct {
		ID       string `json:"id"`
		Event    string `json:"event"`
		Count    int    `json:"count"`
		Resource struct{ Namespace, Kind, Name string }
	}
	_ = json.Unmarshal(body, &p)
	h.mu.Lock()
	h.posts = append(h.posts, procHookPost{delivery: r.Header.Get("X-Trueup-Delivery"), id: p.ID, event: p.Event, count: p.Count,
		resource: p.Resource.Namespace + "/" + p.Resource.Kind + "/" + p.Resource.Name})
	n := len(h.posts)
	h.mu.Unlock()
	if n == h.blockAt {
		close(h.blocked)
		<-h.release
	}
	// The receiver is slow: a delay is what it is, not a wait for work.
	time.Sleep(h.delay)
	_, _ = io.WriteString(w, "ok")
}

func (h *procHook) got() []procHookPost {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.posts)
}

// TestProcsNotificationsKillHolder: two replicas, 40 resources failing (40 transitions), a
// slow webhook receiver, and kill -9 of the notifications lease holder while a message is in
// flight: the other replica takes over and every transition is delivered, at most one
// message twice, every message carrying its delivery id (header and body alike), a repeat
// the same id as the first. Without grouping (one message per transition, the kill at the
// tenth) each resource's posts share one id; with grouping (the kill at the first message)
// each id is one message, about the same entries every time it is posted (the id recorded
// on the entries before the first send), and the messages cover every transition once.
func TestProcsNotificationsKillHolder(t *testing.T) {
	t.Run("alone", func(t *testing.T) { procsNotificationsKillHolder(t, "-1s", 10) })
	t.Run("grouped", func(t *testing.T) { procsNotificationsKillHolder(t, "300ms", 1) })
}

func procsNotificationsKillHolder(t *testing.T, groupWindow string, blockAt int) {
	url := pgtest.NewDatabase(t, store.MigrateURL)
	w := procSetup(t, url, "0.01")
	hook := &procHook{delay: 150 * time.Millisecond, blockAt: blockAt, blocked: make(chan struct{}), release: make(chan struct{})}
	srv := httptest.NewServer(hook)
	released := false
	release := func() {
		if !released {
			released = true
			close(hook.release)
		}
	}
	t.Cleanup(func() { release(); srv.Close() })
	flag := filepath.Join(w.dir, "fail")
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w.env = map[string]string{"FAIL_FLAG": flag}
	w.config = map[string]any{
		"notifications": map[string]any{
			"providers":   []any{map[string]any{"name": "hook", "type": "webhook", "url": srv.URL}},
			"rules":       []any{map[string]any{"name": "all", "providers": []string{"hook"}, "events": []string{"Failed"}}},
			"groupWindow": groupWindow,
			"rateLimit":   "-1s",
		},
	}
	const n = 40
	files, _ := procManifests(n, 4, func(int) int { return 1 })
	w.commit(files, "40 databases")
	w.start(2)

	select {
	case <-hook.blocked:
	case <-time.After(120 * time.Second):
		t.Fatalf("the receiver got %d posts, never the %dth", len(hook.got()), hook.blockAt)
	}
	var list procReplicaList
	if err := w.getAny("/api/v1/replicas", &list); err != nil {
		t.Fatal(err)
	}
	h := list.holders("notifications")
	if len(h) != 1 || w.byPID(h[0].PID) == nil {
		t.Fatalf("notifications lease holders: %+v", h)
	}
	w.crash(w.byPID(h[0].PID))
	release()

	db := procDB(t, url)
	w.eventually(120*time.Second, "every transition delivered", func() (bool, string) {
		left := procStrings(t, db, `SELECT name FROM notification_outbox WHERE state <> 'sent'`)
		all := procStrings(t, db, `SELECT name FROM notification_outbox WHERE event = 'Failed'`)
		return len(left) == 0 && len(all) == n, fmt.Sprintf("%d of %d Failed transitions written, %d not sent", len(all), n, len(left))
	})
	posts := hook.got()
	for i, p := range posts {
		if len(p.delivery) != 32 || p.id != p.delivery {
			t.Errorf("post %d (%s %s): header X-Trueup-Delivery %q, body id %q: want one 32-digit id in both", i, p.event, p.resource, p.delivery, p.id)
		}
	}
	if len(posts) <= hook.blockAt {
		t.Errorf("%d posts: the kill was not mid-stream", len(posts))
	}
	if groupWindow != "-1s" {
		// Each id is one message: posted with one count, and the messages' counts add up to
		// the transitions; every id is the one recorded on its entries.
		recorded := map[string]int{}
		for _, id := range procStrings(t, db, `SELECT deliveries->>'all/hook' FROM notification_outbox WHERE event = 'Failed'`) {
			recorded[id]++
		}
		counts := map[string]int{}
		for _, p := range posts {
			if c, ok := counts[p.delivery]; ok && c != p.count {
				t.Errorf("id %s posted about %d and %d resources: want one message", p.delivery, c, p.count)
			}
			counts[p.delivery] = p.count
			if recorded[p.delivery] != p.count {
				t.Errorf("id %s posted about %d resources, recorded on %d entries", p.delivery, p.count, recorded[p.delivery])
			}
		}
		total := 0
		for _, c := range counts {
			total += c
		}
		if total != n || len(posts)-len(counts) > 1 {
			t.Errorf("%d messages (%d posts) about %d transitions, want %d transitions and at most one repeat", len(counts), len(posts), total, n)
		}
		t.Logf("%d transitions, %d messages, %d posts", n, len(counts), len(posts))
		return
	}
	byKey := map[string][]string{} // event resource → delivery ids
	for _, p := range posts {
		byKey[p.event+" "+p.resource] = append(byKey[p.event+" "+p.resource], p.delivery)
	}
	repeats := 0
	owner := map[string]string{}
	for _, row := range procStrings(t, db, `SELECT event || ' ' || namespace || '/' || kind || '/' || name FROM notification_outbox`) {
		ids := byKey[row]
		if len(ids) == 0 {
			t.Errorf("%s: never delivered", row)
			continue
		}
		repeats += len(ids) - 1
		for _, id := range ids[1:] {
			if id != ids[0] {
				t.Errorf("%s: delivered with ids %v, want one id", row, ids)
			}
		}
		if prev, ok := owner[ids[0]]; ok {
			t.Errorf("%s and %s share the id %s", prev, row, ids[0])
		}
		owner[ids[0]] = row
	}
	if repeats > 1 {
		t.Errorf("%d repeated messages, want at most the one in flight at the kill (%d posts for %d transitions)", repeats, len(posts), len(byKey))
	}
	t.Logf("%d transitions, %d posts, %d repeated", n, len(posts), repeats)
}
