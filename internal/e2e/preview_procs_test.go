//go:build linux

package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/commitstatus/forgetest"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

const (
	previewHookSecret = "preview-hook-secret-value"
	previewForgeToken = "ghp_PreviewForgeToken0123456789"
)

const previewTypes = `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Queue}
spec:
  group: mq.example.com
  versions:
    - name: v1
      schema: {type: object, properties: {size: {type: integer}}}
  action: {name: provision}
`

func previewQueue(name string, size any) string {
	return fmt.Sprintf("apiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: %s}\nspec: {size: %v}\n", name, size)
}

// TestProcsPreview: the real binary previews pull requests (GitHub) and merge requests
// (GitLab) of a local repository: a signed webhook → one status and one comment, which says
// what a policy of the controller's would hold after merge; a second
// push edits the comment; an invalid manifest fails the status with its file:line; the
// applied state and the action's call log never move.
func TestProcsPreview(t *testing.T) {
	for _, gitlab := range []bool{false, true} {
		t.Run(map[bool]string{false: "github", true: "gitlab"}[gitlab], func(t *testing.T) {
			t.Parallel()
			testProcsPreview(t, gitlab)
		})
	}
}

func testProcsPreview(t *testing.T, gitlab bool) {
	forge := forgetest.New(previewForgeToken, gitlab)
	t.Cleanup(forge.Close)
	w := procSetup(t, pgtest.NewDatabase(t, store.MigrateURL), "0")
	w.plan = true
	provider := map[bool]string{false: "github", true: "gitlab"}[gitlab]
	w.source = map[string]any{
		"webhook":      map[string]any{"secret": previewHookSecret},
		"commitStatus": map[string]any{"provider": provider, "token": previewForgeToken, "baseURL": forge.URL + "/", "repo": "acme/infra"},
		"preview":      map[string]any{"enabled": true, "planTimeout": "10s"},
	}
	// A policy of the controller's: the comment says what it would hold after merge.
	w.config = map[string]any{"policies": []any{map[string]any{"name": "queue-c-reviewed", "match": map[string]any{"kinds": []string{"Queue"}},
		"when": "resource.name == 'c' && change.type == 'create'", "action": "requireApproval", "approvals": map[string]any{"from": []any{map[string]string{"token": "release-bot"}}}}}}
	main := w.commit(map[string]string{"manifests/types.yaml": previewTypes, "manifests/a.yaml": previewQueue("a", 1),
		"manifests/b.yaml": previewQueue("b", 1)}, "queues a and b")
	// Two replicas: a redelivery (same delivery id) reaching both is previewed once.
	w.start(2)
	w.waitReady(60*time.Second, map[string]int64{"default/Queue/a": 1, "default/Queue/b": 1})
	calls := len(w.calls())
	applied := previewApplied(w)

	pv := &previewForge{w: w, forge: forge, gitlab: gitlab, main: main}
	pr, hook, final := pv.pr, pv.hook, pv.final
	sha1 := pr(7, map[string]string{"manifests/a.yaml": previewQueue("a", 2), "manifests/c.yaml": previewQueue("c", 3)})
	hook(7, "opened", sha1, w.replicas...)
	if st := final(sha1); st.State != "success" || !strings.Contains(st.Description, "1 to add, 1 to change, 0 to delete") {
		t.Fatalf("status %+v", st)
	}
	cs := forge.Comments()
	if len(cs) != 1 || cs[0].Number != 7 {
		t.Fatalf("comments %+v", cs)
	}
	for _, want := range []string{"1 to add, 1 to change, 0 to delete, 1 unchanged, 0 invalid", "Queue/default/c", "-  \"size\": 1\n+  \"size\": 2",
		"⏸ After merge: needs 1 approval from token release-bot (policy queue-c-reviewed)"} {
		if !strings.Contains(cs[0].Body, want) {
			t.Errorf("comment lacks %q:\n%s", want, cs[0].Body)
		}
	}
	// The exec action's plan: summary and text of each changed resource.
	for _, want := range []string{"1 to change (size 2)", "Plan output for a: size -> 2", "Plan output for c: size -> 3"} {
		if !strings.Contains(cs[0].Body, want) {
			t.Errorf("comment lacks the plan %q:\n%s", want, cs[0].Body)
		}
	}

	sha2 := pr(7, map[string]string{"manifests/a.yaml": previewQueue("a", 4)})
	hook(7, "synchronize", sha2)
	final(sha2)
	cs = forge.Comments()
	if len(cs) != 1 || cs[0].Edits != 1 || !strings.Contains(cs[0].Body, sha2[:12]) {
		t.Fatalf("after the second push: %+v", cs)
	}

	sha3 := pr(8, map[string]string{"manifests/b.yaml": previewQueue("b", `"big"`)})
	hook(8, "opened", sha3)
	st := final(sha3)
	failure := map[bool]string{false: "failure", true: "failed"}[gitlab]
	if st.State != failure || !strings.Contains(st.Description, "manifests/b.yaml:4") {
		t.Errorf("status of the invalid request %+v", st)
	}
	cs = forge.Comments()
	if len(cs) != 2 || !strings.Contains(cs[1].Body, "manifests/b.yaml:4: spec.size:") {
		t.Fatalf("comments %+v", cs)
	}

	if got := previewApplied(w); got != applied {
		t.Errorf("the applied state moved:\n%s\n%s", applied, got)
	}
	if got := len(w.calls()); got != calls {
		t.Errorf("the action was called %d more times", got-calls)
	}
}

// previewForge drives previews of a procWorld's repository through the fake forge: pull
// requests (GitLab merge requests) from main, signed webhooks and the final statuses.
type previewForge struct {
	w          *procWorld
	forge      *forgetest.Forge
	gitlab     bool
	main       string // the commit requests branch from
	deliveries int
}

// pr commits files on a branch from main, points the request's ref at it, and goes back.
func (p *previewForge) pr(number int, files map[string]string) string {
	t, w := p.w.t, p.w
	t.Helper()
	branch := fmt.Sprintf("pr%d", number)
	if strings.Contains(git(t, w.repo, "branch", "--list", branch), branch) {
		git(t, w.repo, "checkout", "-q", branch)
	} else {
		git(t, w.repo, "checkout", "-q", "-b", branch, p.main)
	}
	sha := w.commit(files, "pull request change")
	ref := fmt.Sprintf("refs/pull/%d/head", number)
	if p.gitlab {
		ref = fmt.Sprintf("refs/merge-requests/%d/head", number)
	}
	git(t, w.repo, "update-ref", ref, sha)
	git(t, w.repo, "checkout", "-q", "main")
	return sha
}

// hook delivers the request's webhook (to the first replica when to names none).
func (p *previewForge) hook(number int, action, sha string, to ...*procReplica) {
	t, w := p.w.t, p.w
	t.Helper()
	p.deliveries++
	if len(to) == 0 {
		to = w.replicas[:1]
	}
	body := fmt.Sprintf(`{"action":%q,"number":%d,"pull_request":{"number":%d,"title":"t","html_url":"https://github.com/acme/infra/pull/%d","head":{"sha":%q,"repo":{"id":11,"full_name":"acme/infra"}},"base":{"ref":"main","repo":{"id":11,"full_name":"acme/infra"}}}}`,
		action, number, number, number, sha)
	if p.gitlab {
		body = fmt.Sprintf(`{"object_kind":"merge_request","object_attributes":{"iid":%d,"action":%q,"title":"t","url":"https://gitlab.example/acme/infra/-/merge_requests/%d","target_branch":"main","source_project_id":7,"target_project_id":7,"last_commit":{"id":%q}}}`,
			number, map[string]string{"opened": "open", "synchronize": "update"}[action], number, sha)
	}
	for _, r := range to {
		req, err := http.NewRequest(http.MethodPost, "http://"+r.addr+"/hooks/infra", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = previewHeaders(p.gitlab, body, p.deliveries)
		resp, err := w.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("webhook to r%d answered %s", r.idx, resp.Status)
		}
	}
}

// final waits (within 5 s of the webhook) until sha has a final status.
func (p *previewForge) final(sha string) forgetest.Status {
	p.w.t.Helper()
	var last forgetest.Status
	p.w.eventually(5*time.Second, "final status of "+sha[:12], func() (bool, string) {
		for _, s := range p.forge.Statuses() {
			if s.SHA == sha && s.Context == "trueup/infra/preview" && s.State != "pending" {
				last = s
			}
		}
		return last.State != "", fmt.Sprintf("statuses %+v", p.forge.Statuses())
	})
	return last
}

func previewHeaders(gitlab bool, body string, delivery int) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	if gitlab {
		h.Set("X-Gitlab-Event", "Merge Request Hook")
		h.Set("X-Gitlab-Token", previewHookSecret)
		h.Set("Idempotency-Key", fmt.Sprintf("delivery-%d", delivery))
		return h
	}
	mac := hmac.New(sha256.New, []byte(previewHookSecret))
	mac.Write([]byte(body))
	h.Set("X-GitHub-Event", "pull_request")
	h.Set("X-GitHub-Delivery", fmt.Sprintf("delivery-%d", delivery))
	h.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	return h
}

// previewApplied is the applied state as the API shows it: every resource's generation,
// spec and phase.
func previewApplied(w *procWorld) string {
	w.t.Helper()
	var page procPage
	if err := w.getAny("/api/v1/resources?limit=1000", &page); err != nil {
		w.t.Fatal(err)
	}
	var b strings.Builder
	for _, it := range page.Items {
		fmt.Fprintf(&b, "%s gen %d observed %d %s %s\n", procID(it), it.Metadata.Generation, it.Status.ObservedGeneration, it.Status.Phase, it.Spec)
	}
	return b.String()
}
