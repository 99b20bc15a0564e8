package preview

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/commitstatus"
	"github.com/trueup-dev/trueup/internal/commitstatus/forgetest"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
	"github.com/trueup-dev/trueup/sources/gitsource"
)

const token = "ghp_PreviewTestToken0123456789"

var typeDoc = manifesttest.TypeDoc("Queue", "mq.example.com", "{type: object, properties: {size: {type: integer}}}", "planner")

func queueDoc(name string, size any) string {
	return fmt.Sprintf("apiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: %s}\nspec: {size: %v}\n", name, size)
}

// planner is an action whose Plan the test controls; Reconcile and Delete must never run.
type planner struct {
	mu    sync.Mutex
	calls []string // "plan a", "reconcile a", …
	block map[string]chan struct{}
}

func (p *planner) record(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, s)
}

func (p *planner) Reconcile(_ context.Context, req actions.Request) (actions.Result, error) {
	p.record("reconcile " + req.Resource.Name)
	return actions.Result{Done: true}, nil
}

func (p *planner) Delete(_ context.Context, req actions.Request) (actions.Result, error) {
	p.record("delete " + req.Resource.Name)
	return actions.Result{Done: true}, nil
}

func (p *planner) Plan(ctx context.Context, req actions.Request) (actions.Plan, error) {
	p.record("plan " + req.Resource.Name)
	p.mu.Lock()
	ch := p.block[req.Resource.Name]
	p.mu.Unlock()
	if ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
			return actions.Plan{}, ctx.Err()
		}
	}
	if req.Resource.Name == "noplan" {
		return actions.Plan{}, actions.ErrNoPlan
	}
	return actions.Plan{Changes: true, Summary: "1 to change", Text: "queue " + req.Resource.Name + " spec " + string(req.Resource.Spec)}, nil
}

func (p *planner) reconciled() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, c := range p.calls {
		if !strings.HasPrefix(c, "plan ") {
			out = append(out, c)
		}
	}
	return out
}

type repo struct {
	t   *testing.T
	dir string
}

func (r *repo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit writes files (an empty content removes the file) on a detached head from parent
// and returns the commit.
func (r *repo) commit(parent string, files map[string]string) string {
	r.t.Helper()
	if parent != "" {
		r.git("checkout", "-q", "--detach", parent)
	}
	for name, data := range files {
		p := filepath.Join(r.dir, name)
		if data == "" {
			_ = os.Remove(p)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	r.git("add", "-A")
	r.git("commit", "-q", "--allow-empty", "-m", "change")
	return r.git("rev-parse", "HEAD")
}

type fixture struct {
	st     *store.Store
	repo   *repo
	main   string
	act    *planner
	forge  *forgetest.Forge
	runner *Runner
	runs   chan Event
}

var mainFiles = map[string]string{"types.yaml": typeDoc, "queues/a.yaml": queueDoc("a", 1), "queues/b.yaml": queueDoc("b", 1)}

func setup(t *testing.T, gitlab bool) *fixture {
	t.Helper()
	ctx := context.Background()
	st := openStore(t, store.SourceConfig{Name: "infra", URL: "file:///x", Branch: "main"})
	r := &repo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	f := &fixture{st: st, repo: r, act: &planner{block: map[string]chan struct{}{}}, runs: make(chan Event, 16)}
	f.main = r.commit("", mainFiles)
	var files []sources.File
	for name, data := range mainFiles {
		files = append(files, sources.File{Path: name, Data: []byte(data)})
	}
	set, err := manifest.NewLoader().Load(files, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyRevision(ctx, store.ApplyParams{Source: "infra", Revision: f.main, Set: set, Prune: true}); err != nil {
		t.Fatal(err)
	}
	src, err := gitsource.New(gitsource.Config{Name: "infra", URL: r.dir, Dir: filepath.Join(t.TempDir(), "mirror")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	f.forge = forgetest.New(token, gitlab)
	t.Cleanup(f.forge.Close)
	provider := commitstatus.ProviderGitHub
	if gitlab {
		provider = commitstatus.ProviderGitLab
	}
	pub, err := commitstatus.NewPreviewer(commitstatus.Config{Provider: provider, Token: token, BaseURL: f.forge.URL + "/", Repo: "acme/infra"}, "infra")
	if err != nil {
		t.Fatal(err)
	}
	f.runner = New(Options{Source: "infra", Store: st, Fetcher: src, Publisher: pub, ExternalURL: "http://127.0.0.1:8080/",
		Checker: &Checker{Source: "infra", Store: st, Loader: manifest.NewLoader(), Prune: true, Actions: map[string]actions.Action{"planner": f.act},
			PlanTimeout: 5 * time.Second},
		Logger: slog.New(slog.DiscardHandler)})
	f.runner.runs = f.runs
	if err := f.runner.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.runner.Stop)
	return f
}

// pr points the pull request's ref at a new commit from main with files and returns it.
func (f *fixture) pr(number int, gitlab bool, files map[string]string) string {
	sha := f.repo.commit(f.main, files)
	ref := fmt.Sprintf("refs/pull/%d/head", number)
	if gitlab {
		ref = fmt.Sprintf("refs/merge-requests/%d/head", number)
	}
	f.repo.git("update-ref", ref, sha)
	return sha
}

func (f *fixture) wait(t *testing.T, sha string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-f.runs:
			if ev.HeadSHA == sha {
				return
			}
		case <-deadline:
			t.Fatalf("no preview of %s", sha)
		}
	}
}

func (f *fixture) applied(t *testing.T) string {
	t.Helper()
	var s string
	err := f.st.Pool().QueryRow(context.Background(), `SELECT string_agg(name || ':' || generation || ':' || spec::text || ':' || (deletion_timestamp IS NULL), ',' ORDER BY name)
		FROM resources`).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRunnerPreviewsPullRequests(t *testing.T) {
	t.Parallel()
	for _, gitlab := range []bool{false, true} {
		t.Run(map[bool]string{false: "github", true: "gitlab"}[gitlab], func(t *testing.T) {
			t.Parallel()
			f := setup(t, gitlab)
			before := f.applied(t)
			provider := map[bool]string{false: ProviderGitHub, true: ProviderGitLab}[gitlab]
			sha1 := f.pr(7, gitlab, map[string]string{"queues/a.yaml": queueDoc("a", 2), "queues/c.yaml": queueDoc("c", 3)})
			if err := f.runner.Submit(Event{Source: "infra", Provider: provider, Number: 7, HeadSHA: sha1}); err != nil {
				t.Fatal(err)
			}
			f.wait(t, sha1)
			cs := f.forge.Comments()
			if len(cs) != 1 || cs[0].Number != 7 || cs[0].Edits != 0 {
				t.Fatalf("comments %+v", cs)
			}
			body := cs[0].Body
			for _, want := range []string{"1 to add, 1 to change, 0 to delete, 1 unchanged, 0 invalid", "| + add | Queue/default/c | queues/c.yaml:1 | 1 to change |",
				"-  \"size\": 1\n+  \"size\": 2", "queue a spec {\"size\":2}", "queue c spec {\"size\":3}", "http://127.0.0.1:8080/sources/infra/previews/7"} {
				if !strings.Contains(body, want) {
					t.Errorf("comment lacks %q:\n%s", want, body)
				}
			}
			st := f.forge.Statuses()
			success := "success"
			if len(st) != 2 || st[0].State != "pending" || st[1].State != success || st[1].SHA != sha1 || st[1].Context != "trueup/infra/preview" {
				t.Errorf("statuses %+v", st)
			}
			p, err := f.st.GetPreview(context.Background(), "infra", 7)
			if err != nil || p.State != store.PreviewSucceeded || p.HeadSHA != sha1 || p.BaseRevision != f.main || p.CommentID == "" {
				t.Fatalf("preview row %+v %v", p, err)
			}
			var res Result
			if err := json.Unmarshal(p.Result, &res); err != nil || res.Counts != (Counts{Add: 1, Change: 1, Unchanged: 1}) {
				t.Errorf("stored result %+v %v", res, err)
			}

			// A second push: the same comment, edited.
			sha2 := f.pr(7, gitlab, map[string]string{"queues/a.yaml": queueDoc("a", 5)})
			if err := f.runner.Submit(Event{Source: "infra", Provider: provider, Number: 7, HeadSHA: sha2}); err != nil {
				t.Fatal(err)
			}
			f.wait(t, sha2)
			cs = f.forge.Comments()
			if len(cs) != 1 || cs[0].Edits != 1 || !strings.Contains(cs[0].Body, "0 to add, 1 to change, 0 to delete, 1 unchanged") {
				t.Fatalf("comments after the second push %+v", cs)
			}

			// An invalid manifest: failure, file:line in the comment.
			sha3 := f.pr(8, gitlab, map[string]string{"queues/b.yaml": queueDoc("b", `"big"`)})
			if err := f.runner.Submit(Event{Source: "infra", Provider: provider, Number: 8, HeadSHA: sha3}); err != nil {
				t.Fatal(err)
			}
			f.wait(t, sha3)
			cs = f.forge.Comments()
			if len(cs) != 2 || cs[1].Number != 8 || !strings.Contains(cs[1].Body, "queues/b.yaml:4: spec.size:") || !strings.Contains(cs[1].Body, "1 invalid") {
				t.Fatalf("comment of the invalid PR %+v", cs)
			}
			st = f.forge.Statuses()
			last := st[len(st)-1]
			failure := map[bool]string{false: "failure", true: "failed"}[gitlab]
			if last.SHA != sha3 || last.State != failure || !strings.Contains(last.Description, "queues/b.yaml:4") {
				t.Errorf("status of the invalid PR %+v", last)
			}

			if after := f.applied(t); after != before {
				t.Errorf("applied state changed:\n%s\n%s", before, after)
			}
			if calls := f.act.reconciled(); len(calls) != 0 {
				t.Errorf("the action was called to act: %v", calls)
			}
		})
	}
}

// A newer head of a pull request cancels the preview of the older one running: only the
// newer one is published.
func TestRunnerSupersedes(t *testing.T) {
	t.Parallel()
	f := setup(t, false)
	gate := make(chan struct{})
	f.act.mu.Lock()
	f.act.block["slow"] = gate
	f.act.mu.Unlock()
	sha1 := f.pr(9, false, map[string]string{"queues/slow.yaml": queueDoc("slow", 1)})
	if err := f.runner.Submit(Event{Source: "infra", Provider: ProviderGitHub, Number: 9, HeadSHA: sha1}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.act.mu.Lock()
		n := len(f.act.calls)
		f.act.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow plan never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	sha2 := f.pr(9, false, map[string]string{"queues/d.yaml": queueDoc("d", 1)})
	if err := f.runner.Submit(Event{Source: "infra", Provider: ProviderGitHub, Number: 9, HeadSHA: sha2}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, sha1)
	f.wait(t, sha2)
	cs := f.forge.Comments()
	if len(cs) != 1 || cs[0].Edits != 0 || !strings.Contains(cs[0].Body, "Queue/default/d") || strings.Contains(cs[0].Body, "slow") {
		t.Fatalf("comments %+v", cs)
	}
	for _, s := range f.forge.Statuses() {
		if s.SHA == sha1 && s.State != "pending" {
			t.Errorf("the superseded head got a final status: %+v", s)
		}
	}
}

// The same head against the same applied revision is not previewed again (a GitLab update
// of the title, a reopened pull request).
func TestRunnerSkipsUnchanged(t *testing.T) {
	t.Parallel()
	f := setup(t, true)
	sha := f.pr(4, true, map[string]string{"queues/c.yaml": queueDoc("c", 3)})
	for range 2 {
		if err := f.runner.Submit(Event{Source: "infra", Provider: ProviderGitLab, Number: 4, HeadSHA: sha}); err != nil {
			t.Fatal(err)
		}
		f.wait(t, sha)
	}
	if cs, st := f.forge.Comments(), f.forge.Statuses(); len(cs) != 1 || cs[0].Edits != 0 || len(st) != 2 {
		t.Fatalf("comments %+v statuses %+v", cs, st)
	}
}

// cancelOnCreate creates the comment, then (once) has the running preview cancelled before
// answering: the forge holds the comment, the runner has yet to store its id.
type cancelOnCreate struct {
	Publisher
	once     sync.Once
	onCreate func()
}

func (c *cancelOnCreate) CreateComment(ctx context.Context, number int, body string) (string, string, error) {
	id, link, err := c.Publisher.CreateComment(context.WithoutCancel(ctx), number, body)
	c.once.Do(c.onCreate)
	return id, link, err
}

// A preview superseded while it publishes still stores the comment it created, so that the
// next preview edits that comment instead of creating a second one.
func TestRunnerPublishesToTheEndOnceComputed(t *testing.T) {
	t.Parallel()
	f := setup(t, false)
	f.runner.Stop()
	opts := f.runner.opts
	sha1 := f.pr(7, false, map[string]string{"queues/a.yaml": queueDoc("a", 2)})
	sha2 := f.pr(7, false, map[string]string{"queues/a.yaml": queueDoc("a", 3)})
	wrap := &cancelOnCreate{Publisher: opts.Publisher}
	opts.Publisher = wrap
	r := New(opts)
	r.runs = f.runs
	wrap.onCreate = func() {
		if err := r.Submit(Event{Source: "infra", Provider: ProviderGitHub, Number: 7, HeadSHA: sha2}); err != nil {
			t.Error(err)
		}
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	if err := r.Submit(Event{Source: "infra", Provider: ProviderGitHub, Number: 7, HeadSHA: sha1}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, sha2)
	p, err := f.st.GetPreview(context.Background(), "infra", 7)
	if err != nil {
		t.Fatal(err)
	}
	if cs := f.forge.Comments(); len(cs) != 1 || !strings.Contains(cs[0].Body, "1 to change") || p.CommentID != strconv.FormatInt(cs[0].ID, 10) {
		t.Fatalf("stored comment id %q, comments %+v", p.CommentID, cs)
	}
}

// A preview left Running by a replica that is gone is ended when a runner starts: Error in
// the row, an error status on the forge (a required check is not pending forever).
func TestRunnerEndsInterruptedPreviews(t *testing.T) {
	t.Parallel()
	f := setup(t, false)
	f.runner.Stop()
	sha := strings.Repeat("cd", 20)
	if _, err := f.st.SavePreview(context.Background(), store.Preview{Source: "infra", Number: 4, Provider: ProviderGitHub, HeadSHA: sha,
		State: store.PreviewRunning, Replica: "gone"}); err != nil {
		t.Fatal(err)
	}
	opts := f.runner.opts
	opts.Replica = "me"
	r := New(opts)
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	deadline := time.After(10 * time.Second)
	for {
		st := f.forge.Statuses()
		if len(st) == 1 {
			if st[0].SHA != sha || st[0].State != "error" || !strings.Contains(st[0].Description, "interrupted") {
				t.Fatalf("status %+v", st[0])
			}
			break
		}
		select {
		case <-f.forge.Changed():
		case <-deadline:
			t.Fatalf("no status; statuses %+v", st)
		}
	}
	if p, err := f.st.GetPreview(context.Background(), "infra", 4); err != nil || p.State != store.PreviewError {
		t.Fatalf("row %+v %v", p, err)
	}
}
