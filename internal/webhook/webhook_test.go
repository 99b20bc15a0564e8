package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/logbuf"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

const (
	secret    = "s3cret-Webhook-Value"
	commitA   = "8f3c1e2a9b7d6c5e4f3a2b1c0d9e8f7a6b5c4d3e"
	zeroSHA   = "0000000000000000000000000000000000000000"
	maxBodyKB = 4
)

// trigger records Trigger calls.
type trigger struct {
	mu    sync.Mutex
	calls []string // source@commit
}

func (tr *trigger) fire(source, commit string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.calls = append(tr.calls, source+"@"+commit)
}

func (tr *trigger) got() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.calls...)
}

// syncBuffer is a log sink safe for concurrent handlers.
type syncBuffer = logbuf.Buffer

type fixture struct {
	h       *Handler
	url     string // base URL of the server; POST url+"/hooks/<source>"
	mux     *http.ServeMux
	st      *store.Store
	trigger *trigger
	logs    *syncBuffer
}

// setup serves a handler with three sources: infra (tracks main), tags (tracks a tag) and
// nosecret (misconfigured), with the handler mounted as the server will mount it.
func setup(t *testing.T, mod func(*Options)) *fixture {
	t.Helper()
	st, err := store.Open(context.Background(), pgtest.NewDatabase(t, store.MigrateURL), store.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	f := &fixture{st: st, trigger: &trigger{}, logs: &syncBuffer{}}
	opts := Options{
		Sources: map[string]Source{
			"infra":    {Secret: secret, Branch: "main"},
			"tags":     {Secret: secret},
			"nosecret": {Branch: "main"},
		},
		Store:   st,
		Trigger: f.trigger.fire,
		MaxBody: maxBodyKB << 10,
		Logger:  slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if mod != nil {
		mod(&opts)
	}
	f.h = New(opts)
	f.mux = http.NewServeMux()
	f.mux.Handle("POST /hooks/{source}", f.h)
	srv := httptest.NewServer(f.mux)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	t.Cleanup(func() {
		// Whatever a test did, no secret or signature reaches the logs.
		logs := f.logs.String()
		for _, s := range []string{secret, sign(secret, pushBody("main", commitA))[len("sha256="):], "Bearer"} {
			if strings.Contains(logs, s) {
				t.Errorf("logs contain %q:\n%s", s, logs)
			}
		}
	})
	return f
}

func sign(key, body string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func pushBody(branch, after string) string {
	return fmt.Sprintf(`{"ref":"refs/heads/%s","before":"%s","after":"%s","repository":{"full_name":"acme/infra"}}`, branch, zeroSHA, after)
}

// reply is an answer as the test sees it.
type reply struct {
	code       int
	status     string // {"status":…}
	err        string // {"error":…}
	retryAfter string
}

func (f *fixture) post(t *testing.T, source, body string, headers map[string]string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.url+"/hooks/"+source, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) reply {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := reply{code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
	if len(raw) > 0 {
		var m map[string]string
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("answer %d is not JSON: %q", resp.StatusCode, raw)
		}
		out.status, out.err = m["status"], m["error"]
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("content type %q", ct)
		}
	}
	return out
}

func github(body, delivery string) map[string]string {
	return map[string]string{"X-GitHub-Event": "push", "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": sign(secret, body)}
}

func TestProviders(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	body := pushBody("main", commitA)
	gitlabBody := `{"object_kind":"push","ref":"refs/heads/main","before":"` + zeroSHA + `","after":"` + commitA + `","checkout_sha":"` + commitA + `"}`
	cases := []struct {
		name    string
		body    string
		headers map[string]string
	}{
		{"github", body, github(body, "gh-1")},
		{"gitea", body, map[string]string{"X-Gitea-Event": "push", "X-GitHub-Event": "push", "X-Gitea-Delivery": "gt-1",
			"X-Gitea-Signature": sign(secret, body)[len("sha256="):], "X-Hub-Signature-256": sign(secret, body)}},
		{"gitea hub signature only", body, map[string]string{"X-Gitea-Event": "push", "X-Gitea-Delivery": "gt-2", "X-Hub-Signature-256": sign(secret, body)}},
		{"forgejo", body, map[string]string{"X-Forgejo-Event": "push", "X-Forgejo-Delivery": "fj-1", "X-Forgejo-Signature": sign(secret, body)[len("sha256="):]}},
		{"gitlab", gitlabBody, map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": secret, "X-Gitlab-Event-UUID": "gl-1"}},
		{"generic bearer", body, map[string]string{"Authorization": "Bearer " + secret, "X-Request-Id": "gen-1"}},
		{"generic signature", body, map[string]string{"X-Trueup-Signature-256": sign(secret, body)}},
	}
	for _, c := range cases {
		before := len(f.trigger.got())
		got := f.post(t, "infra", c.body, c.headers)
		if got.code != http.StatusAccepted || got.status != "accepted" {
			t.Errorf("%s: got %+v, want 202 accepted", c.name, got)
			continue
		}
		calls := f.trigger.got()
		if len(calls) != before+1 || calls[len(calls)-1] != "infra@"+commitA {
			t.Errorf("%s: triggers %v", c.name, calls[before:])
		}
	}
}

func TestGenericWithoutPayload(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	// A bare curl: no body, no ref, no commit: sync whatever the head is.
	got := f.post(t, "infra", "", map[string]string{"Authorization": "bearer " + secret})
	if got.code != http.StatusAccepted {
		t.Fatalf("got %+v", got)
	}
	if calls := f.trigger.got(); len(calls) != 1 || calls[0] != "infra@" {
		t.Errorf("triggers %v", calls)
	}
}

func TestGitHubFormEncoded(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	body := url.Values{"payload": {pushBody("main", commitA)}}.Encode()
	h := github(body, "form-1")
	h["Content-Type"] = "application/x-www-form-urlencoded"
	if got := f.post(t, "infra", body, h); got.code != http.StatusAccepted {
		t.Fatalf("got %+v", got)
	}
	if calls := f.trigger.got(); len(calls) != 1 || calls[0] != "infra@"+commitA {
		t.Errorf("triggers %v", calls)
	}
}

func TestUnauthorized(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	body := pushBody("main", commitA)
	tampered := pushBody("main", strings.Repeat("e", 40))
	cases := []struct {
		name    string
		source  string
		body    string
		headers map[string]string
	}{
		{"no signature", "infra", body, map[string]string{"X-GitHub-Event": "push"}},
		{"wrong secret", "infra", body, map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": sign("guess", body)}},
		{"tampered body", "infra", tampered, github(body, "t-1")},
		{"not hex", "infra", body, map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=zz"}},
		{"no sha256= prefix", "infra", body, map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": sign(secret, body)[len("sha256="):]}},
		{"gitea tampered", "infra", tampered, map[string]string{"X-Gitea-Event": "push", "X-Gitea-Signature": sign(secret, body)[len("sha256="):]}},
		{"gitlab wrong token", "infra", body, map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": secret + "x"}},
		{"bearer wrong", "infra", body, map[string]string{"Authorization": "Bearer nope"}},
		{"basic auth", "infra", body, map[string]string{"Authorization": "Basic " + secret}},
		{"generic signature tampered", "infra", tampered, map[string]string{"X-Trueup-Signature-256": sign(secret, body)}},
		// A valid HMAC decides before a weaker credential can rescue a bad one.
		{"bad hmac, good bearer", "infra", tampered, map[string]string{"X-Hub-Signature-256": sign(secret, body), "Authorization": "Bearer " + secret}},
		{"source without secret", "nosecret", body, map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": sign("", body)}},
		{"source without secret, empty bearer", "nosecret", body, map[string]string{"Authorization": "Bearer "}},
	}
	for _, c := range cases {
		got := f.post(t, c.source, c.body, c.headers)
		if got.code != http.StatusUnauthorized || got.err == "" {
			t.Errorf("%s: got %+v, want 401", c.name, got)
		}
	}
	if calls := f.trigger.got(); len(calls) != 0 {
		t.Errorf("triggers %v", calls)
	}
	// A flood of forgeries logs once.
	if n := strings.Count(f.logs.String(), "webhook delivery refused"); n != 2 {
		t.Errorf("%d refusal warnings (one per source per minute), want 2:\n%s", n, f.logs.String())
	}
}

// failingBody fails the test if the handler reads it.
type failingBody struct{ t *testing.T }

func (b failingBody) Read([]byte) (int, error) {
	b.t.Error("body read before the delivery could be refused")
	return 0, io.ErrUnexpectedEOF
}

// TestRefusedBeforeReading: a credential that is in the headers alone (GitLab's token, a
// bearer token, none at all) is checked before a byte of the body is read.
func TestRefusedBeforeReading(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	cases := []struct {
		name, source string
		headers      map[string]string
	}{
		{"no credential", "infra", map[string]string{"X-GitHub-Event": "push"}},
		{"gitlab wrong token", "infra", map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": secret + "x"}},
		{"bearer wrong", "infra", map[string]string{"Authorization": "Bearer nope"}},
		{"basic auth", "infra", map[string]string{"Authorization": "Basic " + secret}},
		{"source without secret, bearer", "nosecret", map[string]string{"Authorization": "Bearer "}},
		{"source without secret, signed", "nosecret", map[string]string{"X-Hub-Signature-256": sign("", "{}")}},
	}
	for _, c := range cases {
		req := httptest.NewRequest(http.MethodPost, "/hooks/"+c.source, failingBody{t})
		req.ContentLength = maxBodyKB << 10 // a body as large as allowed, as far as the handler can tell
		for k, v := range c.headers {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		f.mux.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("%s: got %d %s, want 401", c.name, rec.Code, rec.Body)
		}
	}
}

// slowDelivery posts a signed delivery whose body arrives only when the returned writer is
// written to and closed; its answer comes on the channel.
func (f *fixture) slowDelivery(t *testing.T, source string, headers map[string]string) (*io.PipeWriter, <-chan reply) {
	t.Helper()
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() }) // before the server's Close, which waits for the handler
	req, err := http.NewRequest(http.MethodPost, f.url+"/hooks/"+source, pr)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	answer := make(chan reply, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			answer <- reply{}
			return
		}
		resp.Body.Close()
		answer <- reply{code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
	}()
	return pw, answer
}

// waitFor polls cond until it holds, failing the test after a few seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestUnauthenticatedReadsBounded: at most unauthReads signed bodies of a source are read at
// a time; the next signed delivery is answered 429 without its body being read, while
// deliveries authenticated by their headers and other sources go on.
func TestUnauthenticatedReadsBounded(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.h.slotWait = 20 * time.Millisecond
	forged := map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": sign("guess", "{}")}
	var pipes []*io.PipeWriter
	var answers []<-chan reply
	for range unauthReads {
		pw, answer := f.slowDelivery(t, "infra", forged)
		pipes, answers = append(pipes, pw), append(answers, answer)
	}
	waitFor(t, "the read slots to fill", func() bool { return len(f.h.sources.Load().reading["infra"]) == unauthReads })

	req := httptest.NewRequest(http.MethodPost, "/hooks/infra", failingBody{t})
	body := pushBody("main", commitA)
	for k, v := range github(body, "sem-1") {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	f.mux.ServeHTTP(rec, req)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" {
		t.Errorf("signed delivery with every slot taken: %d (Retry-After %q) %s, want 429 after 1",
			rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if got := f.post(t, "infra", body, map[string]string{"Authorization": "Bearer " + secret}); got.code != http.StatusAccepted {
		t.Errorf("bearer delivery while the slots are taken: %+v", got)
	}
	if got := f.post(t, "tags", body, github(body, "sem-2")); got.code != http.StatusAccepted {
		t.Errorf("other source while infra's slots are taken: %+v", got)
	}

	for i, pw := range pipes {
		_, _ = io.WriteString(pw, "{}")
		pw.Close()
		if got := <-answers[i]; got.code != http.StatusUnauthorized {
			t.Errorf("forged slow delivery %d: %+v", i, got)
		}
	}
	waitFor(t, "the read slots to empty", func() bool { return len(f.h.sources.Load().reading["infra"]) == 0 })
	if got := f.post(t, "infra", body, github(body, "sem-3")); got.code != http.StatusAccepted {
		t.Errorf("signed delivery after the slots emptied: %+v", got)
	}
}

// TestSlowBody: a body that does not arrive within the read timeout is answered 408 and
// frees its read slot.
func TestSlowBody(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.h.readTimeout = 100 * time.Millisecond
	body := pushBody("main", commitA)
	pw, answer := f.slowDelivery(t, "infra", github(body, "slow-1"))
	go func() { _, _ = io.WriteString(pw, body[:10]) }() // then nothing
	select {
	case got := <-answer:
		if got.code != http.StatusRequestTimeout {
			t.Errorf("got %+v, want 408", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no answer to a trickled body")
	}
	waitFor(t, "the read slot to empty", func() bool { return len(f.h.sources.Load().reading["infra"]) == 0 })
	if got := f.post(t, "infra", body, github(body, "slow-2")); got.code != http.StatusAccepted {
		t.Errorf("next delivery: %+v", got)
	}
}

func TestUnknownSource(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	req := httptest.NewRequest(http.MethodPost, "/hooks/nope", failingBody{t})
	rec := httptest.NewRecorder()
	f.mux.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), `"error"`) {
		t.Errorf("got %d %s", rec.Code, rec.Body)
	}
	body := pushBody("main", commitA)
	if got := f.post(t, "nope", body, github(body, "u-1")); got.code != http.StatusNotFound {
		t.Errorf("over HTTP: %+v", got)
	}
}

// chunked hides the length so the request is sent without Content-Length.
type chunked struct{ io.Reader }

func TestTooLarge(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	big := `{"ref":"refs/heads/main","pad":"` + strings.Repeat("x", maxBodyKB<<10) + `"}`
	h := github(big, "big-1")
	if got := f.post(t, "infra", big, h); got.code != http.StatusRequestEntityTooLarge || got.err == "" {
		t.Errorf("with Content-Length: %+v", got)
	}
	req, _ := http.NewRequest(http.MethodPost, f.url+"/hooks/infra", chunked{strings.NewReader(big)})
	for k, v := range h {
		req.Header.Set(k, v)
	}
	if got := do(t, req); got.code != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked: %+v", got)
	}
	// Authenticated by a header, the body is still bounded.
	req, _ = http.NewRequest(http.MethodPost, f.url+"/hooks/infra", chunked{strings.NewReader(big)})
	req.Header.Set("Authorization", "Bearer "+secret)
	if got := do(t, req); got.code != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked with a bearer token: %+v", got)
	}
	// Exactly the limit is fine.
	exact := `{"ref":"refs/heads/main","pad":"` + strings.Repeat("x", maxBodyKB<<10-len(`{"ref":"refs/heads/main","pad":""}`)) + `"}`
	if got := f.post(t, "infra", exact, github(exact, "big-2")); got.code != http.StatusAccepted {
		t.Errorf("body of exactly MaxBody: %+v", got)
	}
}

func TestPingAndIgnored(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	ping := `{"zen":"Design for failure.","hook_id":1}`
	if got := f.post(t, "infra", ping, map[string]string{"X-GitHub-Event": "ping", "X-GitHub-Delivery": "p-1",
		"X-Hub-Signature-256": sign(secret, ping)}); got.code != http.StatusOK || got.status != "ping" {
		t.Errorf("ping: %+v", got)
	}
	// A ping still needs the signature.
	if got := f.post(t, "infra", ping, map[string]string{"X-GitHub-Event": "ping"}); got.code != http.StatusUnauthorized {
		t.Errorf("unsigned ping: %+v", got)
	}

	tagPush := `{"ref":"refs/tags/v1.2.0","after":"` + commitA + `"}`
	cases := []struct {
		name, source, body string
		headers            map[string]string
		want               int
	}{
		{"other branch", "infra", pushBody("dev", commitA), nil, http.StatusNoContent},
		{"tag push to a branch source", "infra", tagPush, nil, http.StatusNoContent},
		{"tag push to a tag source", "tags", tagPush, nil, http.StatusAccepted},
		{"any branch to a tag source", "tags", pushBody("dev", commitA), nil, http.StatusAccepted},
		{"other github event", "infra", pushBody("main", commitA), map[string]string{"X-GitHub-Event": "issues"}, http.StatusNoContent},
		{"gitlab merge request", "infra", pushBody("main", commitA), map[string]string{"X-Gitlab-Event": "Merge Request Hook", "X-Gitlab-Token": secret}, http.StatusNoContent},
		{"gitlab other branch", "infra", pushBody("dev", commitA), map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": secret}, http.StatusNoContent},
		{"gitlab tag push to a branch source", "infra", tagPush, map[string]string{"X-Gitlab-Event": "Tag Push Hook", "X-Gitlab-Token": secret}, http.StatusNoContent},
		{"generic other branch", "infra", pushBody("dev", commitA), map[string]string{"Authorization": "Bearer " + secret}, http.StatusNoContent},
	}
	for i, c := range cases {
		h := c.headers
		if h == nil {
			h = github(c.body, fmt.Sprintf("ig-%d", i))
		} else if h["X-GitHub-Event"] != "" {
			h["X-Hub-Signature-256"] = sign(secret, c.body)
		}
		if got := f.post(t, c.source, c.body, h); got.code != c.want {
			t.Errorf("%s: got %+v, want %d", c.name, got, c.want)
		}
	}
	if calls := f.trigger.got(); len(calls) != 2 || calls[0] != "tags@"+commitA || calls[1] != "tags@"+commitA {
		t.Errorf("triggers %v, want two for source tags", calls)
	}

	bad := `{"ref":`
	if got := f.post(t, "infra", bad, github(bad, "bad-1")); got.code != http.StatusBadRequest || got.err == "" {
		t.Errorf("invalid JSON: %+v", got)
	}
}

func TestBranchDeletion(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	body := pushBody("main", zeroSHA)
	if got := f.post(t, "infra", body, github(body, "del-1")); got.code != http.StatusAccepted {
		t.Fatalf("got %+v", got)
	}
	// The syncer finds out for itself what the head is now.
	if calls := f.trigger.got(); len(calls) != 1 || calls[0] != "infra@" {
		t.Errorf("triggers %v", calls)
	}
}

func TestRedelivery(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	body := pushBody("main", commitA)
	first := f.post(t, "infra", body, github(body, "72d3162e-cc78-11e3-81ab-4c9367dc0958"))
	again := f.post(t, "infra", body, github(body, "72d3162e-cc78-11e3-81ab-4c9367dc0958"))
	if first.code != http.StatusAccepted || first.status != "accepted" {
		t.Errorf("first: %+v", first)
	}
	if again.code != http.StatusAccepted || again.status != "duplicate delivery" {
		t.Errorf("redelivery: %+v", again)
	}
	// The same id for another source is another delivery.
	if got := f.post(t, "tags", body, github(body, "72d3162e-cc78-11e3-81ab-4c9367dc0958")); got.status != "accepted" {
		t.Errorf("other source: %+v", got)
	}
	// GitLab: Idempotency-Key survives GitLab's retries.
	gl := map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": secret, "Idempotency-Key": "idem-1", "X-Gitlab-Event-UUID": "ev-1"}
	if got := f.post(t, "infra", body, gl); got.status != "accepted" {
		t.Errorf("gitlab first: %+v", got)
	}
	gl["X-Gitlab-Event-UUID"] = "ev-2"
	if got := f.post(t, "infra", body, gl); got.status != "duplicate delivery" {
		t.Errorf("gitlab retry: %+v", got)
	}
	// A very long generic request id is stored by its digest, and still dedupes.
	long := map[string]string{"Authorization": "Bearer " + secret, "X-Request-Id": strings.Repeat("r", 500)}
	if got := f.post(t, "infra", body, long); got.status != "accepted" {
		t.Errorf("long id: %+v", got)
	}
	if got := f.post(t, "infra", body, long); got.status != "duplicate delivery" {
		t.Errorf("long id again: %+v", got)
	}
	// Without an id there is nothing to dedupe by: every delivery triggers.
	for range 2 {
		if got := f.post(t, "infra", body, map[string]string{"Authorization": "Bearer " + secret}); got.status != "accepted" {
			t.Errorf("no id: %+v", got)
		}
	}
	if calls := f.trigger.got(); len(calls) != 6 {
		t.Errorf("%d triggers, want 6: %v", len(calls), calls)
	}
}

func TestStoreDownStillTriggers(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.st.Close()
	body := pushBody("main", commitA)
	if got := f.post(t, "infra", body, github(body, "down-1")); got.code != http.StatusAccepted {
		t.Fatalf("got %+v", got)
	}
	if calls := f.trigger.got(); len(calls) != 1 {
		t.Errorf("triggers %v", calls)
	}
	if !strings.Contains(f.logs.String(), "could not record webhook delivery") {
		t.Errorf("no warning logged:\n%s", f.logs.String())
	}
}

// TestFlood runs on a frozen clock: exactly the burst is accepted, then 429 with Retry-After,
// and the bucket refills at PerSecond.
func TestFlood(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	var mu sync.Mutex
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.h.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	body := pushBody("main", commitA)
	// Forgeries do not drain the bucket.
	for i := range 50 {
		h := github(body, fmt.Sprintf("forged-%d", i))
		h["X-Hub-Signature-256"] = sign("guess", body)
		if got := f.post(t, "infra", body, h); got.code != http.StatusUnauthorized {
			t.Fatalf("forgery: %+v", got)
		}
	}
	codes := map[int]int{}
	for i := range 100 {
		got := f.post(t, "infra", body, github(body, fmt.Sprintf("flood-%d", i)))
		codes[got.code]++
		if got.code == http.StatusTooManyRequests && got.retryAfter != "1" {
			t.Errorf("Retry-After %q, want 1", got.retryAfter)
		}
	}
	if codes[http.StatusAccepted] != DefaultBurst || codes[http.StatusTooManyRequests] != 100-DefaultBurst {
		t.Errorf("answers %v, want %d×202 then 429s", codes, DefaultBurst)
	}
	if n := len(f.trigger.got()); n != DefaultBurst {
		t.Errorf("%d triggers, want %d", n, DefaultBurst)
	}
	// Other sources have their own bucket.
	if got := f.post(t, "tags", body, github(body, "other-1")); got.code != http.StatusAccepted {
		t.Errorf("other source: %+v", got)
	}
	advance(time.Second) // PerSecond tokens come back
	accepted := 0
	for i := range 20 {
		if got := f.post(t, "infra", body, github(body, fmt.Sprintf("later-%d", i))); got.code == http.StatusAccepted {
			accepted++
		}
	}
	if accepted != DefaultPerSecond {
		t.Errorf("after 1s: %d accepted, want %d", accepted, DefaultPerSecond)
	}
}

// TestFloodRealClock sends 100 deliveries at once on the real clock: no more triggers than
// accepted deliveries, and no more accepted than the bucket allows for the time it took.
func TestFloodRealClock(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	body := pushBody("main", commitA)
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for i := range 100 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, f.url+"/hooks/infra", strings.NewReader(body))
			for k, v := range github(body, fmt.Sprintf("rc-%d", i)) {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			mu.Lock()
			codes[resp.StatusCode]++
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	accepted := codes[http.StatusAccepted]
	limit := DefaultBurst + int(elapsed.Seconds()*DefaultPerSecond) + 1
	if accepted < DefaultBurst || accepted > limit || codes[http.StatusTooManyRequests]+accepted != 100 {
		t.Errorf("answers %v in %s (at most %d may be accepted)", codes, elapsed, limit)
	}
	if n := len(f.trigger.got()); n != accepted {
		t.Errorf("%d triggers for %d accepted deliveries", n, accepted)
	}
}

// A reload replaces the sources: an added one answers, a removed one is unknown.
func TestSetSourcesReload(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.h.SetSources(map[string]Source{"infra": {Secret: secret, Branch: "main"}, "added": {Secret: secret, Branch: "main"}})
	body := pushBody("main", commitA)
	if got := f.post(t, "added", body, github(body, "r-1")); got.code != http.StatusAccepted {
		t.Errorf("added source: %+v", got)
	}
	if got := f.post(t, "tags", body, github(body, "r-2")); got.code != http.StatusNotFound {
		t.Errorf("removed source: %+v", got)
	}
	if got := f.post(t, "infra", body, github(body, "r-3")); got.code != http.StatusAccepted {
		t.Errorf("kept source: %+v", got)
	}
}
