package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/trueup-dev/trueup/internal/preview"
)

const headB = "1f3c1e2a9b7d6c5e4f3a2b1c0d9e8f7a6b5c4d3f"

func githubPR(action string, number int, sha string) string {
	return githubPRFrom(action, number, sha, `{"id":11,"full_name":"acme/infra"}`)
}

// githubPRFrom is a pull request whose head is in headRepo (JSON; the base is acme/infra, id 11).
func githubPRFrom(action string, number int, sha, headRepo string) string {
	return fmt.Sprintf(`{"action":%q,"number":%d,"pull_request":{"number":%d,"title":"Grow | the queue","html_url":"https://github.com/acme/infra/pull/%d","head":{"sha":%q,"repo":%s},"base":{"ref":"main","repo":{"id":11,"full_name":"acme/infra"}}}}`,
		action, number, number, number, sha, headRepo)
}

func gitlabMR(action string, iid int, sha string) string {
	return gitlabMRFrom(action, iid, sha, 7)
}

// gitlabMRFrom is a merge request from project source (the target is project 7).
func gitlabMRFrom(action string, iid int, sha string, source int) string {
	return fmt.Sprintf(`{"object_kind":"merge_request","object_attributes":{"iid":%d,"action":%q,"title":"t","url":"https://gitlab.com/acme/infra/-/merge_requests/%d","target_branch":"main","source_project_id":%d,"target_project_id":7,"last_commit":{"id":%q}}}`,
		iid, action, iid, source, sha)
}

func TestParsePullRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, provider, body string
		want                 preview.Event
		ok                   bool
		err                  bool
	}{
		{"github opened", providerGitHub, githubPR("opened", 7, commitA),
			preview.Event{Provider: "github", Number: 7, HeadSHA: commitA, Title: "Grow | the queue", URL: "https://github.com/acme/infra/pull/7"}, true, false},
		{"github synchronize", providerGitHub, githubPR("synchronize", 7, commitA), preview.Event{Provider: "github", Number: 7, HeadSHA: commitA}, true, false},
		{"github reopened", providerGitHub, githubPR("reopened", 7, commitA), preview.Event{Provider: "github", Number: 7, HeadSHA: commitA}, true, false},
		{"github closed", providerGitHub, githubPR("closed", 7, commitA), preview.Event{}, false, false},
		{"github labeled", providerGitHub, githubPR("labeled", 7, commitA), preview.Event{}, false, false},
		{"gitea synchronized", providerGitea, githubPR("synchronized", 3, commitA), preview.Event{Provider: "gitea", Number: 3, HeadSHA: commitA}, true, false},
		{"forgejo opened", providerForgejo, githubPR("opened", 3, commitA), preview.Event{Provider: "gitea", Number: 3, HeadSHA: commitA}, true, false},
		{"gitlab open", providerGitLab, gitlabMR("open", 5, commitA), preview.Event{Provider: "gitlab", Number: 5, HeadSHA: commitA}, true, false},
		{"gitlab update", providerGitLab, gitlabMR("update", 5, commitA), preview.Event{Provider: "gitlab", Number: 5, HeadSHA: commitA}, true, false},
		{"gitlab reopen", providerGitLab, gitlabMR("reopen", 5, commitA), preview.Event{Provider: "gitlab", Number: 5, HeadSHA: commitA}, true, false},
		{"github from a fork", providerGitHub, githubPRFrom("opened", 7, commitA, `{"id":12,"full_name":"mallory/infra"}`),
			preview.Event{Provider: "github", Number: 7, HeadSHA: commitA, Fork: true}, true, false},
		{"github from a deleted fork", providerGitHub, githubPRFrom("synchronize", 7, commitA, "null"),
			preview.Event{Provider: "github", Number: 7, HeadSHA: commitA, Fork: true}, true, false},
		{"gitea from a fork", providerGitea, githubPRFrom("opened", 3, commitA, `{"id":12,"full_name":"mallory/infra"}`),
			preview.Event{Provider: "gitea", Number: 3, HeadSHA: commitA, Fork: true}, true, false},
		{"gitlab from a fork", providerGitLab, gitlabMRFrom("open", 5, commitA, 8),
			preview.Event{Provider: "gitlab", Number: 5, HeadSHA: commitA, Fork: true}, true, false},
		{"gitlab merge", providerGitLab, gitlabMR("merge", 5, commitA), preview.Event{}, false, false},
		{"gitlab approved", providerGitLab, gitlabMR("approved", 5, commitA), preview.Event{}, false, false},
		{"bad sha", providerGitHub, githubPR("opened", 7, "not-a-sha"), preview.Event{}, false, true},
		{"no number", providerGitHub, githubPR("opened", 0, commitA), preview.Event{}, false, true},
		{"not json", providerGitHub, "{", preview.Event{}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev, ok, err := parsePullRequest(http.Header{}, []byte(tc.body), tc.provider)
			if (err != nil) != tc.err || ok != tc.ok {
				t.Fatalf("ok %v err %v", ok, err)
			}
			if !ok {
				return
			}
			if tc.want.Title == "" {
				ev.Title, ev.URL = "", ""
			}
			if ev.Base != "main" {
				t.Errorf("base %q, want main", ev.Base)
			}
			ev.Base = ""
			if !reflect.DeepEqual(ev, tc.want) {
				t.Errorf("event %+v, want %+v", ev, tc.want)
			}
		})
	}
}

func TestFromFork(t *testing.T) {
	t.Parallel()
	base := &prRepo{ID: 11, FullName: "acme/infra"}
	for _, tc := range []struct {
		name       string
		head, base *prRepo
		fork       bool
	}{
		{"same id", &prRepo{ID: 11, FullName: "acme/infra"}, base, false},
		{"other id", &prRepo{ID: 12, FullName: "acme/infra"}, base, true},
		{"same name, no ids", &prRepo{FullName: "Acme/Infra"}, &prRepo{FullName: "acme/infra"}, false},
		{"other name, no ids", &prRepo{FullName: "mallory/infra"}, &prRepo{FullName: "acme/infra"}, true},
		{"deleted fork", nil, base, true},
		{"no base", &prRepo{ID: 11}, nil, true},
		{"nothing to compare", &prRepo{}, &prRepo{}, true},
	} {
		if got := fromFork(tc.head, tc.base); got != tc.fork {
			t.Errorf("%s: fromFork = %v, want %v", tc.name, got, tc.fork)
		}
	}
}

type previews struct {
	mu   sync.Mutex
	evs  []preview.Event
	fail error
}

func (p *previews) submit(ev preview.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		return p.fail
	}
	p.evs = append(p.evs, ev)
	return nil
}

func (p *previews) got() []preview.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]preview.Event(nil), p.evs...)
}

func TestPullRequestEvents(t *testing.T) {
	t.Parallel()
	pv := &previews{}
	f := setup(t, func(o *Options) {
		o.Sources["infra"] = Source{Secret: secret, Branch: "main", Preview: true}
		o.Preview = pv.submit
	})
	ghPR := func(body, delivery string) map[string]string {
		return map[string]string{"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": sign(secret, body)}
	}
	body := githubPR("opened", 7, commitA)
	if r := f.post(t, "infra", body, ghPR(body, "d1")); r.code != http.StatusAccepted || r.status != "preview queued" {
		t.Fatalf("opened: %+v", r)
	}
	// Redelivered: acknowledged, not previewed twice.
	if r := f.post(t, "infra", body, ghPR(body, "d1")); r.code != http.StatusAccepted || r.status != "duplicate delivery" {
		t.Fatalf("redelivery: %+v", r)
	}
	closed := githubPR("closed", 7, commitA)
	if r := f.post(t, "infra", closed, ghPR(closed, "d2")); r.code != http.StatusNoContent {
		t.Fatalf("closed: %+v", r)
	}
	// Badly signed: refused before anything.
	if r := f.post(t, "infra", body, map[string]string{"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "d3", "X-Hub-Signature-256": sign("wrong", body)}); r.code != http.StatusUnauthorized {
		t.Fatalf("bad signature: %+v", r)
	}
	// GitLab, token-authenticated.
	mr := gitlabMR("update", 5, headB)
	if r := f.post(t, "infra", mr, map[string]string{"X-Gitlab-Event": "Merge Request Hook", "X-Gitlab-Token": secret, "Idempotency-Key": "g1"}); r.code != http.StatusAccepted {
		t.Fatalf("gitlab: %+v", r)
	}
	// A source without previews ignores pull requests, as before.
	if r := f.post(t, "tags", body, ghPR(body, "d4")); r.code != http.StatusNoContent {
		t.Fatalf("source without previews: %+v", r)
	}
	got := f.trigger.got()
	if len(got) != 0 {
		t.Errorf("pull requests triggered syncs: %v", got)
	}
	evs := pv.got()
	if len(evs) != 2 || evs[0].Source != "infra" || evs[0].Number != 7 || evs[0].HeadSHA != commitA || evs[0].Delivery != "d1" ||
		evs[1].Provider != preview.ProviderGitLab || evs[1].Number != 5 || evs[1].HeadSHA != headB {
		t.Errorf("previews %+v", evs)
	}
	pv.mu.Lock()
	pv.fail = errors.New("too many pull requests waiting for a preview")
	pv.mu.Unlock()
	sync := githubPR("synchronize", 7, headB)
	if r := f.post(t, "infra", sync, ghPR(sync, "d5")); r.code != http.StatusServiceUnavailable || r.retryAfter == "" {
		t.Fatalf("full queue: %+v", r)
	}
	// The delivery that was not queued is not consumed: its redelivery is queued.
	pv.mu.Lock()
	pv.fail = nil
	pv.mu.Unlock()
	if r := f.post(t, "infra", sync, ghPR(sync, "d5")); r.code != http.StatusAccepted || r.status != "preview queued" {
		t.Fatalf("redelivery after a full queue: %+v", r)
	}
	if evs := pv.got(); len(evs) != 3 || evs[2].HeadSHA != headB {
		t.Errorf("previews %+v", evs)
	}
}

// A pull request to another branch than the source's changes nothing the source applies:
// it is not previewed (as a push to that branch does not sync), on every forge.
func TestPullRequestToAnotherBranch(t *testing.T) {
	t.Parallel()
	pv := &previews{}
	f := setup(t, func(o *Options) {
		o.Sources["infra"] = Source{Secret: secret, Branch: "main", Preview: true}
		o.Sources["tags"] = Source{Secret: secret, Preview: true}
		o.Preview = pv.submit
	})
	gh := strings.Replace(githubPR("opened", 7, commitA), `"ref":"main"`, `"ref":"release"`, 1)
	gl := strings.Replace(gitlabMR("open", 5, commitA), `"target_branch":"main"`, `"target_branch":"release"`, 1)
	if r := f.post(t, "infra", gh, map[string]string{"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "a1", "X-Hub-Signature-256": sign(secret, gh)}); r.code != http.StatusNoContent {
		t.Errorf("github to release: %+v", r)
	}
	if r := f.post(t, "infra", gh, map[string]string{"X-Gitea-Event": "pull_request", "X-Gitea-Delivery": "a2", "X-Hub-Signature-256": sign(secret, gh)}); r.code != http.StatusNoContent {
		t.Errorf("gitea to release: %+v", r)
	}
	if r := f.post(t, "infra", gl, map[string]string{"X-Gitlab-Event": "Merge Request Hook", "X-Gitlab-Token": secret, "Idempotency-Key": "a3"}); r.code != http.StatusNoContent {
		t.Errorf("gitlab to release: %+v", r)
	}
	if evs := pv.got(); len(evs) != 0 {
		t.Errorf("previewed %+v", evs)
	}
	// A source tracking no branch previews pull requests to any.
	if r := f.post(t, "tags", gh, map[string]string{"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "a4", "X-Hub-Signature-256": sign(secret, gh)}); r.code != http.StatusAccepted {
		t.Errorf("source without a branch: %+v", r)
	}
}

// Before previews, a pull-request event was answered 204; a source without them still is.
func TestPullRequestIgnoredWithoutPreview(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	body := githubPR("opened", 7, commitA)
	r := f.post(t, "infra", body, map[string]string{"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "x", "X-Hub-Signature-256": sign(secret, body)})
	if r.code != http.StatusNoContent || len(f.trigger.got()) != 0 {
		t.Fatalf("answer %+v, triggers %v", r, f.trigger.got())
	}
}

// A title cut inside a UTF-8 character, or holding NUL bytes, is refused by PostgreSQL:
// the pull request would never be previewed.
func TestPullRequestTitleStorable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, title, url string }{
		{"cut in a rune", strings.Repeat("a", 255) + "é", "https://github.com/acme/infra/pull/7"},
		{"NUL bytes", "grow\u0000 the queue", "https://github.com/acme/infra/pull/7\u0000"},
		{"invalid UTF-8", "grow \xff\xfe the queue", "https://github.com/acme/\xffinfra/pull/7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			title, _ := json.Marshal(tc.title)
			url, _ := json.Marshal(tc.url)
			body := `{"action":"opened","number":7,"pull_request":{"number":7,"title":` + string(title) + `,"html_url":` + string(url) + `,"head":{"sha":"` + commitA + `"}}}`
			ev, ok, err := parsePullRequest(http.Header{}, []byte(body), providerGitHub)
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			for _, s := range []string{ev.Title, ev.URL} {
				if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
					t.Errorf("not storable: %q", s)
				}
			}
			if ev.Title == "" {
				t.Error("title dropped")
			}
		})
	}
}
