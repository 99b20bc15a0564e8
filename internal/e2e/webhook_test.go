package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/daemon"
	"github.com/trueup-dev/trueup/internal/wire"
)

const hookSecret = "whsec-7f3a91c2e4"

// hookEnv is a Git server on loopback (git http-backend behind basic auth), a working clone
// pushing to it, and the replica hook syncing it, reconciling, and taking its webhooks.
type hookEnv struct {
	*env
	bare   string
	work   string
	gitURL string // with credentials, for the git CLI
	d      *daemon.Daemon
}

// setupHooks starts the replica hook; more is added to its source's config (YAML).
func setupHooks(t *testing.T, more string) *hookEnv {
	t.Helper()
	h := &hookEnv{bare: filepath.Join(t.TempDir(), "infra.git"), work: filepath.Join(t.TempDir(), "work")}
	git(t, "", "init", "-q", "--bare", "-b", "main", h.bare)
	git(t, h.bare, "config", "http.receivepack", "true")
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	backend := &cgi.Handler{Path: gitPath, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(h.bare), "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=deploy"}}
	gitSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "deploy" || p != "git-pass-55" {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(gitSrv.Close)
	h.gitURL = strings.Replace(gitSrv.URL, "http://", "http://deploy:git-pass-55@", 1) + "/infra.git"
	git(t, "", "init", "-q", "-b", "main", h.work)
	git(t, h.work, "remote", "add", "origin", h.gitURL)

	h.env = setup(t, options{hookSecret: hookSecret, leaseTTL: 1500 * time.Millisecond,
		source: fmt.Sprintf("name: infra, git: {url: %q, branch: main, path: manifests, interval: 1h, auth: {username: deploy, password: git-pass-55}}%s",
			gitSrv.URL+"/infra.git", more)})
	h.d = h.start("hook", h.o)
	return h
}

// webhooks is when the replica hook's syncer last took a webhook (nil: never).
func (h *hookEnv) webhooks() *time.Time {
	rt, _ := h.d.Syncer("infra").Runtime()
	return rt.LastWebhook
}

// push commits files in the working clone and pushes them with the git CLI.
func (h *hookEnv) push(files map[string]string, msg string) string {
	h.t.Helper()
	for p, c := range files {
		full := filepath.Join(h.work, p)
		if c == "" {
			_ = os.Remove(full)
			continue
		}
		_ = os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			h.t.Fatal(err)
		}
	}
	git(h.t, h.work, "add", "-A")
	git(h.t, h.work, "commit", "-q", "-m", msg)
	git(h.t, h.work, "push", "-q", "origin", "HEAD:main")
	return strings.TrimSpace(git(h.t, h.work, "rev-parse", "HEAD"))
}

// hook sends a GitHub-style push webhook; mutate may spoil it.
func (h *hookEnv) hook(source, commit, delivery string, mutate func(*http.Request, []byte) []byte) int {
	h.t.Helper()
	return sendHook(h.t, h.api, source, commit, delivery, mutate)
}

// sendHook sends a GitHub-style push webhook signed with hookSecret to the API at base.
func sendHook(t *testing.T, base, source, commit, delivery string, mutate func(*http.Request, []byte) []byte) int {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"ref": "refs/heads/main", "after": commit, "repository": map[string]any{"full_name": "acme/infra"}})
	mac := hmac.New(sha256.New, []byte(hookSecret))
	mac.Write(body)
	req, _ := http.NewRequest(http.MethodPost, base+"/hooks/"+source, nil)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	if mutate != nil {
		body = mutate(req, body)
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (h *hookEnv) appliedRevision() string {
	src, err := h.store.GetSource(context.Background(), "infra")
	if err != nil {
		h.t.Fatal(err)
	}
	return src.Revision
}

// TestWebhookAppliesPushAtOnce: with a 1 h poll interval, a push followed by a signed webhook
// is applied and reconciling at once; bad webhooks are refused and sync nothing.
func TestWebhookAppliesPushAtOnce(t *testing.T) {
	t.Parallel()
	h := setupHooks(t, "")
	first := h.push(map[string]string{"manifests/t.yaml": dbType, "manifests/a.yaml": dbResource("prod", "a", 1)}, "first")
	h.d.Syncer("infra").Trigger() // the syncer's first poll found an empty repository
	h.eventually(10*time.Second, "first revision applied by the initial sync", func() (bool, string) { return h.appliedRevision() == first, h.appliedRevision() })

	second := h.push(map[string]string{"manifests/b.yaml": dbResource("prod", "b", 2)}, "second")
	fetches := h.fetches()
	for _, tc := range []struct {
		name   string
		source string
		mutate func(*http.Request, []byte) []byte
		want   int
	}{
		{"wrong secret", "infra", func(r *http.Request, b []byte) []byte {
			mac := hmac.New(sha256.New, []byte("not-the-secret"))
			mac.Write(b)
			r.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
			return b
		}, 401},
		{"missing signature", "infra", func(r *http.Request, b []byte) []byte { r.Header.Del("X-Hub-Signature-256"); return b }, 401},
		{"tampered body", "infra", func(_ *http.Request, b []byte) []byte { return bytes.Replace(b, []byte("main"), []byte("mainx"), 1) }, 401},
		{"unknown source", "other", nil, 404},
	} {
		if code := h.hook(tc.source, second, "bad-"+tc.name, tc.mutate); code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, code, tc.want)
		}
	}
	if h.webhooks() != nil || h.fetches() != fetches || h.appliedRevision() != first {
		t.Fatalf("refused webhooks caused a sync: last webhook %v fetches %d→%d", h.webhooks(), fetches, h.fetches())
	}

	start := time.Now()
	if code := h.hook("infra", second, "d-1", nil); code != http.StatusAccepted {
		t.Fatalf("signed webhook: %d", code)
	}
	h.eventually(10*time.Second, "b reconciling or ready", func() (bool, string) {
		r, code := h.resource("prod", "Database", "b")
		return code == 200 && r.Status.Phase != "Pending", fmt.Sprint(code, r.Status.Phase)
	})
	t.Logf("push webhook → resource reconciling: %s", time.Since(start).Round(time.Millisecond))
	if got := h.appliedRevision(); got != second {
		t.Errorf("applied %s, want %s", got, second)
	}

	// The source shows its holder, last poll, last webhook and lag (published by the holder's
	// heartbeat, since a poll that finds nothing new writes nothing).
	h.eventually(10*time.Second, "source runtime published", func() (bool, string) {
		var src wire.SourceDetail
		h.get("/api/v1/sources/infra", &src)
		return src.Holder == "hook" && src.LastWebhookTime != nil && src.LastPollTime != nil && src.HeadRevision == second &&
			src.LagSeconds == 0, fmt.Sprintf("%+v", src)
	})

	// A redelivery is acknowledged and not synced again.
	before, taken := h.fetches(), *h.webhooks()
	if code := h.hook("infra", second, "d-1", nil); code != http.StatusAccepted {
		t.Errorf("redelivery: %d", code)
	}
	if last := h.webhooks(); !last.Equal(taken) {
		t.Errorf("redelivery triggered a sync: last webhook %v, before %v", last, taken)
	}
	if h.fetches() != before {
		t.Errorf("redelivery fetched")
	}
}

// TestWebhookFloodCoalesces: 100 webhooks for one source within a second cause at most 2
// fetches.
func TestWebhookFloodCoalesces(t *testing.T) {
	t.Parallel()
	h := setupHooks(t, "")
	first := h.push(map[string]string{"manifests/t.yaml": dbType, "manifests/a.yaml": dbResource("prod", "a", 1)}, "first")
	h.d.Syncer("infra").Trigger() // the syncer's first poll found an empty repository
	h.eventually(10*time.Second, "initial sync", func() (bool, string) { return h.appliedRevision() == first, "" })
	second := h.push(map[string]string{"manifests/b.yaml": dbResource("prod", "b", 2)}, "second")
	before := h.fetches()
	var wg sync.WaitGroup
	var accepted, limited atomic.Int32
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch h.hook("infra", second, fmt.Sprint("flood-", i), nil) {
			case http.StatusAccepted:
				accepted.Add(1)
			case http.StatusTooManyRequests:
				limited.Add(1)
			}
		}()
	}
	wg.Wait()
	h.eventually(10*time.Second, "second applied", func() (bool, string) { return h.appliedRevision() == second, "" })
	if n := h.fetches() - before; n > 2 {
		t.Errorf("100 webhooks caused %d fetches, want ≤ 2", n)
	}
	if accepted.Load()+limited.Load() != 100 || accepted.Load() == 0 {
		t.Errorf("accepted %d, limited %d", accepted.Load(), limited.Load())
	}
}

// TestWebhookWaitsForPushedCommit: a webhook naming a commit the server only serves 500 ms
// later still ends with that commit applied.
func TestWebhookWaitsForPushedCommit(t *testing.T) {
	t.Parallel()
	h := setupHooks(t, "")
	first := h.push(map[string]string{"manifests/t.yaml": dbType, "manifests/a.yaml": dbResource("prod", "a", 1)}, "first")
	h.d.Syncer("infra").Trigger() // the syncer's first poll found an empty repository
	h.eventually(10*time.Second, "initial sync", func() (bool, string) { return h.appliedRevision() == first, "" })
	// The commit exists on the server under another ref; main moves to it only later, as on a
	// forge whose fetch endpoint lags behind the push event.
	git(t, h.work, "commit", "-q", "--allow-empty", "-m", "later")
	later := strings.TrimSpace(git(t, h.work, "rev-parse", "HEAD"))
	git(t, h.work, "push", "-q", "origin", "HEAD:refs/heads/staging")
	if code := h.hook("infra", later, "lag-1", nil); code != http.StatusAccepted {
		t.Fatalf("webhook: %d", code)
	}
	time.AfterFunc(500*time.Millisecond, func() {
		_ = exec.Command("git", "-C", h.bare, "update-ref", "refs/heads/main", later).Run()
	})
	h.eventually(15*time.Second, "the pushed commit applied", func() (bool, string) {
		return h.appliedRevision() == later, h.appliedRevision()
	})
}

// fakeStatuses is a GitHub statuses endpoint recording what it receives per commit.
type fakeStatuses struct {
	mu  sync.Mutex
	got map[string][]map[string]string
}

func (f *fakeStatuses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]string
	_ = json.NewDecoder(r.Body).Decode(&body)
	sha := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	f.mu.Lock()
	f.got[sha] = append(f.got[sha], body)
	f.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(`{"id":1}`))
}

func (f *fakeStatuses) states(sha string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, b := range f.got[sha] {
		out = append(out, b["state"])
	}
	return out
}

func (f *fakeStatuses) last(sha string) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.got[sha]); n > 0 {
		return f.got[sha][n-1]
	}
	return nil
}

// TestCommitStatusOnTheForge: a good commit gets pending then success once its resources are
// Ready; a bad one gets failure naming file:line.
func TestCommitStatusOnTheForge(t *testing.T) {
	t.Parallel()
	fake := &fakeStatuses{got: map[string][]map[string]string{}}
	gh := httptest.NewServer(fake)
	defer gh.Close()
	h := setupHooks(t, fmt.Sprintf(", commitStatus: {provider: github, token: ghp_statusToken123, baseURL: %q, repo: acme/infra}", gh.URL+"/"))

	good := h.push(map[string]string{"manifests/t.yaml": dbType, "manifests/a.yaml": dbResource("prod", "a", 1)}, "good")
	h.d.Syncer("infra").TriggerCommit(good)
	h.eventually(20*time.Second, "success on the good commit", func() (bool, string) {
		st := fake.states(good)
		return len(st) >= 2 && st[0] == "pending" && st[len(st)-1] == "success", fmt.Sprint(st)
	})
	if l := fake.last(good); l["context"] != "trueup/infra" || l["target_url"] == "" {
		t.Errorf("status %v", l)
	}
	bad := h.push(map[string]string{"manifests/a.yaml": dbResource("prod", "a", 500)}, "bad")
	h.d.Syncer("infra").TriggerCommit(bad)
	h.eventually(10*time.Second, "failure on the bad commit", func() (bool, string) {
		l := fake.last(bad)
		return l != nil && l["state"] == "failure" && strings.Contains(l["description"], "manifests/a.yaml:7"), fmt.Sprint(l)
	})
}
