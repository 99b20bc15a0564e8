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
