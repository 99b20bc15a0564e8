package commitstatus

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/commitstatus/forgetest"
	"github.com/trueup-dev/trueup/internal/forge/ratelimit"
)

func TestPreviewer(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{ProviderGitHub, ProviderGitea, ProviderGitLab} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			f := forgetest.New(token, provider == ProviderGitLab)
			defer f.Close()
			base, repo := f.URL, "acme/infra"
			if provider == ProviderGitea {
				base += "/api/v1/"
			}
			p, err := NewPreviewer(Config{Provider: provider, Token: token, BaseURL: base, Repo: repo, Pauses: new(ratelimit.Registry)}, "infra")
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			long := strings.Repeat("x", 300)
			if err := p.SetStatus(ctx, rev1, PreviewFailure, "invalid: "+long, "http://trueup.example/sources/infra/previews/7"); err != nil {
				t.Fatal(err)
			}
			st := f.Statuses()
			wantState := map[string]string{ProviderGitLab: "failed"}[provider]
			if wantState == "" {
				wantState = "failure"
			}
			if len(st) != 1 || st[0].SHA != rev1 || st[0].State != wantState || st[0].Context != "trueup/infra/preview" ||
				len([]rune(st[0].Description)) > maxDescription || st[0].TargetURL != "http://trueup.example/sources/infra/previews/7" {
				t.Fatalf("statuses %+v", st)
			}
			id, _, err := p.CreateComment(ctx, 7, "first")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.EditComment(ctx, 7, id, "second"); err != nil {
				t.Fatal(err)
			}
			cs := f.Comments()
			if len(cs) != 1 || cs[0].Body != "second" || cs[0].Edits != 1 || cs[0].Number != 7 {
				t.Fatalf("comments %+v", cs)
			}
			f.DeleteComments()
			if _, err := p.EditComment(ctx, 7, id, "third"); !errors.Is(err, ErrCommentNotFound) {
				t.Fatalf("edit of a deleted comment: %v", err)
			}
			bad, _ := NewPreviewer(Config{Provider: provider, Token: "wrong-token-value", BaseURL: base, Repo: repo, Pauses: new(ratelimit.Registry)}, "infra")
			if _, _, err := bad.CreateComment(ctx, 7, "x"); err == nil || strings.Contains(err.Error(), "wrong-token-value") {
				t.Fatalf("bad token: %v", err)
			}
		})
	}
}

// A status and an edit are retried after a 5xx; a creation is not (its answer lost on the
// way would leave two comments).
func TestPreviewerRetries(t *testing.T) {
	t.Parallel()
	f := forgetest.New(token, false)
	var mu sync.Mutex
	calls := map[string]int{}
	f.Fail = func(_ http.Header, r *http.Request) int {
		mu.Lock()
		defer mu.Unlock()
		key := r.Method + " " + strings.Join(strings.Split(r.URL.Path, "/")[:4], "/") // "POST /repos/acme/infra"
		if strings.Contains(r.URL.Path, "/comments") {
			key += " comments"
		}
		calls[key]++
		if calls[key] == 1 {
			return http.StatusBadGateway
		}
		return 0
	}
	defer f.Close()
	p, err := NewPreviewer(Config{Provider: ProviderGitHub, Token: token, BaseURL: f.URL, Repo: "acme/infra", Pauses: new(ratelimit.Registry)}, "infra")
	if err != nil {
		t.Fatal(err)
	}
	p.retryDelays = []time.Duration{time.Millisecond}
	ctx := context.Background()
	if err := p.SetStatus(ctx, rev1, PreviewSuccess, "ok", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.CreateComment(ctx, 7, "x"); err == nil {
		t.Fatal("a failed creation was retried or ignored")
	}
	id, _, err := p.CreateComment(ctx, 7, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.EditComment(ctx, 7, id, "y"); err != nil {
		t.Fatal(err)
	}
	if cs := f.Comments(); len(f.Statuses()) != 1 || len(cs) != 1 || cs[0].Body != "y" {
		t.Fatalf("statuses %+v comments %+v", f.Statuses(), cs)
	}
}

// TestRateLimitShared: a rate limit one previewer meets holds the statuses of another of the
// same token at the same forge, unsent, on either forge: they call through the forge client
// packages, whose pause is the credential's.
func TestRateLimitShared(t *testing.T) {
	t.Parallel()
	onEachForge(t, func(t *testing.T, provider string, f *forgetest.Forge) {
		var requests atomic.Int64
		f.Fail = func(http.Header, *http.Request) int {
			if requests.Add(1) == 1 {
				return http.StatusTooManyRequests // names no reset: a minute
			}
			return 0
		}
		cfg := Config{Provider: provider, Token: token, BaseURL: f.URL, Repo: "acme/infra", Pauses: new(ratelimit.Registry)}
		var ps [2]*Previewer
		for i := range ps {
			p, err := NewPreviewer(cfg, "infra")
			if err != nil {
				t.Fatal(err)
			}
			p.retryDelays = []time.Duration{time.Millisecond}
			p.maxWait = time.Millisecond // the retry is refused unsent: the pause lasts a minute
			ps[i] = p
		}
		ctx := context.Background()
		if err := ps[0].SetStatus(ctx, rev1, PreviewSuccess, "ok", ""); err == nil {
			t.Fatal("a status answered 429 succeeded")
		}
		err := ps[1].SetStatus(ctx, rev1, PreviewSuccess, "ok", "")
		if err == nil || !strings.Contains(err.Error(), "rate limit") {
			t.Errorf("the other previewer's status: %v, want the rate limit", err)
		}
		if n := requests.Load(); n != 1 || len(f.Statuses()) != 0 {
			t.Errorf("%d requests reached the forge, %d statuses; want the first alone", n, len(f.Statuses()))
		}
	})
}

// TestStatusAnswerNotJSON: any 2xx is a status posted, whatever its body (Gitea variants
// answer with one that is not JSON): it is neither a failure nor retried.
func TestStatusAnswerNotJSON(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{ProviderGitHub, ProviderGitea} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			var requests atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				w.Header().Set("Content-Type", "text/plain")
				w.WriteHeader(http.StatusCreated)
				_, _ = w.Write([]byte("created"))
			}))
			defer srv.Close()
			base := srv.URL
			if provider == ProviderGitea {
				base += "/api/v1/"
			}
			p, err := NewPreviewer(Config{Provider: provider, Token: token, BaseURL: base, Repo: "acme/infra", Pauses: new(ratelimit.Registry)}, "infra")
			if err != nil {
				t.Fatal(err)
			}
			p.retryDelays = []time.Duration{time.Millisecond, time.Millisecond}
			if err := p.SetStatus(context.Background(), rev1, PreviewSuccess, "ok", ""); err != nil {
				t.Errorf("SetStatus: %v", err)
			}
			if n := requests.Load(); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}

// TestPreviewerWaitsForTheReset: a status and an edit answered 429 are tried again once the
// rate limit resets (Retry-After), not after the retry delay alone, when the pause would
// refuse them unsent, and the status is posted.
func TestPreviewerWaitsForTheReset(t *testing.T) {
	t.Parallel()
	onEachForge(t, func(t *testing.T, provider string, f *forgetest.Forge) {
		var limit atomic.Bool
		f.Fail = func(h http.Header, _ *http.Request) int {
			if limit.CompareAndSwap(true, false) {
				h.Set("Retry-After", "1")
				return http.StatusTooManyRequests
			}
			return 0
		}
		p, err := NewPreviewer(Config{Provider: provider, Token: token, BaseURL: f.URL, Repo: "acme/infra", Pauses: new(ratelimit.Registry)}, "infra")
		if err != nil {
			t.Fatal(err)
		}
		p.retryDelays = []time.Duration{time.Millisecond}
		ctx := context.Background()
		limit.Store(true)
		if err := p.SetStatus(ctx, rev1, PreviewSuccess, "ok", ""); err != nil {
			t.Fatalf("status after a 429: %v", err)
		}
		id, _, err := p.CreateComment(ctx, 7, "first")
		if err != nil {
			t.Fatal(err)
		}
		limit.Store(true)
		if _, err := p.EditComment(ctx, 7, id, "second"); err != nil {
			t.Fatalf("edit after a 429: %v", err)
		}
		if st, cs := f.Statuses(), f.Comments(); len(st) != 1 || len(cs) != 1 || cs[0].Body != "second" {
			t.Errorf("statuses %+v comments %+v", st, cs)
		}
	})
}

// onEachForge runs test, in parallel, against a fake GitHub and a fake GitLab.
func onEachForge(t *testing.T, test func(t *testing.T, provider string, f *forgetest.Forge)) {
	for _, provider := range []string{ProviderGitHub, ProviderGitLab} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			f := forgetest.New(token, provider == ProviderGitLab)
			defer f.Close()
			test(t, provider, f)
		})
	}
}
