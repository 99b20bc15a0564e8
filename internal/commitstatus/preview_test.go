package commitstatus

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/commitstatus/forgetest"
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
			p, err := NewPreviewer(Config{Provider: provider, Token: token, BaseURL: base, Repo: repo}, "infra")
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
			bad, _ := NewPreviewer(Config{Provider: provider, Token: "wrong-token-value", BaseURL: base, Repo: repo}, "infra")
			if _, _, err := bad.CreateComment(ctx, 7, "x"); err == nil || strings.Contains(err.Error(), "wrong-token-value") {
				t.Fatalf("bad token: %v", err)
			}
		})
	}
}
